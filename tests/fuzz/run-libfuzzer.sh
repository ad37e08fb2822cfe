#!/bin/sh
# run-libfuzzer.sh SRCDIR SECONDS - build each harness with clang's libFuzzer
# and AddressSanitizer and run it for SECONDS on its corpus (new inputs it
# finds are added to the corpus; commit the interesting ones).
set -eu
src=$1 secs=$2
command -v clang >/dev/null || { echo "fuzz: clang not found: skipped"; exit 0; }
out=$(mktemp -d)
inc="-I$src/src -I$src/include $(echo "${CUDA_CPPFLAGS:--I/usr/local/cuda/include}")"
# The library's sources without its exports (doors.c would interpose dlsym in
# the fuzzer itself, wrappers.c the driver API): the parsers and what they use.
core=$(ls "$src"/src/*.c | grep -v -e /wrappers.c -e /doors.c)
blob=kernels_blob.c
[ -f "$blob" ] || blob="$src/kernels_blob.c"
for h in config table tune; do
    clang -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 $inc -DPACKAGE_VERSION='"fuzz"' \
        -o "$out/fuzz_$h" "$src/tests/fuzz/fuzz_$h.c" $core "$blob"
    echo "fuzz_$h: $secs s on tests/fuzz/corpus/$h"
    "$out/fuzz_$h" -max_total_time="$secs" -print_final_stats=1 "$src/tests/fuzz/corpus/$h" 2>&1 |
        grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|INFO: seed corpus)|DONE|Done|ERROR'
done
rm -rf "$out"
