#!/bin/sh
# carry-samples.sh - copy the few NVIDIA cuda-samples that tests/gpu/samples.sh
# builds into .carry/cuda-samples, for a GPU run (the GPU machine cannot reach
# the network). Their code is NVIDIA's (BSD-3-Clause): carried for a run, never
# committed here (.carry is ignored).
#
# usage: tools/carry-samples.sh CUDA_SAMPLES_GIT_DIR [DEST]
#   e.g. git clone https://github.com/NVIDIA/cuda-samples /tmp/cs &&
#        tools/carry-samples.sh /tmp/cs
set -eu
src=${1:?usage: tools/carry-samples.sh CUDA_SAMPLES_GIT_DIR [DEST]}
dest=${2:-$(cd "$(dirname "$0")/.." && pwd)/.carry/cuda-samples}
samples="vectorAdd matrixMul simpleStreams asyncAPI simpleMultiCopy"
rm -rf "$dest"
mkdir -p "$dest"
paths="Common/helper_cuda.h Common/helper_functions.h Common/helper_string.h \
Common/helper_timer.h Common/helper_image.h Common/exception.h LICENSE"
for s in $samples; do paths="$paths Samples/0_Introduction/$s/$s.cu"; done
# shellcheck disable=SC2086
git --git-dir="$src" archive --format=tar HEAD $paths 2>/dev/null | tar -x -C "$dest" ||
    git -C "$src" archive --format=tar HEAD $paths | tar -x -C "$dest"
git --git-dir="$src" rev-parse HEAD >"$dest/COMMIT" 2>/dev/null || git -C "$src" rev-parse HEAD >"$dest/COMMIT"
echo "$samples" >"$dest/SAMPLES"
echo "carry-samples: $(wc -w <"$dest/SAMPLES") samples at $(cut -c1-12 "$dest/COMMIT") in $dest"
