#!/bin/sh
# layers.sh - src/ keeps its layers (tools/check-layers): on the tree as it is,
# every include and call goes the right way; and the check is not blind: a
# back edge planted in a copy (core including a feature, a feature including
# another, tracking calling a feature, code in a settings file) makes it fail,
# naming the file.
set -u
src=${GA_SRC:-.}/src
build=${GA_BUILD:-.}/src
check=${GA_SRC:-.}/tools/check-layers
command -v nm >/dev/null 2>&1 || { echo "SKIP: no nm"; exit 77; }
sh "$check" "$src" "$build" || { echo "FAIL: the tree breaks its layers"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
plant() { # FILE LINE: a copy of src/ with LINE appended to FILE must fail, naming FILE
    rm -rf "$tmp/src" && cp -r "$src" "$tmp/src" && echo "$2" >>"$tmp/src/$1"
    out=$(sh "$check" "$tmp/src" 2>&1) && { echo "FAIL: a planted back edge in $1 passed"; exit 1; }
    echo "$out" | grep -q "^src/$1:" || { echo "FAIL: the planted edge in $1 was not named: $out"; exit 1; }
    echo "ok: caught $1 -> $2"
}
plant core/log.c '#include "features/pool/pool.h"'
plant tracking/streams.c '#include "hooks/dispatch.h"'
plant features/graphs/graphs.c '#include "features/coalesce/coalesce.h"'
plant hooks/launch.c '#include "features/kernels/kernels.h"'
# Settings files are rows that core reads: code in one, or an include of a
# feature's header from one, is caught.
plant features/pool/settings.h 'static int ga_pool_hidden;'
plant features/coalesce/settings.h '#include "features/coalesce/coalesce.h"'
# A call: an object of core that uses a feature's function.
printf 'void ga_pool_stats(void *);\nvoid ga_probe(void *s) { ga_pool_stats(s); }\n' >"$tmp/probe.c"
mkdir -p "$tmp/obj/core/.libs" "$tmp/obj/features/pool/.libs"
cp -r "$src" "$tmp/src2" && cp "$tmp/probe.c" "$tmp/src2/core/probe.c"
${CC:-cc} -c -o "$tmp/obj/core/.libs/libgpuaccel_core_la-probe.o" "$tmp/probe.c" || exit 1
cp "$build"/features/pool/.libs/libgpuaccel_core_la-pool.o "$tmp/obj/features/pool/.libs/" 2>/dev/null ||
    cp "$build"/features/pool/libgpuaccel_core_la-pool.o "$tmp/obj/features/pool/.libs/"
out=$(sh "$check" "$tmp/src2" "$tmp/obj" 2>&1) && { echo "FAIL: a planted call from core to the pool passed"; exit 1; }
echo "$out" | grep -q "calls ga_pool_stats" || { echo "FAIL: the planted call was not named: $out"; exit 1; }
echo "ok: caught a call from core to ga_pool_stats"
echo "PASS: layers"
