#!/bin/sh
# build.sh - compile every bench/*.cu into one program each in DIR.
#
# usage: bench/build.sh --bin DIR
#   NVCC       compiler (default: nvcc from PATH, else /usr/local/cuda/bin/nvcc)
#   NVCCFLAGS  flags (default: -O2 -arch=sm_90 -Xcompiler -Wall); the default
#              nvcc build links cudart statically, as the suite expects.
set -eu

usage() { echo "usage: $0 --bin DIR" >&2; exit 2; }
[ $# -eq 2 ] && [ "$1" = "--bin" ] || usage
bindir=$2

if [ -z "${NVCC:-}" ]; then
    if command -v nvcc >/dev/null 2>&1; then NVCC=nvcc; else NVCC=/usr/local/cuda/bin/nvcc; fi
fi
NVCCFLAGS=${NVCCFLAGS:--O2 -arch=sm_90 -Xcompiler -Wall}
src=$(cd "$(dirname "$0")" && pwd)

mkdir -p "$bindir"
for cu in "$src"/*.cu; do
    out="$bindir/$(basename "$cu" .cu)"
    libs=""
    case $cu in *_driver.cu) libs=-lcuda ;; esac # driver API only, no cudart calls
    echo "$NVCC $NVCCFLAGS -o $out $cu $libs"
    # shellcheck disable=SC2086  # NVCCFLAGS and libs are word lists
    $NVCC $NVCCFLAGS -o "$out" "$cu" $libs
done
