#!/usr/bin/env bash
# Type-checks each declaration that must not compile; fails if one compiles.
set -uo pipefail
cd "$(dirname "$0")"
modules="$(cd ../.. && swift build --show-bin-path)/Modules"
status=0
typecheck() {
    cp "$1" "/tmp/compile-check-$$.swift"
    swiftc -typecheck -swift-version 6 -I "$modules" "/tmp/compile-check-$$.swift" 2>&1
    local code=$?
    rm -f "/tmp/compile-check-$$.swift"
    return $code
}
# The control first: if it does not compile, the failures below prove nothing.
if ! control="$(typecheck MustCompile.swift.txt)"; then
    echo "FAIL MustCompile.swift.txt does not compile:"
    echo "$control" | head -n 10
    exit 1
fi
echo "ok   MustCompile.swift.txt compiles"
for file in *.swift.txt; do
    [ "$file" = MustCompile.swift.txt ] && continue
    expected="$(head -n 1 "$file" | sed 's|^// expect: ||')"
    output="$(typecheck "$file")"
    code=$?
    if [ $code -eq 0 ]; then
        echo "FAIL $file compiled, but must not"
        status=1
    elif ! grep -q -- "$expected" <<<"$output"; then
        echo "FAIL $file failed for another reason than '$expected':"
        echo "$output" | head -n 5
        status=1
    else
        echo "ok   $file does not compile ($expected)"
    fi
done
exit $status
