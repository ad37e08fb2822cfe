#!/usr/bin/env python3
"""bench_torch_item.py - the PyTorch .item() loop (feature: GPUACCEL_COALESCE).

A float32 CUDA tensor of 65536 elements is made from seeded CPU data and
transformed on the GPU (x * 3 + 1); then COUNT scalars x[k % 65536].item()
are read one by one.  --mode reference reads the same values with one bulk
x[:m].cpu() and picks them on the host.

Prints "result torch_item <us per element> ..." and "digest: <16 hex>" over the
values read (same digest function as bench/common.h).  Exits 77 when torch or
a CUDA device is missing.

usage: bench_torch_item.py [--count N] [--mode native|reference] [--seed S]
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
        import torch
    except ImportError:
        print("SKIP: torch is not installed", file=sys.stderr)
        return 77
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device", file=sys.stderr)
        return 77

    gen = torch.Generator().manual_seed(args.seed)
    x = torch.rand(N, generator=gen, dtype=torch.float32).to("cuda") * 3 + 1
    torch.cuda.synchronize()
    count = args.count

    def read_native(n):
        return [x[k % N].item() for k in range(n)]

    def read_reference(n):
        host = x[: min(n, N)].cpu().tolist()
        return [host[k % N] for k in range(n)]

    read = read_reference if args.mode == "reference" else read_native
    read(min(count, 100))  # warm-up
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    vals = read(count)
    torch.cuda.synchronize()
    t1 = time.perf_counter()

    print("result torch_item %.4f count=%d mode=%s" % ((t1 - t0) * 1e6 / count, count, args.mode))
    print("digest: " + digest(struct.pack("<%df" % count, *vals)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
