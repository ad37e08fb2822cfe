# torch_check.py - a small PyTorch workload whose printed results must not
# change under the library: a training loop, .item() reads, allocation churn,
# then tensors from 4 KiB to 64 MiB allocated, read back (first, middle and
# last element, and a full sum) and released with empty_cache between rounds,
# which under expandable segments maps and unmaps memory. The matrix runs it
# with the caching allocator on, off and with expandable segments. Checks its
# own results: prints `check: ok`, or says what is wrong on stderr and exits 1.
import hashlib
import sys

import torch

problems = []


def expect(ok, what):
    if not ok:
        problems.append(what)
        print("check: FAILED: " + what, file=sys.stderr)


torch.manual_seed(0)
dev = "cuda"
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(256, 64, device=dev)
y = torch.randn(256, 8, device=dev)
losses = []
for step in range(20):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())
v = torch.arange(1000, device=dev, dtype=torch.float32) * 3
items = [v[i].item() for i in range(0, 1000, 37)]
for i in range(20):  # churn
    t = torch.empty(1 << (10 + i % 8), device=dev).fill_(i)
    items.append(t.sum().item())
h = hashlib.sha256(repr((losses, items)).encode()).hexdigest()[:16]
print("result ok=1 digest=" + h)

expect(all(lv == lv and abs(lv) < 1e30 for lv in losses), "a training loss is not finite: %r" % losses)
expect(losses[-1] < losses[0], "training did not lower the loss: first %r, last %r" % (losses[0], losses[-1]))
want = [3.0 * i for i in range(0, 1000, 37)]
got = items[: len(want)]
bad = [(i * 37, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
expect(not bad, ".item() reads of v = arange*3 wrong (index, read, expected): %r" % bad[:5])
want = [float(i * (1 << (10 + i % 8))) for i in range(20)]
got = items[len(items) - 20 :]
bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
expect(not bad, "churn sums wrong (round, read, expected): %r" % bad[:5])

# Memory: int32 tensors t = arange(n) * 7 + k, so that every value is exact and
# a read from the wrong place or a stale copy shows.
mem = []
for rnd in range(3):
    keep = []
    for k in range(12):
        n = (1 << (10 + (k * 7 + rnd * 4) % 15)) + 3 * k + rnd  # 4 KiB .. 64 MiB, odd sizes
        keep.append(torch.arange(n, device=dev, dtype=torch.int32) * 7 + k)
    for k, t in enumerate(keep):
        n = t.numel()
        reads = (t[0].item(), t[n // 2].item(), t[n - 1].item())
        want = (k, (n // 2) * 7 + k, (n - 1) * 7 + k)
        expect(reads == want, "round %d tensor %d (%d elements): first/middle/last read %r, expected %r"
               % (rnd, k, n, reads, want))
        total = t.sum(dtype=torch.int64).item()
        wtotal = 7 * n * (n - 1) // 2 + k * n
        expect(total == wtotal, "round %d tensor %d (%d elements): sum %d, expected %d" % (rnd, k, n, total, wtotal))
        mem.append((n,) + reads + (total,))
    del keep, t
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
h = hashlib.sha256(repr(mem).encode()).hexdigest()[:16]
print("memory: tensors=%d digest=%s" % (len(mem), h))

if problems:
    sys.exit(1)
print("check: ok")
