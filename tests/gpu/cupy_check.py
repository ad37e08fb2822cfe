# cupy_check.py - a small CuPy workload (module kernels through cuModuleLoad*,
# element reads with .item()), printed results must not change. Arguments:
#   nopool   every allocation straight to cudaMalloc/cudaFree, no memory pool;
#   capture  also stream capture: elementwise kernels (one over a transposed
#            view) and a row reduction captured on a non-blocking stream
#            (Stream.begin_capture/end_capture), the Graph uploaded and
#            launched on new inputs; each launch is compared with eager
#            execution of the same work, and .item() reads right after a
#            launch with a full copy of the same arrays.
# Checks its results (against NumPy and the closed forms it knows): prints
# `check: ok`, or says what is wrong on stderr and exits 1.
import hashlib
import sys

import cupy as cp
import numpy as np

problems = []


def expect(ok, what):
    if not ok:
        problems.append(what)
        print("check: FAILED: " + what, file=sys.stderr)


if "nopool" in sys.argv:  # every allocation straight to cudaMalloc/cudaFree
    cp.cuda.set_allocator(None)

a = cp.arange(10000, dtype=cp.float32)
b = cp.sin(a) * 2 + a
items = [float(b[i].item()) for i in range(0, 10000, 101)]
k = cp.ElementwiseKernel("float32 x", "float32 y", "y = x * x + 1", "ga_square")
c = k(b)
items.append(float(c.sum().item()))
for i in range(20):
    t = cp.full(1 << (8 + i % 10), i, dtype=cp.int32)
    items.append(int(t.sum().item()))
h = hashlib.sha256(repr(items).encode()).hexdigest()[:16]
print("result ok=1 digest=" + h)

ha = np.arange(10000, dtype=np.float32)
hb = np.sin(ha) * 2 + ha
want = [float(hb[i]) for i in range(0, 10000, 101)]
bad = [(i * 101, g, w) for i, (g, w) in enumerate(zip(items, want)) if abs(g - w) > 1e-3 + 1e-5 * abs(w)]
expect(not bad, "b = sin(a)*2 + a read with .item() (index, read, NumPy): %r" % bad[:5])
hsum = float((hb.astype(np.float64) ** 2 + 1).sum())
got = items[len(want)]
expect(abs(got - hsum) <= 1e-3 * hsum, "sum of b*b + 1: %r, NumPy (float64) %r" % (got, hsum))
want = [i * (1 << (8 + i % 10)) for i in range(20)]
bad = [(i, g, w) for i, (g, w) in enumerate(zip(items[len(items) - 20 :], want)) if g != w]
expect(not bad, "sums of full(n, i) (round, read, expected): %r" % bad[:5])

if "capture" in sys.argv:
    n = 256
    rowsum = cp.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "0", "ga_rowsum")

    def work(x, tmp, y, mm, r):
        # Only into the given arrays: nothing is allocated during capture, so
        # this also holds without the memory pool.
        cp.multiply(x, 3.0, out=tmp)
        cp.sin(tmp, out=tmp)
        k(tmp, y)
        cp.multiply(y, tmp.T, out=mm)  # CuPy refuses cuBLAS calls during capture
        rowsum(mm, axis=1, out=r)

    def buffers():
        return [cp.empty((n, n), dtype=cp.float32) for _ in range(3)] + [cp.empty(n, dtype=cp.float32)]

    s = cp.cuda.Stream(non_blocking=True)
    reads = []
    with s:
        base = (cp.arange(n * n, dtype=cp.float32).reshape(n, n) % 97) / 97
        x = cp.empty((n, n), dtype=cp.float32)
        gbuf, ebuf = buffers(), buffers()
        cp.multiply(base, 1.0, out=x)
        work(x, *gbuf)  # compiles the kernels outside capture
        s.synchronize()
        s.begin_capture()
        work(x, *gbuf)
        g = s.end_capture()
        if hasattr(g, "upload"):
            g.upload(s)
        for it in range(12):
            cp.multiply(base, 1.0 + 0.25 * (it % 5), out=x)
            g.launch(stream=s)
            s.synchronize()
            got = (float(gbuf[3][it].item()), float(gbuf[1][it, n - 1 - it].item()))
            full = (float(cp.asnumpy(gbuf[3])[it]), float(cp.asnumpy(gbuf[1])[it, n - 1 - it]))
            expect(got == full, "launch %d: .item() reads %r, full copies of the same arrays %r" % (it, got, full))
            work(x, *ebuf)
            s.synchronize()
            for name, gv, ev in (("sin(3x)", gbuf[0], ebuf[0]), ("y", gbuf[1], ebuf[1]),
                                 ("y * sin(3x)^T", gbuf[2], ebuf[2])):
                if not bool(cp.array_equal(gv, ev)):
                    d = cp.abs(gv - ev)
                    expect(False, "launch %d: %s from the graph differs from eager in %d elements, max |diff| %g"
                           % (it, name, int((gv != ev).sum()), float(d.max())))
            # The reduction's order is the same kernel's both times; compared
            # with a tolerance all the same, in case it is chosen per stream.
            for name, gv, ev, atol in (("row sums", gbuf[3], ebuf[3], 1e-2),):
                if not bool(cp.allclose(gv, ev, rtol=1e-4, atol=atol)):
                    d = cp.abs(gv - ev)
                    expect(False, "launch %d: %s from the graph not close to eager: max |diff| %g"
                           % (it, name, float(d.max())))
            reads.append(got)
            if problems:  # the first launch that went wrong says the most
                break
        if not problems and not bool(cp.array_equal(gbuf[3], ebuf[3])):
            print("note: the captured row sums differ from eager in their last bits", file=sys.stderr)
        hy = cp.asnumpy(gbuf[1]).astype(np.float64)
        hx = cp.asnumpy(x).astype(np.float64)
        hw = np.sin(hx * 3) ** 2 + 1
        expect(np.allclose(hy, hw, rtol=1e-5, atol=1e-5),
               "y = sin(3x)^2 + 1 from the graph against NumPy: max |diff| %g" % float(np.abs(hy - hw).max()))
        hc = hashlib.sha256(repr(reads).encode())
        for arr in gbuf:
            hc.update(cp.asnumpy(arr).tobytes())
    print("capture: launches=%d digest=%s" % (len(reads), hc.hexdigest()[:16]))

if problems:
    sys.exit(1)
print("check: ok")
