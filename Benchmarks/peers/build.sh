#!/usr/bin/env bash
# Builds the peer programs prefs-bench measures beside the library, when their libraries are
# installed; prints the path of each program built, one per line ("kconfig-bench PATH").
# Nothing is printed for a peer that is not installed (KConfig: apt-get install libkf5config-dev).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../../.build/peers}"
mkdir -p "$out"
if [ -f /usr/include/KF5/KConfigCore/KConfig ] && command -v g++ >/dev/null && pkg-config --exists Qt5Core 2>/dev/null; then
    binary="$out/kconfig-bench"
    if [ ! -x "$binary" ] || [ "$here/kconfig-bench.cpp" -nt "$binary" ]; then
        # shellcheck disable=SC2046
        g++ -O2 -std=c++17 -fPIC "$here/kconfig-bench.cpp" -o "$binary" \
            -I/usr/include/KF5/KConfigCore $(pkg-config --cflags --libs Qt5Core) -lKF5ConfigCore >&2
    fi
    echo "kconfig-bench $binary"
fi
