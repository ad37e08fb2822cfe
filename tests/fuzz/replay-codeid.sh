#!/bin/sh
# Replay the code-identity fuzz corpus (tests/fuzz/corpus/codeid): images nvcc
# built from tests/unit/tracking/codeid/{base,plus}.cu (a fatbin with and
# without compression, with every entry compressed, a cubin, PTX), and what the
# fuzzer found.
exec "$GA_BUILD/tests/fuzz/fuzz_codeid" "$GA_SRC/tests/fuzz/corpus/codeid"
