#!/bin/sh
# fuzz-bounded.sh - make check runs libFuzzer on each parser (GPUACCEL_*
# values, the kernels table, the tune table, the images whose kernels get code
# identities) for GA_FUZZ_SECONDS each (default 10) on a copy of the committed
# corpus; SKIP where clang has no libFuzzer.
exec sh "$GA_SRC/tests/fuzz/run-libfuzzer.sh" --scratch "$GA_SRC" "${GA_FUZZ_SECONDS:-10}"
