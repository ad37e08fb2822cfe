#!/bin/sh
# autogen.sh - install what the build needs on Debian (when allowed), then
# generate configure. Usage: ./autogen.sh
set -e
cd "$(dirname "$0")"

missing=""
command -v autoreconf >/dev/null 2>&1 || missing="$missing autoconf"
command -v automake >/dev/null 2>&1 || missing="$missing automake"
command -v libtoolize >/dev/null 2>&1 || missing="$missing libtool"
[ -f /usr/include/uthash.h ] || missing="$missing uthash-dev"
command -v bats >/dev/null 2>&1 || missing="$missing bats"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"

if [ -n "$missing" ]; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
        echo "autogen.sh: installing:$missing"
        apt-get install -y $missing >/dev/null 2>&1 ||
            { apt-get update >/dev/null 2>&1 && apt-get install -y $missing >/dev/null; }
    else
        echo "autogen.sh: missing:$missing" >&2
        echo "autogen.sh: run: sudo apt-get install -y$missing" >&2
        exit 1
    fi
fi

mkdir -p build-aux m4
# tap-driver.sh runs the Bats tests; automake ships it but does not copy it.
automake_dir=$(automake --print-libdir)
cp -f "$automake_dir/tap-driver.sh" build-aux/tap-driver.sh
autoreconf -fi
