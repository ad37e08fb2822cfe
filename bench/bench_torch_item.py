#!/usr/bin/env python3
"""bench_torch_item.py - the PyTorch .item() loop (feature: GPUACCEL_COALESCE).

A float32 CUDA tensor of 65536 elements is made from seeded CPU data and
transformed on the GPU (x * 3 + 1); then COUNT scalars x[k % 65536].item()
are read one by one.  --mode reference reads the same values with one bulk
x[:m].cpu() and picks them on the host.

Prints "result torch_item <us per element> ..." and "digest: <16 hex>" over the
values read (same digest function as bench/digest.h).  Exits 77 when torch or
a CUDA device is missing.

usage: bench_torch_item.py [--count N] [--mode native|reference] [--seed S]
"""
import sys

from item_loop import N, import_torch, parse_args, run


def main() -> int:
    args = parse_args(__doc__.splitlines()[0])
    torch = import_torch()
    if torch is None:
        return 77

    gen = torch.Generator().manual_seed(args.seed)
    x = torch.rand(N, generator=gen, dtype=torch.float32).to("cuda") * 3 + 1
    torch.cuda.synchronize()
    return run("torch_item", args, lambda k: x[k].item(), lambda m: x[:m].cpu().tolist(),
               torch.cuda.synchronize)


if __name__ == "__main__":
    sys.exit(main())
