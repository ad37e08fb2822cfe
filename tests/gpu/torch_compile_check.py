# torch_compile_check.py - torch.compile as users run it: a small MLP
# (Linear, GELU, LayerNorm, Linear) compiled by Inductor into Triton kernels,
# used for inference and then trained with SGD, with .item() reads of the
# loss and outputs. Argument: the compile mode, default (the default) or
# reduce-overhead (CUDA graph trees: outputs live in the trees' memory pool
# and are overwritten by the next call, so they are cloned or read first).
# Compiled results must be close to an eager twin's and repeat bit for bit on
# the same input; prints digest lines and `check: ok`, or says what is wrong
# on stderr and exits 1. Each run compiles from an empty cache of its own
# (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR), so native and library runs do
# the same work and the time includes compilation.
import atexit
import copy
import hashlib
import os
import shutil
import sys
import tempfile
import time
import traceback

MODES = ("default", "reduce-overhead")
mode = sys.argv[1] if len(sys.argv) > 1 else "default"
if mode not in MODES:
    print("usage: torch_compile_check.py [%s]" % "|".join(MODES), file=sys.stderr)
    sys.exit(2)
cache = tempfile.mkdtemp(prefix="ga-inductor-")
atexit.register(shutil.rmtree, cache, True)  # registered first, so it runs last
os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
# Inductor's deterministic mode: no on-device benchmarking that could pick
# another reduction order from run to run.
os.environ.setdefault("TORCHINDUCTOR_DETERMINISTIC", "1")
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch._inductor.config  # noqa: E402
import torch.nn.functional as F  # noqa: E402

dev = "cuda"
N, D, H, O = 256, 64, 256, 16
ITERS, STEPS = 6, 8
torch.use_deterministic_algorithms(True)
if hasattr(torch._inductor.config, "deterministic"):
    torch._inductor.config.deterministic = True
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


class Mismatch(Exception):
    pass


def data(step, shape, salt):
    g = torch.Generator(device=dev)
    g.manual_seed(1000 * salt + step)
    return torch.randn(shape, device=dev, generator=g)


def bits(t):
    return t.detach().contiguous().view(torch.int32)


def close(what, got, want, rtol, atol):
    got, want = got.detach().float(), want.detach().float()
    if got.shape == want.shape and torch.allclose(got, want, rtol=rtol, atol=atol):
        return
    if got.shape != want.shape:
        raise Mismatch("%s: compiled shape %s, eager %s" % (what, tuple(got.shape), tuple(want.shape)))
    diff = (got.double() - want.double()).abs()
    worst = diff.flatten().argmax().item()
    raise Mismatch("%s: compiled result not close to eager (rtol %g, atol %g): max |diff| %.3e at flat "
                   "index %d (compiled %r, eager %r); %d of %d elements outside"
                   % (what, rtol, atol, diff.max().item(), worst, got.flatten()[worst].item(),
                      want.flatten()[worst].item(),
                      (~torch.isclose(got, want, rtol=rtol, atol=atol)).sum().item(), got.numel()))


def same(what, got, want):
    if not torch.equal(bits(got), bits(want)):
        n = (bits(got) != bits(want)).sum().item()
        raise Mismatch("%s: the same input gave another result (%d of %d elements differ)"
                       % (what, n, got.numel()))


def digest(values, tensors):
    h = hashlib.sha256(repr(values).encode())
    for t in tensors:
        h.update(repr(bits(t).flatten().tolist()).encode())
    return h.hexdigest()[:16]


torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(D, H), torch.nn.GELU(), torch.nn.LayerNorm(H),
                            torch.nn.Linear(H, O)).to(dev)
twin = copy.deepcopy(model)
compiled = torch.compile(model, mode=mode, fullgraph=True, dynamic=False)
try:
    import triton  # noqa: E402

    triton_version = triton.__version__
except Exception as e:  # torch.compile below says what is missing
    triton_version = "not importable (%s)" % e
print("torch %s, triton %s, on %s, mode %s" % (torch.__version__, triton_version, torch.cuda.get_device_name(), mode),
      file=sys.stderr)


def inference():
    outs, reads = [], []
    with torch.no_grad():
        for i in range(ITERS):
            x = data(i, (N, D), 1)
            t0 = time.monotonic()
            out = compiled(x)
            reads.append((out[0, 0].item(), out[N - 1, O - 1].item()))  # before the next call
            if i == 0:
                print("first compiled call: %.1f s" % (time.monotonic() - t0), file=sys.stderr)
            out = out.clone()  # reduce-overhead: the next call overwrites the graph's output
            close("inference %d" % i, out, twin(x), 1e-4, 1e-5)
            outs.append(out)
        again = compiled(data(0, (N, D), 1)).clone()
        same("inference, first input again", again, outs[0])
    return "inference: calls=%d digest=%s" % (ITERS + 1, digest(reads, outs))


def training():
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    opt_e = torch.optim.SGD(twin.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for i in range(STEPS):
        x, y = data(i, (N, D), 2), data(i, (N, O), 3)
        opt.zero_grad(set_to_none=True)
        t0 = time.monotonic()
        loss = F.mse_loss(compiled(x), y)
        loss.backward()
        opt.step()
        got = loss.item()
        if i == 0:
            print("first compiled training step: %.1f s" % (time.monotonic() - t0), file=sys.stderr)
        opt_e.zero_grad(set_to_none=True)
        want = F.mse_loss(twin(x), y)
        want.backward()
        opt_e.step()
        close("training step %d: loss" % i, torch.tensor(got), want.cpu(), 1e-4, 1e-6)
        losses.append(got)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        close("after %d steps: parameter %s" % (STEPS, name), p, q, 1e-3, 1e-5)
    return "training: steps=%d digest=%s" % (STEPS, digest(losses, list(model.parameters())))


failed = []
for name, part in (("inference", inference), ("training", training)):
    try:
        print(part())
    except Mismatch as e:
        failed.append(name)
        print("%s: mismatch" % name)
        print("check: FAILED: %s" % e, file=sys.stderr)
    except Exception:
        failed.append(name)
        print("%s: error" % name)
        print("check: FAILED: %s raised:" % name, file=sys.stderr)
        traceback.print_exc()
    sys.stdout.flush()

from torch._dynamo.utils import counters  # noqa: E402

graphs = counters["stats"]["unique_graphs"]
skips = counters["inductor"]["cudagraph_skips"]
print("dynamo graphs: %d, cudagraph skips: %d" % (graphs, skips), file=sys.stderr)
if graphs < 2:  # one for inference (no_grad), one for training
    failed.append("compiled %d graphs, expected 2 (inference and training)" % graphs)
if mode == "reduce-overhead" and skips:
    failed.append("CUDA graphs were skipped %d times (see the warnings above)" % skips)
print("compile: mode=%s graphs=%d" % (mode, graphs))
if failed:
    print("check: FAILED: " + ", ".join(failed), file=sys.stderr)
    sys.exit(1)
print("check: ok")
