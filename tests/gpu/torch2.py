# torch2.py - one process, two GPUs (PyTorch): tensors on cuda:0 and cuda:1,
# copied from one to the other (.to(), blocking and not, and copy_), changed
# in place on each between small .item() reads on both devices; every value
# read and the final tensors checked against the same arithmetic on the CPU
# (integers: exact), and a float product computed on cuda:1 from cuda:0's
# data checked against the CPU's (close). Prints
#   torch2 ok=0|1 items=N digest=SHA   (SHA: 16 hex digits of the sha256 of
#                                       the final tensors' bytes)
# and exits 1 when a check fails.
import hashlib
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch

N, M = 1 << 16, 1000003
torch.use_deterministic_algorithms(True)
d0, d1 = torch.device("cuda:0"), torch.device("cuda:1")
cpu_a = torch.arange(N, dtype=torch.int64) * 3 + 1
a0 = cpu_a.to(d0)
b1 = a0.to(d1)  # cuda:0 -> cuda:1
cpu_b = cpu_a.clone()
ok, items = True, 0
for r in range(40):
    b1.mul_(7 + r % 5).add_(r).remainder_(M)  # on cuda:1
    cpu_b.mul_(7 + r % 5).add_(r).remainder_(M)
    c0 = b1.to(d0, non_blocking=(r % 2 == 1))  # cuda:1 -> cuda:0, then used on cuda:0
    a0.add_(c0).remainder_(M)
    cpu_a.add_(cpu_b).remainder_(M)
    for k in range(8):  # small reads on both devices
        i = (r * 7919 + k * 104729) % N
        ok &= a0[i].item() == cpu_a[i].item()
        ok &= b1[i].item() == cpu_b[i].item()
        items += 2
    if r % 10 == 9:  # one word written through the other device's tensor
        j = (r * 31337) % N
        b1[j] = a0[j].to(d1)
        cpu_b[j] = cpu_a[j]
        ok &= b1[j].item() == cpu_b[j].item()
        items += 1
    t1 = torch.empty(N, dtype=torch.int64, device=d1)
    t1.copy_(a0)  # copy_ across devices
    ok &= t1[r * 13 % N].item() == cpu_a[r * 13 % N].item()
    items += 1
ok &= torch.equal(a0.cpu(), cpu_a) and torch.equal(b1.cpu(), cpu_b)
g = torch.Generator().manual_seed(7)
x, w = torch.randn(64, 128, generator=g), torch.randn(128, 32, generator=g)
y1 = x.to(d0).to(d1) @ w.to(d1)
y0 = y1.to(d0)
ok &= torch.allclose(y0.cpu(), x @ w, rtol=1e-3, atol=1e-3)
ok &= abs(y0.sum().item() - y1.sum().item()) == 0.0
h = hashlib.sha256()
for t in (a0, b1):
    h.update(bytes(t.cpu().view(torch.uint8).tolist()))
print("torch2 ok=%d items=%d digest=%s" % (ok, items, h.hexdigest()[:16]))
raise SystemExit(0 if ok else 1)
