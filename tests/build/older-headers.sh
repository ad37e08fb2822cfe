#!/bin/sh
# older-headers.sh - the library builds against CUDA 12.x headers: for each
# release below, the installed cuda.h is cut back to what that release declares
# (older_cuda_h.py), tools/gen-entries.py makes the entry table for it, and
# every source of the library and the fake driver compiles against the pair.
# The tables hold what those headers declare plus src/core/compat.h, and a
# table made for other headers is refused at compile time. (Cut back from 13.0,
# 12.6 gives the table the real CUDA 12.6 cuda.h gives, but for
# cuMemBatchDecompressAsync, which the 12.6 driver has and its header omits.)
set -u
src=${GA_SRC:-.}
cc=${GA_CC:-cc}
inc=$(echo "${CUDA_CPPFLAGS:--I/usr/local/cuda/include}" | sed -n 's/^-I\([^ ]*\).*/\1/p')
py=${PYTHON3:-python3}
command -v "$py" >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }
[ -f "$inc/cudaTypedefs.h" ] || { echo "SKIP: no cudaTypedefs.h in $inc"; exit 77; }
have=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\)$/\1/p' "$inc/cuda.h")
[ -n "$have" ] || { echo "FAIL: no CUDA_VERSION in $inc/cuda.h (beside its cudaTypedefs.h)"; exit 1; }
[ "$have" -ge 13000 ] || { echo "SKIP: the installed cuda.h ($have) is not newer than 12.x"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
sources=$(find "$src/src" -name '*.c' | sort)
jobs=$(nproc 2>/dev/null || echo 4)

in_table() { grep -q "^GA_[A-Z]*($2," "$tmp/$1/gen/core/entries.def"; }

for v in 12000 12080; do
    d=$tmp/$v
    "$py" "$src/tests/build/older_cuda_h.py" "$inc" $v "$d/inc" || fail "$v: cuda.h not made"
    mkdir -p "$d/gen/core"
    "$py" "$src/tools/gen-entries.py" "$d/inc" "$src/src" >"$d/gen/core/entries.def" ||
        fail "$v: no entry table"
    grep -qx "#define GA_ENTRIES_CUDA_VERSION $v" "$d/gen/core/entries.def" || fail "$v: version"
    # compat.h supplies what the library calls; the rest is the headers' own.
    for name in cuFuncGetName cuKernelGetParamInfo cuEventElapsedTime_v2 cuCtxSynchronize_v2; do
        in_table $v $name || fail "$v: $name missing from the table"
    done
    ! in_table $v cuMemGetMemPool || fail "$v: a 13.0 entry point in the table"
    if [ $v -lt 12030 ]; then ! in_table $v cuStreamBeginCaptureToGraph; else
        in_table $v cuStreamBeginCaptureToGraph; fi || fail "$v: cuStreamBeginCaptureToGraph"
    if [ $v -lt 12080 ]; then ! in_table $v cuMemcpyBatchAsync; else
        in_table $v cuMemcpyBatchAsync; fi || fail "$v: cuMemcpyBatchAsync"
    flags="-std=gnu11 -fsyntax-only -Wall -Werror=implicit-function-declaration -DPACKAGE_VERSION=\"0\" -I$d/gen \
        -I$d/inc ${UTHASH_CPPFLAGS:-} -I$src/src -I$src/include"
    # shellcheck disable=SC2086
    printf '%s\n' $sources "$src/tests/fake/fakecuda.c" |
        xargs -P "$jobs" -I{} sh -c '$0 $1 "{}" 2>&1 || echo "FAILED: {}"' "$cc" "$flags" >"$d/log"
    ! grep -q '^FAILED: ' "$d/log" || { cat "$d/log"; fail "$v: a source does not compile"; }
    echo "ok: CUDA_VERSION $v: table of $(grep -c '^GA_' "$d/gen/core/entries.def") entries, every source compiles"
done
# The committed table with 12.0 headers: refused, naming the cause.
# shellcheck disable=SC2086
$cc -std=gnu11 -fsyntax-only -I"$tmp/12000/inc" -I"$src/src" "$src/src/core/entry.c" \
    >"$tmp/log" 2>&1 && fail "the committed table compiled against 12.0 headers"
grep -q "entries.def was generated from another cuda.h" "$tmp/log" || { cat "$tmp/log"; fail "no reason given"; }
echo "ok: a table for other headers is refused"
echo "PASS: older headers"
