# torch_graph_check.py - PyTorch CUDA graphs as users write them, each replay
# compared bit for bit with eager execution of the same work and followed by
# .item() reads of its outputs:
#   step:      a whole training step (forward, backward, SGD with momentum)
#              captured with torch.cuda.graph in global capture mode, its
#              tensors in the graph's private memory pool, then replayed on
#              new data copied into the static inputs;
#   pool:      two inference graphs, the second captured into the first one's
#              pool (pool=g1.pool()) and reading its output;
#   callables: torch.cuda.make_graphed_callables on a module, trained with an
#              eager loss and optimizer.
# Prints a digest line per part and `check: ok`; on a mismatch it says where
# on stderr and exits 1.
import copy
import hashlib
import os
import sys
import traceback

# Deterministic cuBLAS (PyTorch gives each handle and stream a workspace of
# this size, so eager and captured GEMMs choose the same algorithm).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

dev = "cuda"
N, D, H, O = 128, 64, 256, 16
WARMUP, STEPS = 3, 8
torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
loss_fn = torch.nn.MSELoss()


class Mismatch(Exception):
    pass


def mlp(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.GELU(), torch.nn.LayerNorm(H),
                               torch.nn.Linear(H, O)).to(dev)


def sgd(module):
    return torch.optim.SGD(module.parameters(), lr=0.05, momentum=0.9)


def data(step, shape, salt):
    g = torch.Generator(device=dev)
    g.manual_seed(1000 * salt + step)
    return torch.randn(shape, device=dev, generator=g)


def bits(t):
    return t.detach().contiguous().view(torch.int32)


def same(what, got, want):
    """got (from a graph) must equal want (eager) bit for bit."""
    got, want = got.detach(), want.detach()
    if got.shape != want.shape:
        raise Mismatch("%s: graph shape %s, eager shape %s" % (what, tuple(got.shape), tuple(want.shape)))
    if torch.equal(bits(got), bits(want)):
        return
    differ = bits(got) != bits(want)
    first = differ.flatten().nonzero()[0].item()
    diff = (got.double() - want.double()).abs()
    raise Mismatch("%s: graph result differs from eager in %d of %d elements, max |diff| %.3e; "
                   "first at flat index %d: graph %r, eager %r"
                   % (what, differ.sum().item(), got.numel(), diff.max().item(), first,
                      got.flatten()[first].item(), want.flatten()[first].item()))


def same_read(what, got, want):
    if got != want:
        raise Mismatch("%s: .item() after the replay read %r, eager gives %r" % (what, got, want))


def train_step(module, opt, x, y):
    opt.zero_grad(set_to_none=True)
    out = module(x)
    loss = loss_fn(out, y)
    loss.backward()
    opt.step()
    return out, loss


def digest(reads, tensors):
    h = hashlib.sha256(repr(reads).encode())
    for t in tensors:
        h.update(repr(bits(t).flatten().tolist()).encode())
    return h.hexdigest()[:16]


def compare_modules(what, module, twin):
    for (name, p), q in zip(module.named_parameters(), twin.parameters()):
        same("%s: parameter %s" % (what, name), p, q)
        if p.grad is not None or q.grad is not None:
            if p.grad is None or q.grad is None:
                raise Mismatch("%s: gradient of %s present on one side only" % (what, name))
            same("%s: gradient of %s" % (what, name), p.grad, q.grad)


def part_step():
    model = mlp(1)
    twin = copy.deepcopy(model)
    opt, opt_e = sgd(model), sgd(twin)
    sx = torch.zeros(N, D, device=dev)
    sy = torch.zeros(N, O, device=dev)
    # Warm up on a side stream before capture, as torch.cuda.graph's
    # documentation asks; the eager twin takes the same steps.
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for i in range(WARMUP):
            sx.copy_(data(i, (N, D), 11))
            sy.copy_(data(i, (N, O), 12))
            train_step(model, opt, sx, sy)
    torch.cuda.current_stream().wait_stream(side)
    for i in range(WARMUP):
        train_step(twin, opt_e, data(i, (N, D), 11), data(i, (N, O), 12))
    compare_modules("after the eager warm-up", model, twin)

    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # backward allocates the grads in the graph's pool
    with torch.cuda.graph(g, capture_error_mode="global"):
        s_out = model(sx)
        s_loss = loss_fn(s_out, sy)
        s_loss.backward()
        opt.step()
    reads = []
    for i in range(WARMUP, WARMUP + STEPS):
        x, y = data(i, (N, D), 11), data(i, (N, O), 12)
        sx.copy_(x)
        sy.copy_(y)
        g.replay()
        got = (s_loss.item(), s_out[0, 0].item(), s_out[N - 1, O - 1].item())
        e_out, e_loss = train_step(twin, opt_e, x, y)
        same("step %d: output" % i, s_out, e_out)
        same("step %d: loss" % i, s_loss, e_loss)
        same_read("step %d: loss and output corners" % i, got,
                  (e_loss.item(), e_out[0, 0].item(), e_out[N - 1, O - 1].item()))
        reads.append(got)
    compare_modules("after %d replays" % STEPS, model, twin)
    return "replays=%d digest=%s" % (STEPS, digest(reads, list(model.parameters())))


def part_pool():
    net = mlp(2).eval()
    sx = torch.zeros(N, D, device=dev)
    weights = torch.arange(O, device=dev, dtype=torch.float32)

    def first(x):
        return net(x * 2 - 1)

    def second(h):
        p = torch.softmax(h, dim=1)
        return p, (p * weights).sum(dim=1)

    reads = []
    with torch.no_grad():
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                second(first(sx))
        torch.cuda.current_stream().wait_stream(side)
        g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.graph(g1):
            h1 = first(sx)
        with torch.cuda.graph(g2, pool=g1.pool()):
            p2, r2 = second(h1)
        for i in range(STEPS):
            x = data(i, (N, D), 21)
            sx.copy_(x)
            g1.replay()
            g2.replay()
            got = (r2[0].item(), r2[N - 1].item(), p2[N // 2, 1].item())
            e1 = first(x)
            ep, er = second(e1)
            same("inference %d: first graph" % i, h1, e1)
            same("inference %d: softmax" % i, p2, ep)
            same("inference %d: weighted sum" % i, r2, er)
            same_read("inference %d: reads" % i, got, (er[0].item(), er[N - 1].item(), ep[N // 2, 1].item()))
            reads.append(got)
    return "replays=%d digest=%s" % (STEPS, digest(reads, [h1, r2]))


def part_callables():
    module = mlp(3)
    twin = copy.deepcopy(module)
    sample = torch.randn(N, D, device=dev)  # requires_grad=False, as the real inputs
    module = torch.cuda.make_graphed_callables(module, (sample,))
    opt, opt_e = sgd(module), sgd(twin)
    reads = []
    for i in range(STEPS):
        x, y = data(i, (N, D), 31), data(i, (N, O), 32)
        out, loss = train_step(module, opt, x, y)
        got = (loss.item(), out[1, 2].item())
        e_out, e_loss = train_step(twin, opt_e, x, y)
        same("step %d: output" % i, out, e_out)
        same("step %d: loss" % i, loss, e_loss)
        same_read("step %d: loss and an output" % i, got, (e_loss.item(), e_out[1, 2].item()))
        reads.append(got)
    compare_modules("after %d steps" % STEPS, module, twin)
    return "steps=%d digest=%s" % (STEPS, digest(reads, list(module.parameters())))


print("torch %s on %s" % (torch.__version__, torch.cuda.get_device_name()), file=sys.stderr)
failed = []
for name, part in (("graph-step", part_step), ("graph-pool", part_pool), ("graphed-callables", part_callables)):
    try:
        print("%s: %s" % (name, part()))
    except Mismatch as e:
        failed.append(name)
        print("%s: mismatch" % name)
        print("check: FAILED: %s: %s" % (name, e), file=sys.stderr)
    except Exception:
        failed.append(name)
        print("%s: error" % name)
        print("check: FAILED: %s raised:" % name, file=sys.stderr)
        traceback.print_exc()
    sys.stdout.flush()
if failed:
    print("check: FAILED: " + ", ".join(failed), file=sys.stderr)
    sys.exit(1)
print("check: ok")
