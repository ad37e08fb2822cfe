# cupy_check.py - a small CuPy workload (module kernels through cuModuleLoad*,
# element reads with .item()), printed results must not change.
import hashlib
import sys

import cupy as cp

if "nopool" in sys.argv:  # every allocation straight to cudaMalloc/cudaFree
    cp.cuda.set_allocator(None)

a = cp.arange(10000, dtype=cp.float32)
b = cp.sin(a) * 2 + a
items = [float(b[i].item()) for i in range(0, 10000, 101)]
k = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * x + 1", "ga_square")
c = k(b)
items.append(float(c.sum().item()))
for i in range(20):
    t = cp.full(1 << (8 + i % 10), i, dtype=cp.int32)
    items.append(int(t.sum().item()))
h = hashlib.sha256(repr(items).encode()).hexdigest()[:16]
print("result ok=1 digest=" + h)
