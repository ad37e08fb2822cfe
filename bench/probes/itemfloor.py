#!/usr/bin/env python3
"""itemfloor.py - what a framework's scalar read costs apart from the device:
per iteration, the indexing alone (x[k], a view), the whole x[k].item() on
the GPU array, and the same on a host array (PyTorch's CPU tensor, NumPy's
array), so that a library serving the read from host memory can be held
against the floor the framework itself sets. Medians of --reps passes of
--count iterations after a warm-up. Run it natively and under the library.

usage: itemfloor.py torch|cupy [--count N] [--reps R]
"""
import argparse
import statistics
import sys
import time


def per_iter(fn, count, reps):
    fn(min(count, 100))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn(count)
        times.append((time.perf_counter() - t0) * 1e6 / count)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("framework", choices=["torch", "cupy"])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    n = 1 << 16
    if a.framework == "torch":
        import torch
        x = torch.rand(n, dtype=torch.float32).to("cuda") * 3 + 1
        h = x.cpu()
        torch.cuda.synchronize()
    else:
        import cupy
        import numpy
        x = cupy.random.rand(n, dtype=cupy.float32) * 3 + 1
        h = cupy.asnumpy(x)
        cupy.cuda.Device().synchronize()
    rows = {
        "index x[k]": lambda c: [x[k % n] for k in range(c)],
        "x[k].item()": lambda c: [x[k % n].item() for k in range(c)],
        "host h[k].item()": lambda c: [h[k % n].item() for k in range(c)],
    }
    for name, fn in rows.items():
        print("itemfloor %s %-18s %7.3f us" % (a.framework, name, per_iter(fn, a.count, a.reps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
