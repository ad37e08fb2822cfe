# torch_check.py - a small PyTorch workload whose printed results must not
# change under the library: a training loop, .item() reads, allocation churn.
import hashlib
import torch

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
