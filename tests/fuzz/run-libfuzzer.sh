#!/bin/sh
# run-libfuzzer.sh [--scratch] SRCDIR SECONDS - build each harness with clang's
# libFuzzer, AddressSanitizer and UBSan and run it for SECONDS on its corpus.
# `make fuzz` adds what it finds to tests/fuzz/corpus (commit the interesting
# inputs); with --scratch (make check) the corpus is copied first and the tree
# is left alone. Exit status 1 when a harness crashes or a sanitizer reports
# (the input is kept and named), 77 when clang cannot build a libFuzzer target.
set -u
scratch=0
[ "${1:-}" = --scratch ] && { scratch=1; shift; }
src=$1 secs=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if ! command -v clang >/dev/null; then
    echo "SKIP: fuzzing needs clang with libFuzzer, and clang is not installed"
    exit 77
fi
if ! printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' |
    clang -fsanitize=fuzzer -x c - -o "$out/probe" 2>"$out/probe.err"; then
    echo "SKIP: this clang cannot build a libFuzzer target (-fsanitize=fuzzer): $(tail -1 "$out/probe.err")"
    exit 77
fi
inc="${ENTRIES_CPPFLAGS:-} -I$src/src -I$src/include $(echo "${CUDA_CPPFLAGS:--I/usr/local/cuda/include}")"
# The library's sources without its exports (doors.c would interpose dlsym in
# the fuzzer itself, wrappers.c the driver API): the parsers and what they use.
core=$(find "$src"/src -name '*.c' | grep -v -e /wrappers.c -e /doors.c)
# The generated sources of the build: the kernels and the gather kernel's PTX.
blob=""
for g in kernels_blob.c gather_ptx.c; do
    if [ -f "$g" ]; then blob="$blob $g"; else blob="$blob $src/$g"; fi
done
rc=0
for h in config table tune codeid; do
    corpus="$src/tests/fuzz/corpus/$h"
    if [ $scratch = 1 ]; then
        mkdir -p "$out/corpus-$h" && cp "$corpus"/* "$out/corpus-$h"/ && corpus="$out/corpus-$h"
    fi
    if ! clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -std=gnu11 $inc -DPACKAGE_VERSION='"fuzz"' -o "$out/fuzz_$h" "$src/tests/fuzz/fuzz_$h.c" \
        $core $blob; then
        echo "fuzz_$h: build failed"; rc=1; continue
    fi
    echo "fuzz_$h: $secs s on $corpus"
    "$out/fuzz_$h" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$out/$h-" \
        "$corpus" >"$out/$h.log" 2>&1
    st=$?
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|INFO: seed corpus)|DONE|Done|ERROR' \
        "$out/$h.log"
    grep -o 'cov: [0-9]* ft: [0-9]*' "$out/$h.log" | tail -1
    if [ $st -ne 0 ]; then
        echo "fuzz_$h: exit $st, a finding:"; tail -30 "$out/$h.log"
        for a in "$out/$h"-*; do [ -f "$a" ] && { echo "input ($a):"; od -c "$a" | head -20; }; done
        rc=1
    fi
done
exit $rc
