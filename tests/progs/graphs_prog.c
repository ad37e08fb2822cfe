/* graphs_prog.c - launch sequences that repeat, checked against a host model,
 * for the graphs feature (and run natively for comparison). Links -lcuda;
 * loads tests/progs/kernels.ptx ("fill", "add": p[i] += v).
 *   sequences  8-kernel sequences repeated 60 times on a stream, with scalar
 *              and pointer arguments that change every iteration
 *   events     events recorded around a sequence bracket it
 *   interrupt  a sequence cut short by a read, and by a different kernel
 *   threads    two threads, two streams, sequences at once
 *   legacy     the same on the legacy default stream
 *   ptds       the per-thread default stream (cuLaunchKernel_ptsz)
 *   unflushed  (only, when named as a second argument) 600 sequences with no
 *              flush point between them, then one sync
 *   ex         (only, when named) the sequences launched with cuLaunchKernelEx,
 *              no attributes, then with one (a priority)
 * usage: graphs_prog KERNELS.PTX [unflushed|ex]  -> one "NAME ok=0|1" line per
 * check; exits 1 when any fails */
#include "linked.h"
#include "verdict.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


enum { N = 2048, LEN = 8, ITERS = 60 };
static CUcontext ctx;
static CUfunction fill_fn, add_fn;
static int use_ex, ex_attrs; /* launch through cuLaunchKernelEx, with this many attributes */

static void launch(CUfunction f, CUstream s, CUdeviceptr p, uint32_t v, int ptds)
{
    if (!use_ex) {
        linked_launch(f, s, p, N, v, ptds);
        return;
    }
    uint32_t n = N;
    void *args[] = {&p, &n, &v};
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attr.value.priority = 0;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = (N + 127) / 128, cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = 128, cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    cfg.attrs = &attr, cfg.numAttrs = (unsigned)ex_attrs;
    CK(cuLaunchKernelEx(&cfg, f, args, NULL));
}

/* One sequence: LEN adds into one of two buffers, scalars change with it. */
static void sequence(CUstream s, CUdeviceptr buf[2], uint32_t model[2], int it, int ptds)
{
    for (int k = 0; k < LEN; k++) {
        int which = (it + k) % 2;
        uint32_t v = (uint32_t)(it * 31 + k * 7 + 1);
        launch(add_fn, s, buf[which], v, ptds);
        model[which] += v;
    }
}

static int check(CUdeviceptr buf[2], const uint32_t model[2], CUstream s)
{
    uint32_t h[N];
    int ok = 1;
    if (s)
        CK(cuStreamSynchronize(s));
    for (int b = 0; b < 2; b++) {
        CK(cuMemcpyDtoH(h, buf[b], sizeof h));
        for (int i = 0; i < N; i++)
            ok &= h[i] == model[b];
    }
    return ok;
}

static void setup(CUdeviceptr buf[2], uint32_t model[2])
{
    for (int b = 0; b < 2; b++) {
        CK(cuMemAlloc(&buf[b], N * 4));
        CK(cuMemsetD32(buf[b], 0, N));
        model[b] = 0;
    }
    /* The memsets are queued on the legacy stream, which a non-blocking
     * stream's kernels do not wait for. */
    CK(cuCtxSynchronize());
}

static void teardown(CUdeviceptr buf[2])
{
    CK(cuMemFree(buf[0]));
    CK(cuMemFree(buf[1]));
}

static int run_sequences(CUstream s, int ptds)
{
    CUdeviceptr buf[2];
    uint32_t model[2];
    setup(buf, model);
    int ok = 1;
    for (int it = 0; it < ITERS; it++) {
        sequence(s, buf, model, it, ptds);
        if (s)
            CK(cuStreamSynchronize(s));
        else
            CK(cuCtxSynchronize());
        if (it % 10 == 9)
            ok &= check(buf, model, s);
    }
    ok &= check(buf, model, s);
    teardown(buf);
    return ok;
}

static int run_events(CUstream s)
{
    CUdeviceptr buf[2];
    uint32_t model[2];
    CUevent e0, e1;
    CK(cuEventCreate(&e0, 0));
    CK(cuEventCreate(&e1, 0));
    setup(buf, model);
    int ok = 1;
    for (int it = 0; it < ITERS; it++) {
        CK(cuEventRecord(e0, s));
        sequence(s, buf, model, it, 0);
        CK(cuEventRecord(e1, s));
        CK(cuEventSynchronize(e1)); /* the sequence must be done when e1 is */
        uint32_t v;
        CK(cuMemcpyDtoHAsync(&v, buf[1], 4, s));
        CK(cuStreamSynchronize(s));
        ok &= v == model[1];
    }
    CK(cuEventDestroy(e0));
    CK(cuEventDestroy(e1));
    teardown(buf);
    return ok;
}

static int run_interrupt(CUstream s)
{
    CUdeviceptr buf[2];
    uint32_t model[2];
    setup(buf, model);
    int ok = 1;
    for (int it = 0; it < ITERS; it++) {
        if (it % 3 == 2) { /* cut short: three kernels, then a read */
            for (int k = 0; k < 3; k++) {
                uint32_t v = (uint32_t)(it + k);
                launch(add_fn, s, buf[0], v, 0);
                model[0] += v;
            }
            uint32_t got;
            CK(cuMemcpyDtoHAsync(&got, buf[0], 4, s));
            CK(cuStreamSynchronize(s));
            ok &= got == model[0];
        } else if (it % 3 == 1) { /* a different kernel in the middle */
            sequence(s, buf, model, it, 0);
            launch(fill_fn, s, buf[1], 5, 0);
            model[1] = 5;
        } else {
            sequence(s, buf, model, it, 0);
        }
        CK(cuStreamSynchronize(s));
    }
    ok &= check(buf, model, s);
    teardown(buf);
    return ok;
}

/* 600 sequences (4800 launches) with no flush point between them (one long segment), then
 * one sync: the library must find the repeating unit on its own. */
static int run_unflushed(CUstream s)
{
    CUdeviceptr buf[2];
    uint32_t model[2];
    setup(buf, model);
    for (int it = 0; it < 600; it++)
        sequence(s, buf, model, it, 0);
    int ok = check(buf, model, s);
    teardown(buf);
    return ok;
}

static void *thread_main(void *arg)
{
    CK(cuCtxSetCurrent(ctx));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    long ok = run_sequences(s, 0);
    CK(cuStreamDestroy(s));
    (void)arg;
    return (void *)ok;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUmodule mod = linked_setup(argc, argv, &dev, &ctx);
    CK(cuModuleGetFunction(&fill_fn, mod, "fill"));
    CK(cuModuleGetFunction(&add_fn, mod, "add"));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    if (argc > 2 && !strcmp(argv[2], "ex")) {
        use_ex = 1;
        printf("ex ok=%d\n", verdict(run_sequences(s, 0)));
        ex_attrs = 1;
        printf("ex-attributed ok=%d\n", verdict(run_sequences(s, 0)));
        return verdicts();
    }
    if (argc > 2 && !strcmp(argv[2], "unflushed")) {
        printf("unflushed ok=%d\n", verdict(run_unflushed(s)));
        return verdicts();
    }

    printf("sequences ok=%d\n", verdict(run_sequences(s, 0)));
    printf("events ok=%d\n", verdict(run_events(s)));
    printf("interrupt ok=%d\n", verdict(run_interrupt(s)));
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, thread_main, (void *)i);
    long ok = 1;
    for (int i = 0; i < 2; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok &= (long)r;
    }
    printf("threads ok=%d\n", verdict(ok != 0));
    printf("legacy ok=%d\n", verdict(run_sequences(NULL, 0)));
    printf("ptds ok=%d\n", verdict(run_sequences(NULL, 1)));
    CK(cuStreamDestroy(s));
    CK(cuModuleUnload(mod));
    return verdicts();
}
