"""item_loop.py - what bench_torch_item.py and bench_cupy_item.py share: the
command line, the timed loop of scalar reads and the digest (the same function
as digest_bytes() in bench/digest.h)."""
import argparse
import struct
import time

N = 1 << 16


def digest(data: bytes) -> str:
    """Same function as digest_bytes() in bench/digest.h."""
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


def import_torch():
    """torch with a CUDA device, or None after a SKIP line on stderr (exit 77)."""
    import sys
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed", file=sys.stderr)
        return None
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device", file=sys.stderr)
        return None
    return torch


def parse_args(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--count", type=int, default=10000)
    ap.add_argument("--mode", choices=["native", "reference"], default="native")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.count < 1:
        ap.error("--count must be >= 1")
    return args


def run(name, args, item, bulk, sync):
    """Time args.count reads: item(k) one scalar (native), or bulk(m) the first
    m values at once, picked on the host (reference). Prints the result and
    digest lines; returns the exit status."""
    count = args.count

    def read_native(n):
        return [item(k % N) for k in range(n)]

    def read_reference(n):
        host = bulk(min(n, N))
        return [host[k % N] for k in range(n)]

    read = read_reference if args.mode == "reference" else read_native
    read(min(count, 100))  # warm-up
    sync()
    t0 = time.perf_counter()
    vals = read(count)
    sync()
    t1 = time.perf_counter()
    print("result %s %.4f count=%d mode=%s" % (name, (t1 - t0) * 1e6 / count, count, args.mode))
    print("digest: " + digest(struct.pack("<%df" % count, *vals)))
    return 0
