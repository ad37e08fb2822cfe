#!/usr/bin/env python3
"""bench_cupy_item.py - the CuPy a[i].item() loop (feature: GPUACCEL_COALESCE).

A float32 CuPy array of 65536 elements is made from seeded NumPy data and
transformed on the GPU (a * 3 + 1); then COUNT scalars a[k % 65536].item()
are read one by one.  --mode reference reads the same values with one bulk
a[:m].get() and picks them on the host.

Prints "result cupy_item <us per element> ..." and "digest: <16 hex>" over the
values read (same digest function as bench/common.h).  Exits 77 when cupy or
a CUDA device is missing.

usage: bench_cupy_item.py [--count N] [--mode native|reference] [--seed S]
"""
import argparse
import struct
import sys
import time

N = 1 << 16


def digest(data: bytes) -> str:
    """Same function as digest_bytes() in bench/common.h."""
    m = (1 << 64) - 1
    prime = 0x100000001B3
    h = 0xCBF29CE484222325
    full = len(data) - len(data) % 8
    for (w,) in struct.iter_unpack("<Q", data[:full]):
        h = ((h ^ w) * prime) & m
        h ^= h >> 29
    for b in data[full:]:
        h = ((h ^ b) * prime) & m
    h = ((h ^ len(data)) * prime) & m
    h ^= h >> 32
    return "%016x" % h


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--mode", choices=["native", "reference"], default="native")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.count < 1:
        ap.error("--count must be >= 1")
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
    count = args.count

    def read_native(n):
        return [a[k % N].item() for k in range(n)]

    def read_reference(n):
        host = a[: min(n, N)].get().tolist()
        return [host[k % N] for k in range(n)]

    read = read_reference if args.mode == "reference" else read_native
    read(min(count, 100))  # warm-up
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    vals = read(count)
    cp.cuda.Device().synchronize()
    t1 = time.perf_counter()

    print("result cupy_item %.4f count=%d mode=%s" % ((t1 - t0) * 1e6 / count, count, args.mode))
    print("digest: " + digest(struct.pack("<%df" % count, *vals)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
