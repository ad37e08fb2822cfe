#!/bin/sh
# python.sh (GPU) - PyTorch and CuPy under the library: the same results, and
# the library saw their allocations, copies and launches.
. "${GA_SRC:-.}/tests/gpu/common.sh"
require_gpu python
PY=${PYTHON:-python3}
ran=0
for lib in torch cupy; do
    if ! err=$($PY -c "import $lib" 2>&1); then
        echo "SKIP (part): $PY cannot import $lib: $(echo "$err" | tail -1)"
        continue
    fi
    compare_runs $PY "$GA_SRC/tests/gpu/${lib}_check.py"
    expect_ok result
    copies=$(sum_calls 'cuMemcpy[A-Za-z0-9_]*')
    launches=$(sum_calls 'cuLaunchKernel(Ex)?(_ptsz)?')
    allocs=$(sum_calls 'cuMemAlloc[A-Za-z0-9_]*')
    echo "   copies=$copies launches=$launches allocations=$allocs"
    [ "$copies" -ge 10 ] && [ "$launches" -ge 10 ] && [ "$allocs" -ge 1 ] ||
        fail "$lib: the library did not see the program's work"
    ran=$((ran + 1))
done
[ "$ran" -gt 0 ] || { echo "SKIP: $PY imports neither torch nor cupy"; exit 77; }
echo "PASS: python"
