#!/usr/bin/env python3
"""bench_torch_train.py - a PyTorch training loop timed inside the process.

The loop is the one of pytorch/examples mnist/main.py (train()): each step
copies a batch from pageable host memory to the device, zero_grad, forward
through the example's Net (two convolutions, max-pool, dropout, two linear
layers, log_softmax), nll_loss, backward, an Adadelta step, and every
LOG_EVERY steps reads the loss with .item() as the example logs it. Inputs are
seeded random batches, so no dataset is needed. Deterministic algorithms are
asked for, so the losses (and the digest over them) must not change under the
library.

Whole-process timing hides a few percent behind Python's and CUDA's start-up;
this times STEPS steps after WARMUP untimed ones, between two synchronizations.
Prints "result torch_train <ms per step> steps=N" and "digest: <16 hex>" over
the logged losses (same digest function as bench/digest.h). Exits 77 when
torch or a CUDA device is missing.

usage: bench_torch_train.py [--steps N] [--warmup N] [--batch B] [--seed S]
"""
import argparse
import os
import struct
import sys
import time

from item_loop import digest, import_torch

LOG_EVERY = 10


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.steps < 1 or args.warmup < 0 or args.batch < 1:
        ap.error("--steps and --batch must be >= 1, --warmup >= 0")
    # cuBLAS needs this for deterministic results (use_deterministic_algorithms).
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch = import_torch()
    if torch is None:
        return 77
    import torch.nn.functional as F
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.manual_seed(args.seed)

    class Net(torch.nn.Module):  # the layers of pytorch/examples mnist/main.py
        def __init__(self):
            super().__init__()
            self.conv1 = torch.nn.Conv2d(1, 32, 3, 1)
            self.conv2 = torch.nn.Conv2d(32, 64, 3, 1)
            self.dropout1 = torch.nn.Dropout(0.25)
            self.dropout2 = torch.nn.Dropout(0.5)
            self.fc1 = torch.nn.Linear(9216, 128)
            self.fc2 = torch.nn.Linear(128, 10)

        def forward(self, x):
            x = F.relu(self.conv1(x))
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = torch.flatten(self.dropout1(x), 1)
            x = self.dropout2(F.relu(self.fc1(x)))
            return F.log_softmax(self.fc2(x), dim=1)

    dev = torch.device("cuda")
    model = Net().to(dev)
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    gen = torch.Generator().manual_seed(args.seed)
    nb = 16  # distinct host batches, cycled like epochs of a small dataset
    data = [torch.randn(args.batch, 1, 28, 28, generator=gen) for _ in range(nb)]
    target = [torch.randint(0, 10, (args.batch,), generator=gen) for _ in range(nb)]
    logged = []

    def step(i):
        x, y = data[i % nb].to(dev), target[i % nb].to(dev)
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
        if i % LOG_EVERY == 0:
            logged.append(loss.item())

    for i in range(args.warmup):
        step(i)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(args.warmup, args.warmup + args.steps):
        step(i)
    torch.cuda.synchronize()
    torch.cuda.current_stream().query()  # observes the device: see timer_sync in common.h
    t1 = time.perf_counter()
    print("result torch_train %.4f steps=%d batch=%d" % ((t1 - t0) * 1e3 / args.steps, args.steps,
                                                       args.batch))
    print("digest: " + digest(struct.pack("<%dd" % len(logged), *logged)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
