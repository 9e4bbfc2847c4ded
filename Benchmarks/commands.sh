#!/usr/bin/env bash
# Whole commands, timed as a user runs them, beside dconf's and KConfig's command-line tools:
# write one value, read one value, and the start-up floor. Every command is started from this
# shell (the same fork and exec for each), the commands interleaved round by round, and the
# median of the rounds printed per command with its ratio to the peer's.
#
#   Benchmarks/commands.sh [ROUNDS]      (default 41; the harness as the README installs it on
#                                          Linux: a static executable, built here when missing)
#   PREFS_HARNESS_BEFORE=/path/to/an/older/prefs-harness Benchmarks/commands.sh
#                                        (the same commands of an older build too, in the same
#                                          rounds, for a before-and-after in one run)
#
# The peers: `dconf write` / `dconf read` (under a session bus of their own: dconf-service
# writes the database) and `kwriteconfig5` / `kreadconfig5`; a peer that is not installed gives
# no row. Everything runs in a throwaway XDG_CONFIG_HOME and XDG_RUNTIME_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-41}"
harness="${PREFS_HARNESS:-$PWD/.build-static/release/prefs-harness}"
if [ ! -x "$harness" ]; then
    swift build -c release -Xswiftc -static-executable --product prefs-harness --scratch-path .build-static >&2
fi
before="${PREFS_HARNESS_BEFORE:-}"
if [ -z "${PREFS_COMMANDS_BUS:-}" ] && command -v dbus-run-session >/dev/null && command -v dconf >/dev/null; then
    work="$(mktemp -d)"
    mkdir -m 700 "$work/config" "$work/run"
    PREFS_COMMANDS_BUS=1 XDG_CONFIG_HOME="$work/config" XDG_RUNTIME_DIR="$work/run" PREFS_HARNESS="$harness" \
        PREFS_HARNESS_BEFORE="$before" dbus-run-session -- "$0" "$rounds" 2> >(grep -v '^dbus-daemon' >&2)
    status=$?
    rm -rf "$work"
    exit $status
fi
if [ -z "${PREFS_COMMANDS_BUS:-}" ]; then
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    export XDG_CONFIG_HOME="$work"
fi
export GSETTINGS_BACKEND=dconf
config="$XDG_CONFIG_HOME"

# A program's set with a schema file, as its program leaves it: AppPrefs in the suite MyApp.
schema="$("$harness" --suite MyApp --key AppPrefs schema-file)"
mkdir -p "$(dirname "$schema")"
cat >"$schema" <<JSON
{ "format": 1, "root": "AppPrefs", "class": "AppPrefs", "schemaVersion": 0,
  "keys": { "Volume": { "type": "Int", "kind": "integer", "default": 5, "range": { "min": 0, "max": 11 } },
            "Theme": { "type": "Theme", "kind": "string", "default": "system", "choices": ["system", "light", "dark"] },
            "Muted": { "type": "Bool", "kind": "boolean", "default": false } } }
JSON
"$harness" --suite MyApp --key AppPrefs set Volume 5 >/dev/null
"$harness" defaults write MyApp SomeKey -int 5
kfile="$config/benchrc"

names=()
commands=()
add() { names+=("$1"); commands+=("$2"); }
# Values alternate between rounds, so every write changes what is stored.
add "prefs-harness defaults write" '"$harness" defaults write MyApp SomeKey -int $value'
add "prefs-harness set" '"$harness" --suite MyApp --key AppPrefs set Volume $value'
command -v dconf >/dev/null && [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] && add "dconf write" 'dconf write /bench/volume $value'
command -v kwriteconfig5 >/dev/null && add "kwriteconfig5" 'kwriteconfig5 --file "$kfile" --group AppPrefs --key Volume $value'
add "prefs-harness defaults read" '"$harness" defaults read MyApp SomeKey'
add "prefs-harness get" '"$harness" --suite MyApp --key AppPrefs get Volume'
command -v dconf >/dev/null && [ -n "${DBUS_SESSION_BUS_ADDRESS:-}" ] && add "dconf read" 'dconf read /bench/volume'
command -v kreadconfig5 >/dev/null && add "kreadconfig5" 'kreadconfig5 --file "$kfile" --group AppPrefs --key Volume'
add "prefs-harness --version" '"$harness" --version'
if [ -n "$before" ]; then
    add "before: defaults write" '"$before" defaults write MyApp SomeKey -int $value'
    add "before: set" '"$before" --suite MyApp --key AppPrefs set Volume $value'
    add "before: defaults read" '"$before" defaults read MyApp SomeKey'
    add "before: get" '"$before" --suite MyApp --key AppPrefs get Volume'
    add "before: --version" '"$before" --version'
fi

declare -A samples
for ((round = -2; round < rounds; round++)); do  # two rounds of warm-up, not counted
    value=$((round % 2 == 0 ? 6 : 7))
    for index in "${!commands[@]}"; do
        start=$EPOCHREALTIME
        eval "${commands[$index]}" >/dev/null
        end=$EPOCHREALTIME
        ((round < 0)) && continue
        samples[$index]+="$(( (${end/./} - ${start/./}) )) "
    done
done

median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) / 1000 }'; }
declare -A ms
for index in "${!commands[@]}"; do ms[${names[$index]}]="$(median <<<"${samples[$index]}")"; done
ratio() { [ -n "${ms[$2]:-}" ] && awk -v a="${ms[$1]}" -v b="${ms[$2]}" 'BEGIN { printf "%.2f× %s", a / b, "'"$2"'" }'; }
echo "whole commands: medians of $rounds interleaved rounds, ms ($harness${before:+; before: $before})"
for name in "${names[@]}"; do
    case "$name" in
        *write|*set|kwriteconfig5) peer="dconf write" ;;
        *read|*get|kreadconfig5) peer="dconf read" ;;
        *version) peer="" ;;
        *) peer="" ;;
    esac
    printf '%-30s %8s ms   %s\n' "$name" "${ms[$name]}" "$([ -n "$peer" ] && [ "$name" != "$peer" ] && ratio "$name" "$peer")"
done
