/* capture_prog.c - stream captures as real programs make them, each replayed
 * and its results checked against a host model; run natively and under the
 * library (the fake driver enforces the capture rules as the real one does).
 * Links -lcuda; loads tests/progs/kernels.ptx ("fill", "add": p[i] += v).
 *   mixed     global mode on a created blocking stream: a stream-ordered
 *             allocation, kernels, an event record, a device-to-host async
 *             copy, a second stream created during the capture, joined
 *             through an event wait and destroyed before the capture ends,
 *             a stream-ordered free; preceded by allocation churn and busy
 *             streams so that the library holds pending fences and blocks
 *   modes     the same kernels captured in global, thread-local and relaxed
 *             mode on a non-blocking stream
 *   ptsz      a capture on the per-thread default stream
 *   thread    thread-local capture while a second thread allocates, copies,
 *             launches, synchronizes and frees on its own stream
 *   invalid   the program itself makes an unsafe call in a global capture:
 *             the end fails with the driver's own error, and afterwards the
 *             same work outside a capture runs as always (GPUACCEL_POOL users
 *             see pool hits again: churn follows)
 * usage: capture_prog KERNELS.PTX [CHECK...]  -> one "NAME ok=0|1" line per
 * check (all of them by default), exit 1 when any fails; "invalid" also prints
 * the end's error code. */
#include "linked.h"
#include "verdict.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g);

enum { N = 4096, REPLAYS = 3 };
static CUfunction fill_fn, add_fn;

static void launch(CUfunction f, CUstream s, CUdeviceptr p, uint32_t v, int ptsz)
{
    linked_launch(f, s, p, N, v, ptsz);
}

/* Every word of the buffer equals `want`. */
static int holds(CUdeviceptr p, uint32_t want)
{
    static uint32_t h[N];
    CK(cuMemcpyDtoH(h, p, sizeof h));
    for (int i = 0; i < N; i++)
        if (h[i] != want)
            return 0;
    return 1;
}

static void replay(CUgraph g, CUstream s, int times)
{
    CUgraphExec x;
    CK(cuGraphInstantiateWithFlags(&x, g, 0));
    for (int i = 0; i < times; i++)
        CK(cuGraphLaunch(x, s));
    CK(cuStreamSynchronize(s));
    CK(cuGraphExecDestroy(x));
    CK(cuGraphDestroy(g));
}

/* Allocation churn with kernels in flight, and a busy non-blocking stream:
 * the pool then holds blocks behind pending fences when the capture begins. */
static void churn(CUstream busy)
{
    CUdeviceptr p[8];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 8; i++) {
            CK(cuMemAlloc(&p[i], N * 4 + (size_t)i * 4096)); /* the kernel writes N words */
            launch(fill_fn, busy, p[i], (uint32_t)i, 0);
        }
        for (int i = 0; i < 8; i++)
            CK(cuMemFree(p[i]));
    }
}

static int check_mixed(void)
{
    CUstream s, busy;
    CUevent forked, joined;
    CUdeviceptr a, b;
    uint32_t *seen; /* page-locked: what a captured copy to the host needs */
    CK(cuMemHostAlloc((void **)&seen, sizeof *seen, 0));
    *seen = 0;
    CK(cuStreamCreate(&s, 0));
    CK(cuStreamCreate(&busy, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&forked, CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&joined, CU_EVENT_DISABLE_TIMING));
    CK(cuMemAlloc(&a, N * 4));
    CK(cuMemAlloc(&b, N * 4));
    launch(fill_fn, s, a, 0, 0);
    launch(fill_fn, s, b, 0, 0);
    CK(cuStreamSynchronize(s));
    churn(busy);

    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUdeviceptr tmp;
    CK(cuMemAllocAsync(&tmp, N * 4, s));
    launch(fill_fn, s, tmp, 5, 0);
    launch(add_fn, s, a, 1, 0);
    CK(cuEventRecord(forked, s));
    CUstream side;
    CK(cuStreamCreate(&side, CU_STREAM_NON_BLOCKING)); /* created during the capture */
    CK(cuStreamWaitEvent(side, forked, 0));
    launch(add_fn, side, b, 2, 0);
    CK(cuEventRecord(joined, side));
    CK(cuStreamWaitEvent(s, joined, 0));
    CK(cuMemcpyDtoHAsync(seen, tmp, sizeof *seen, s));
    CK(cuMemFreeAsync(tmp, s));
    CK(cuStreamDestroy(side)); /* while the capture is open */
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));

    int ok = holds(a, 0) && holds(b, 0); /* captured, not run */
    replay(g, s, REPLAYS);
    ok &= holds(a, REPLAYS) && holds(b, 2 * REPLAYS) && *seen == 5;
    churn(busy); /* and the pool serves again */
    CK(cuStreamSynchronize(busy));
    CK(cuMemFree(a));
    CK(cuMemFree(b));
    CK(cuMemFreeHost(seen));
    CK(cuEventDestroy(forked));
    CK(cuEventDestroy(joined));
    CK(cuStreamDestroy(busy));
    CK(cuStreamDestroy(s));
    return ok;
}

static int check_modes(void)
{
    static const CUstreamCaptureMode modes[] = {CU_STREAM_CAPTURE_MODE_GLOBAL,
                                                CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                                                CU_STREAM_CAPTURE_MODE_RELAXED};
    CUstream s;
    CUdeviceptr a;
    int ok = 1;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&a, N * 4));
    for (int m = 0; m < 3; m++) {
        launch(fill_fn, s, a, 10, 0);
        CK(cuStreamSynchronize(s));
        CK(cuStreamBeginCapture(s, modes[m]));
        for (int k = 0; k < 6; k++)
            launch(add_fn, s, a, (uint32_t)(k + 1), 0);
        CUgraph g;
        CK(cuStreamEndCapture(s, &g));
        replay(g, s, 2);
        ok &= holds(a, 10 + 2 * 21);
    }
    CK(cuMemFree(a));
    CK(cuStreamDestroy(s));
    return ok;
}

static int check_ptsz(void)
{
    CUdeviceptr a;
    CK(cuMemAlloc(&a, N * 4));
    launch(fill_fn, NULL, a, 7, 1);
    CK(cuStreamBeginCapture_v2_ptsz(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch(add_fn, NULL, a, 3, 1);
    launch(add_fn, NULL, a, 4, 1);
    CUgraph g;
    CK(cuStreamEndCapture_ptsz(NULL, &g));
    replay(g, CU_STREAM_PER_THREAD, 2);
    int ok = holds(a, 7 + 2 * 7);
    CK(cuMemFree(a));
    return ok;
}

/* The second thread: its own stream and memory, every kind of call. */
typedef struct {
    CUcontext ctx;
    int ok;
} other_t;

static void *other_thread(void *arg)
{
    other_t *o = arg;
    CK(cuCtxSetCurrent(o->ctx));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    o->ok = 1;
    for (int round = 0; round < 20; round++) {
        CUdeviceptr p;
        uint32_t v = (uint32_t)round * 3 + 1, back[N];
        CK(cuMemAlloc(&p, N * 4));
        launch(fill_fn, s, p, v, 0);
        CK(cuStreamSynchronize(s));
        uint32_t one = 0;
        CK(cuMemcpyDtoH(&one, p + 4 * (CUdeviceptr)round, sizeof one));
        CK(cuMemcpyDtoH(back, p, sizeof back));
        o->ok &= one == v && back[N - 1] == v;
        CK(cuMemFree(p));
    }
    CK(cuStreamDestroy(s));
    return NULL;
}

static int check_thread(CUcontext ctx)
{
    CUstream s;
    CUdeviceptr a;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&a, N * 4));
    launch(fill_fn, s, a, 1, 0);
    CK(cuStreamSynchronize(s));
    other_t o = {ctx, 0};
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    pthread_t t;
    if (pthread_create(&t, NULL, other_thread, &o) != 0)
        return 0;
    for (int k = 0; k < 50; k++)
        launch(add_fn, s, a, 1, 0);
    pthread_join(t, NULL);
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    replay(g, s, 2);
    int ok = o.ok && holds(a, 1 + 2 * 50);
    CK(cuMemFree(a));
    CK(cuStreamDestroy(s));
    return ok;
}

static int check_invalid(void)
{
    CUstream s;
    CUdeviceptr a, extra;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&a, N * 4));
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    launch(add_fn, s, a, 1, 0);
    CUresult unsafe = cuMemAlloc(&extra, 4096); /* prohibited in a global capture */
    CUgraph g = NULL;
    CUresult end = cuStreamEndCapture(s, &g);
    printf("invalid: alloc=%d end=%d graph=%s\n", unsafe == CUDA_SUCCESS ? 0 : 1, (int)end,
           g ? "yes" : "no");
    if (unsafe == CUDA_SUCCESS)
        CK(cuMemFree(extra));
    CUstreamCaptureStatus st;
    CK(cuStreamIsCapturing(s, &st));
    /* The same work now runs: allocation churn, kernels, reads. */
    launch(fill_fn, s, a, 9, 0);
    CK(cuStreamSynchronize(s));
    int ok = end != CUDA_SUCCESS && !g && st == CU_STREAM_CAPTURE_STATUS_NONE && holds(a, 9);
    for (int i = 0; i < 64; i++) {
        CUdeviceptr p;
        CK(cuMemAlloc(&p, 65536));
        CK(cuMemFree(p));
    }
    CK(cuMemFree(a));
    CK(cuStreamDestroy(s));
    return ok;
}

static int wanted(int argc, char **argv, const char *name)
{
    if (argc <= 2)
        return 1;
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], name))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod = linked_setup(argc, argv, &dev, &ctx);
    CK(cuModuleGetFunction(&fill_fn, mod, "fill"));
    CK(cuModuleGetFunction(&add_fn, mod, "add"));
    if (wanted(argc, argv, "mixed"))
        printf("mixed ok=%d\n", verdict(check_mixed()));
    if (wanted(argc, argv, "modes"))
        printf("modes ok=%d\n", verdict(check_modes()));
    if (wanted(argc, argv, "ptsz"))
        printf("ptsz ok=%d\n", verdict(check_ptsz()));
    if (wanted(argc, argv, "thread"))
        printf("thread ok=%d\n", verdict(check_thread(ctx)));
    if (wanted(argc, argv, "invalid"))
        printf("invalid ok=%d\n", verdict(check_invalid()));
    return verdicts();
}
