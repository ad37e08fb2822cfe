#!/bin/sh
# Replay the GPUACCEL_* fuzz corpus (tests/fuzz/corpus/config).
exec "$GA_BUILD/tests/fuzz/fuzz_config" "$GA_SRC/tests/fuzz/corpus/config"
