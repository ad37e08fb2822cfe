#!/bin/sh
# tune.sh (GPU) - the tuner on tune_prog.cu: the bounds-checked and grid-stride
# kernels get verified entries, the shared-memory and per-block partial-sum
# kernels are rejected with their reasons; the program's output is unchanged
# under the tuner and with the table it wrote.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu tune
T="$GA_BUILD/tests/gpu/tune_prog"
require_built "$T"
table="$tmp/tune.table"
want=$("$T") || fail "native run failed"
got=$("$GA_BUILD/tools/gpuaccel" tune --lib "$GA_LIB" -o "$table" -- "$T" 2>"$tmp/tune.err") ||
    { cat "$tmp/tune.err"; fail "tuner run failed"; }
cat "$table"
[ "$got" = "$want" ] || fail "the tuner changed the program's output: $got vs $want"
grep -q '^_Z7boundedPKjPjj sm_[0-9]* .* threads$' "$table" || fail "bounded: no verified entry"
grep -q '^_Z6stridePKjPjj sm_[0-9]* .* \(stride\|threads\)$' "$table" || fail "stride: no verified entry"
grep -q '^# no: _Z6sharedPKjPjj .*uses shared memory' "$table" || fail "shared: not rejected"
grep -q '^# no: _Z7partialPKjPjj .*gave other results' "$table" || fail "partial: not rejected"
SHIM_ENV="GPUACCEL_TUNE=1 GPUACCEL_TUNE_TABLE=$table"
compare_runs "$T"
echo "$SHIM_ERR" | grep -q 'tune: rewritten=[1-9]' || fail "nothing was rewritten"
echo "PASS: tune"
