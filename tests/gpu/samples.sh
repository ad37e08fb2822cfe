#!/bin/sh
# samples.sh (GPU) - programs from NVIDIA's public cuda-samples, built here from
# a carried copy (tools/carry-samples.sh; never committed), run natively and
# under the library with every feature on: same exit status and the same
# PASS/FAIL lines (their other output holds timings). Prints the time ratio.
# GA_CUDA_SAMPLES: the carried directory (tools/gpu-suite sets it).
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu samples
S=${GA_CUDA_SAMPLES:-}
if [ -z "$S" ] || [ ! -f "$S/SAMPLES" ]; then
    echo "SKIP: no CUDA samples carried (GA_CUDA_SAMPLES; see tools/carry-samples.sh)"
    exit 77
fi
[ -n "${NVCC:-}" ] || { echo "SKIP: built without nvcc"; exit 77; }
ALL="GPUACCEL_POOL=1 GPUACCEL_COALESCE=1 GPUACCEL_GRAPHS=1 GPUACCEL_KERNELS=1"
echo "cuda-samples $(cut -c1-12 "$S/COMMIT")"
printf '%-18s %-7s %10s %10s %8s\n' sample result native_s library_s speedup
failed=0
for s in $(cat "$S/SAMPLES"); do
    if ! $NVCC -O2 -I"$S/Common" -o "$tmp/$s" "$S/Samples/0_Introduction/$s/$s.cu" \
        >"$tmp/$s.build" 2>&1; then
        tail -5 "$tmp/$s.build"
        fail "building $s"
    fi
    t0=$(date +%s.%N)
    env -u LD_PRELOAD "$tmp/$s" >"$tmp/n.out" 2>&1
    nrc=$?
    t1=$(date +%s.%N)
    # shellcheck disable=SC2086
    env $ALL LD_PRELOAD="$GA_LIB" "$tmp/$s" >"$tmp/l.out" 2>&1
    lrc=$?
    t2=$(date +%s.%N)
    n=$(grep -E 'PASS|FAIL|Result' "$tmp/n.out")
    l=$(grep -E 'PASS|FAIL|Result' "$tmp/l.out")
    res=same
    if [ $nrc != $lrc ] || [ "$n" != "$l" ]; then
        res=DIFFER
        failed=1
        echo "   native exit $nrc: $n"
        echo "   library exit $lrc: $l"
        tail -5 "$tmp/l.out"
    fi
    awk -v n="$s" -v r="$res" -v a="$t0" -v b="$t1" -v c="$t2" \
        'BEGIN {printf "%-18s %-7s %10.3f %10.3f %7.2fx\n", n, r, b - a, c - b, (b - a) / (c - b)}'
done
[ $failed = 0 ] || fail "a sample behaved differently under the library"
echo "PASS: samples"
