# allreduce.py - run by torchrun with two processes, one GPU each: an NCCL
# all-reduce whose result every rank checks; rank 0 prints it.
import os

import torch
import torch.distributed as dist

dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(rank)
x = torch.arange(1 << 20, device="cuda", dtype=torch.float32) * (rank + 1)
for _ in range(10):
    dist.all_reduce(x)
    x /= dist.get_world_size()
total = float(x.sum().item())
expect = float(sum(range(1 << 20))) * 1.5
ok = abs(total - expect) / expect < 1e-6
if rank == 0:
    print("allreduce ok=%d" % ok)
dist.destroy_process_group()
os._exit(0 if ok else 1)
