#!/bin/sh
# Replay the kernels-table fuzz corpus (tests/fuzz/corpus/table).
exec "$GA_BUILD/tests/fuzz/fuzz_table" "$GA_SRC/tests/fuzz/corpus/table"
