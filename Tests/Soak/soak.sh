#!/usr/bin/env bash
# Soak: three library processes, each writing its own set's "n" (1, 2, 3, …) and updating a shared
# counter, each observing all three sets, beside one plain UserDefaults process writing the same
# suite; prints each library process's writes, the values it saw go back (per set) and the times
# its own key read lower than its last returned write. Every figure but the writes must be 0.
#
#   Tests/Soak/soak.sh [SECONDS] [--no-plain]     (builds the test helper first)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds="${1:-40}"
swift build --product prefs-test-helper >/dev/null
helper="$(swift build --show-bin-path)/prefs-test-helper"
export XDG_CONFIG_HOME="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$XDG_CONFIG_HOME"' EXIT
suite="Soak-$$"
plain=""
if [ "${2:-}" != "--no-plain" ]; then
    # Rounds of 50 synchronised plain writes, a new process each round (as other programs come and go).
    (trap 'exit 0' TERM; for round in $(seq 0 100000); do "$helper" plain-write-keys "$suite" sync $((round % 6 * 50)) 50 >/dev/null 2>&1; sleep 0.05; done) &
    plain=$!
fi
pids=()
for root in A B C; do
    others=$(printf '%s\n' A B C | grep -v "$root" | tr '\n' ' ')
    # shellcheck disable=SC2086
    "$helper" soak "$suite" "$root" "$seconds" $others >"$XDG_CONFIG_HOME/$root.out" 2>&1 &
    pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
[ -n "$plain" ] && kill "$plain" 2>/dev/null || true
for root in A B C; do printf '%s: %s\n' "$root" "$(cat "$XDG_CONFIG_HOME/$root.out")"; done
exit $status
