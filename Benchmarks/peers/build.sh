#!/usr/bin/env bash
# Builds the peer programs prefs-bench measures beside the library, when their libraries are
# installed; prints the path of each program built, one per line ("kconfig-bench PATH",
# "gsettings-bench PATH"; the GSettings program's compiled schema is in PATH's folder, gsettings-schemas).
# Nothing is printed for a peer that is not installed (KConfig: apt-get install libkf5config-dev;
# GSettings: apt-get install libglib2.0-dev, and dconf-service dbus for its usual backend).
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
# The GSettings program and its schema; a failure here leaves out the GSettings rows only.
build_gsettings() {
    local binary="$out/gsettings-bench" schemas="$out/gsettings-schemas"
    if [ ! -x "$binary" ] || [ "$here/gsettings-bench.c" -nt "$binary" ]; then
        # shellcheck disable=SC2046
        gcc -O2 -std=gnu11 "$here/gsettings-bench.c" -o "$binary" $(pkg-config --cflags --libs gio-2.0) >&2 || return 1
    fi
    # The schema, compiled beside the program (prefs-bench passes the folder as GSETTINGS_SCHEMA_DIR).
    if [ ! -f "$schemas/gschemas.compiled" ] || [ "$here/build.sh" -nt "$schemas/gschemas.compiled" ]; then
        mkdir -p "$schemas"
        {
            echo '<schemalist>'
            echo '  <schema id="org.prefsbench.Burst" path="/org/prefsbench/burst/">'
            for k in 0 1 2 3 4 5 6 7 8 9 10; do echo "    <key name=\"k$k\" type=\"i\"><default>0</default></key>"; done
            echo '  </schema>'
            echo '</schemalist>'
        } >"$schemas/org.prefsbench.Burst.gschema.xml"
        glib-compile-schemas "$schemas" >&2 || return 1
    fi
    echo "gsettings-bench $binary"
}
if command -v gcc >/dev/null && pkg-config --exists gio-2.0 2>/dev/null && command -v glib-compile-schemas >/dev/null; then
    build_gsettings || echo "build.sh: the GSettings program did not build; no GSettings rows" >&2
fi
