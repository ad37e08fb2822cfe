#!/usr/bin/env python3
"""bench_cupy_item.py - the CuPy a[i].item() loop (feature: GPUACCEL_COALESCE).

A float32 CuPy array of 65536 elements is made from seeded NumPy data and
transformed on the GPU (a * 3 + 1); then COUNT scalars a[k % 65536].item()
are read one by one.  --mode reference reads the same values with one bulk
a[:m].get() and picks them on the host.

Prints "result cupy_item <us per element> ..." and "digest: <16 hex>" over the
values read (same digest function as bench/digest.h).  Exits 77 when cupy or
a CUDA device is missing.

usage: bench_cupy_item.py [--count N] [--mode native|reference] [--seed S]
"""
import sys

from item_loop import N, parse_args, run


def main() -> int:
    args = parse_args(__doc__.splitlines()[0])
    try:
        import cupy as cp
        import numpy as np
    except ImportError:
        print("SKIP: cupy is not installed", file=sys.stderr)
        return 77
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no device")
    except Exception:  # cupy raises CUDARuntimeError when there is no driver/device
        print("SKIP: no CUDA device", file=sys.stderr)
        return 77

    host_init = np.random.default_rng(args.seed).random(N, dtype=np.float32)
    a = cp.asarray(host_init) * cp.float32(3) + cp.float32(1)
    cp.cuda.Device().synchronize()
    return run("cupy_item", args, lambda k: a[k].item(), lambda m: a[:m].get().tolist(),
               cp.cuda.Device().synchronize)


if __name__ == "__main__":
    sys.exit(main())
