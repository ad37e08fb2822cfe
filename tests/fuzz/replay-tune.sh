#!/bin/sh
# Replay the tune-table fuzz corpus (tests/fuzz/corpus/tune).
exec "$GA_BUILD/tests/fuzz/fuzz_tune" "$GA_SRC/tests/fuzz/corpus/tune"
