#!/bin/sh
# build.sh - compile every bench/*.cu into one program each in DIR, in
# parallel (one nvcc per CPU), skipping a program newer than its source and
# every header it may include (bench/*.h, tests/progs/linked.h): a second
# call on a warm machine rebuilds nothing.
#
# usage: bench/build.sh --bin DIR
#   NVCC       compiler (default: nvcc from PATH, else /usr/local/cuda/bin/nvcc)
#   NVCCFLAGS  flags (default: -O2 -arch=sm_90 -Xcompiler -Wall); the default
#              nvcc build links cudart statically, as the suite expects.
#              Changing them does not make the programs out of date: remove DIR.
#   JOBS       compilers run at once (default: the CPUs)
set -eu

usage() { echo "usage: $0 --bin DIR" >&2; exit 2; }
[ $# -eq 2 ] && [ "$1" = "--bin" ] || usage
bindir=$2

if [ -z "${NVCC:-}" ]; then
    if command -v nvcc >/dev/null 2>&1; then NVCC=nvcc; else NVCC=/usr/local/cuda/bin/nvcc; fi
fi
NVCCFLAGS=${NVCCFLAGS:--O2 -arch=sm_90 -Xcompiler -Wall}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
src=$(cd "$(dirname "$0")" && pwd)
headers="$src/*.h $src/../tests/progs/linked.h"

mkdir -p "$bindir"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
running=0
for cu in "$src"/*.cu; do
    name=$(basename "$cu" .cu)
    out="$bindir/$name"
    if [ -f "$out" ]; then
        # shellcheck disable=SC2086  # headers is a glob list
        stale=$(find "$cu" $headers -newer "$out" 2>/dev/null | head -1)
        [ -z "$stale" ] && { echo "$out: up to date"; continue; }
    fi
    libs=""
    case $cu in *_driver.cu) libs=-lcuda ;; esac # driver API only, no cudart calls
    echo "$NVCC $NVCCFLAGS -o $out $cu $libs"
    # shellcheck disable=SC2086  # NVCCFLAGS and libs are word lists
    ( $NVCC $NVCCFLAGS -o "$out" "$cu" $libs >"$logs/$name.log" 2>&1 ||
        { rm -f "$out"; echo "$cu" >"$logs/$name.failed"; } ) &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait
        running=0
    fi
done
wait
failed=0
for log in "$logs"/*.log; do
    [ -f "$log" ] || continue
    [ -s "$log" ] && cat "$log" >&2
    [ -f "${log%.log}.failed" ] && failed=1
done
[ "$failed" -eq 0 ] || { echo "build.sh: some programs failed to build" >&2; exit 1; }
