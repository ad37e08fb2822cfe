# ddp.py - run by torchrun with two processes, one GPU each: a tiny model
# trained a few steps under DistributedDataParallel over NCCL, each rank on
# its half of a fixed batch. DDP averages the gradients, so every rank ends
# with the same parameters, and they are those of one model trained on the
# whole batch (the mean of the two halves' mean losses is the whole batch's).
# Rank 0 trains that reference itself, in-process, and checks: every rank's
# parameters bit for bit equal to its own (all_gather), and close to the
# reference's (the sums run in another order). Rank 0 prints
#   ddp ok=0|1 ranks=1 reference=1 params=SHA   (SHA: 16 hex digits of the
#                                                sha256 of the float32 bytes)
import hashlib
import os

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, BATCH, IN, HID, OUT = 8, 64, 16, 32, 4


def model_on(dev):
    torch.manual_seed(1234)  # the same initial parameters everywhere
    return torch.nn.Sequential(torch.nn.Linear(IN, HID), torch.nn.Tanh(), torch.nn.Linear(HID, OUT)).to(dev)


def batch(step):
    g = torch.Generator().manual_seed(100 + step)  # on the CPU: the same on every rank
    return torch.randn(BATCH, IN, generator=g), torch.randn(BATCH, OUT, generator=g)


def train(model, dev, part, parts):
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(STEPS):
        x, y = batch(step)
        n = BATCH // parts
        x, y = x[part * n:(part + 1) * n].to(dev), y[part * n:(part + 1) * n].to(dev)
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


torch.use_deterministic_algorithms(True)
dist.init_process_group("nccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.cuda.set_device(rank)
dev = torch.device("cuda", rank)
ddp = DDP(model_on(dev), device_ids=[rank])
train(ddp, dev, rank, world)
mine = flat(ddp.module)
every = [torch.empty_like(mine) for _ in range(world)]
dist.all_gather(every, mine)
ok = ranks = all(torch.equal(t, mine) for t in every)
if rank == 0:
    ref = model_on(dev)
    train(ref, dev, 0, 1)
    reference = torch.allclose(mine, flat(ref), rtol=1e-4, atol=1e-5)
    ok = ranks and reference
    sha = hashlib.sha256(bytes(mine.cpu().view(torch.uint8).tolist())).hexdigest()[:16]
    print("ddp ok=%d ranks=%d reference=%d params=%s" % (ok, ranks, reference, sha), flush=True)
dist.destroy_process_group()
os._exit(0 if ok else 1)
