/*
 * bench_driver.cu - the cost of single driver calls, for the library's
 * pass-through overhead: cudart-free, straight to libcuda (linked -lcuda).
 *
 *   bench_driver --op ctxget|launch|dtoh|record|query-done|launch-record|
 *                     launch-record-query|alloc-free|sync-idle|item|setcur|getdev|
 *                     capturing|cupy-item [--count N] [--size BYTES]
 *                     [--mode native|reference] [--seed S]
 *
 * ctxget: cuCtxGetCurrent; launch: cuLaunchKernel of an empty kernel on the
 * legacy stream (synchronized at the end); dtoh: 4-byte cuMemcpyDtoH.
 * The event ops price what the pool's fences cost (events without timing, as
 * the library makes them): record: cuEventRecord on the idle legacy stream;
 * query-done: cuEventQuery of a completed event; launch-record: a launch and a
 * record after it; launch-record-query: the same and a query of that event,
 * which usually finds it pending (the count of pending answers is printed).
 * alloc-free: cuMemAlloc_v2 of --size bytes (default 4096) and cuMemFree_v2,
 * the pool's churn without cudart's own work around each call.
 * sync-idle: cuStreamSynchronize of the idle legacy stream; item: a 4-byte
 * cuMemcpyDtoHAsync on it and its cuStreamSynchronize (PyTorch's .item()).
 * What frameworks call around each read: setcur: cuCtxSetCurrent of the
 * context already current; getdev: cuCtxGetDevice; capturing:
 * cuStreamIsCapturing of the legacy stream; cupy-item: the driver calls of one
 * CuPy a[k].item() as cudart makes them (cupy/_core/core.pyx ndarray.get:
 * getDevice, setDevice, streamIsCapturing in memory.pyx copy_to_host_async,
 * memcpyAsync, the stream's synchronize, setDevice back).
 *
 * The read ops (dtoh, item, cupy-item) read element i of a buffer of
 * min(N, 2^20) words, i = 0, 1, 2, ...: each value once while N <= 2^20. A
 * kernel writes the buffer with seeded, per-element values before each pass
 * (a warm-up pass, then the timed one), with a new seed each pass, so nothing
 * the warm-up read is still valid when the timed pass starts; the digest is
 * over every value the timed pass read. --mode reference (item, cupy-item):
 * the best hand-written way to the same values, one cuMemcpyDtoHAsync of the
 * whole range into page-locked memory (allocated before the timing) and its
 * cuStreamSynchronize, the values taken from there (cupy-item: CuPy's calls
 * around the read made once).
 * The other ops read no data and print no digest (run-suite declares their
 * rows digest-free).
 * Prints "result driver <microseconds per call> ...".
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/progs/linked.h" /* CK, linked_context */
#include "clock.h"
#include "digest.h"

/* empty(): nothing. fill(p, n, seed): p[i] = mix32(seed * 0x9e3779b9 + i) for
 * i < n, mix32 as in common.h (the program is cudart-free, so its kernels are
 * PTX). */
static const char ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry empty()\n{\n ret;\n}\n"
    ".visible .entry fill(.param .u64 p, .param .u32 n, .param .u32 seed)\n{\n"
    " .reg .pred %q;\n .reg .b32 %r<9>;\n .reg .b64 %rd<5>;\n"
    " ld.param.u64 %rd1, [p];\n ld.param.u32 %r1, [n];\n ld.param.u32 %r2, [seed];\n"
    " mov.u32 %r3, %ctaid.x;\n mov.u32 %r4, %ntid.x;\n mov.u32 %r5, %tid.x;\n"
    " mad.lo.u32 %r3, %r3, %r4, %r5;\n"
    " setp.ge.u32 %q, %r3, %r1;\n @%q bra DONE;\n"
    " mad.lo.u32 %r6, %r2, -1640531527, %r3;\n" /* 0x9e3779b9 */
    " shr.u32 %r7, %r6, 16;\n xor.b32 %r6, %r6, %r7;\n mul.lo.u32 %r6, %r6, 2146121005;\n"
    " shr.u32 %r7, %r6, 15;\n xor.b32 %r6, %r6, %r7;\n mul.lo.u32 %r6, %r6, -2073254261;\n"
    " shr.u32 %r7, %r6, 16;\n xor.b32 %r8, %r6, %r7;\n"
    " cvta.to.global.u64 %rd2, %rd1;\n mul.wide.u32 %rd3, %r3, 4;\n add.s64 %rd4, %rd2, %rd3;\n"
    " st.global.u32 [%rd4], %r8;\n"
    "DONE:\n ret;\n}\n";

/* The op is looked up once: string compares in the loop would be timed with
 * calls as cheap as cuCtxGetCurrent (~12 ns). */
enum op { OP_CTXGET, OP_LAUNCH, OP_DTOH, OP_RECORD, OP_QUERY_DONE, OP_LAUNCH_RECORD,
          OP_LAUNCH_RECORD_QUERY, OP_ALLOC_FREE, OP_SYNC_IDLE, OP_ITEM, OP_SETCUR, OP_GETDEV,
          OP_CAPTURING, OP_CUPY_ITEM, N_OPS };
static const char *const op_names[N_OPS] = {"ctxget", "launch", "dtoh", "record", "query-done",
                                            "launch-record", "launch-record-query",
                                            "alloc-free", "sync-idle", "item", "setcur",
                                            "getdev", "capturing", "cupy-item"};

static enum op op_named(const char *name)
{
    for (int o = 0; o < N_OPS; o++)
        if (!strcmp(name, op_names[o]))
            return (enum op)o;
    fprintf(stderr, "bench_driver: --op %s: expected one of ctxget, launch, dtoh, record, "
                    "query-done, launch-record, launch-record-query, alloc-free, sync-idle, "
                    "item, setcur, getdev, capturing, cupy-item\n", name);
    exit(2);
}

static int reads_data(enum op op)
{
    return op == OP_DTOH || op == OP_ITEM || op == OP_CUPY_ITEM;
}

/* Wait for the device, then observe it (timer_sync in common.h). */
static void device_sync(void)
{
    CK(cuCtxSynchronize());
    CK(cuStreamQuery(0));
}

/* The buffer's values for this pass: a kernel writes them, so every window,
 * copy or mirror of the previous pass is stale. */
static void fill(CUfunction f, CUdeviceptr buf, unsigned words, unsigned seed)
{
    void *args[] = {&buf, &words, &seed};
    CK(cuLaunchKernel(f, (words + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    device_sync();
}

/* The reference for the read ops: the whole range in one copy to page-locked
 * memory, then the values taken from there. */
static void read_reference(enum op op, CUcontext ctx, CUdeviceptr buf, unsigned words,
                           unsigned *stage, unsigned *vals, long count)
{
    CUdevice d;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    size_t n = (size_t)(count < (long)words ? count : (long)words);
    if (op == OP_CUPY_ITEM) {
        CK(cuCtxGetDevice(&d));
        CK(cuCtxSetCurrent(ctx));
        CK(cuStreamIsCapturing(NULL, &st));
    }
    CK(cuMemcpyDtoHAsync(stage, buf, n * 4, NULL));
    CK(cuStreamSynchronize(NULL));
    if (op == OP_CUPY_ITEM) {
        CK(cuCtxGetDevice(&d));
        CK(cuCtxSetCurrent(ctx));
    }
    for (long i = 0; i < count; i++)
        vals[i] = stage[i % words] + (st != CU_STREAM_CAPTURE_STATUS_NONE);
}

int main(int argc, char **argv)
{
    enum op op = OP_LAUNCH;
    long count = 100000, seed = 1;
    size_t size = 4096;
    int reference = 0;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "bench_driver: %s needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--op"))
            op = op_named(argv[i + 1]);
        else if (!strcmp(argv[i], "--count"))
            count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--size"))
            size = (size_t)atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            seed = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--mode") && !strcmp(argv[i + 1], "reference"))
            reference = 1;
        else if (!strcmp(argv[i], "--mode") && !strcmp(argv[i + 1], "native"))
            reference = 0;
        else {
            fprintf(stderr, "bench_driver: unknown option %s %s\n", argv[i], argv[i + 1]);
            return 2;
        }
    }
    if (count < 1) {
        fprintf(stderr, "bench_driver: --count must be at least 1\n");
        return 2;
    }
    if (reference && op != OP_ITEM && op != OP_CUPY_ITEM) {
        fprintf(stderr, "bench_driver: --mode reference is for --op item and cupy-item\n");
        return 2;
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn, fill_fn;
    CUdeviceptr buf;
    linked_context(&dev, &ctx); /* exits 77 with a SKIP line without a GPU */
    CK(cuModuleLoadData(&mod, ptx));
    CK(cuModuleGetFunction(&fn, mod, "empty"));
    CK(cuModuleGetFunction(&fill_fn, mod, "fill"));
    unsigned words = !reads_data(op) ? 1024 : count < (1l << 20) ? (unsigned)count : 1u << 20;
    CK(cuMemAlloc(&buf, (size_t)words * 4));
    unsigned *vals = NULL, *stage = NULL;
    if (reads_data(op) && !(vals = (unsigned *)malloc((size_t)count * sizeof(unsigned)))) {
        fprintf(stderr, "out of host memory\n");
        return 1;
    }
    if (reference)
        CK(cuMemAllocHost((void **)&stage, (size_t)words * 4));
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CK(cuEventRecord(ev, NULL));
    CK(cuEventSynchronize(ev));
    unsigned v = 0;
    long pending = 0;
    for (int pass = 0; pass < 2; pass++) { /* warm-up, then the timed pass */
        if (reads_data(op)) /* new values each pass: the warm-up's are stale */
            fill(fill_fn, buf, words, (unsigned)(seed * 2 + pass));
        double t0 = now_us();
        if (reference)
            read_reference(op, ctx, buf, words, stage, vals, count);
        else {
            for (long i = 0; i < count; i++) {
                CUdeviceptr at = buf + 4 * (CUdeviceptr)(i % words);
                switch (op) {
                case OP_CTXGET: {
                    CUcontext c;
                    CK(cuCtxGetCurrent(&c));
                    if (c != ctx)
                        CK(CUDA_ERROR_INVALID_CONTEXT);
                    break;
                }
                case OP_DTOH:
                    CK(cuMemcpyDtoH(&v, at, 4));
                    vals[i] = v;
                    break;
                case OP_SYNC_IDLE: /* a stream with nothing in flight */
                    CK(cuStreamSynchronize(NULL));
                    break;
                case OP_ITEM: /* PyTorch's .item() in the driver API: async read, sync */
                    CK(cuMemcpyDtoHAsync(&v, at, 4, NULL));
                    CK(cuStreamSynchronize(NULL));
                    vals[i] = v;
                    break;
                case OP_SETCUR:
                    CK(cuCtxSetCurrent(ctx));
                    break;
                case OP_GETDEV: {
                    CUdevice d;
                    CK(cuCtxGetDevice(&d));
                    break;
                }
                case OP_CAPTURING: {
                    CUstreamCaptureStatus st;
                    CK(cuStreamIsCapturing(NULL, &st));
                    break;
                }
                case OP_CUPY_ITEM: {
                    CUdevice d;
                    CUstreamCaptureStatus st;
                    CK(cuCtxGetDevice(&d));
                    CK(cuCtxSetCurrent(ctx));
                    CK(cuStreamIsCapturing(NULL, &st));
                    CK(cuMemcpyDtoHAsync(&v, at, 4, NULL));
                    CK(cuStreamSynchronize(NULL));
                    CK(cuCtxGetDevice(&d));
                    CK(cuCtxSetCurrent(ctx));
                    vals[i] = v + (st != CU_STREAM_CAPTURE_STATUS_NONE);
                    break;
                }
                case OP_RECORD:
                    CK(cuEventRecord(ev, NULL));
                    break;
                case OP_QUERY_DONE:
                    CK(cuEventQuery(ev));
                    break;
                case OP_ALLOC_FREE: {
                    CUdeviceptr p;
                    CK(cuMemAlloc(&p, size));
                    CK(cuMemFree(p));
                    break;
                }
                default: /* the launch ops */
                    CK(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
                    if (op != OP_LAUNCH)
                        CK(cuEventRecord(ev, NULL));
                    if (op == OP_LAUNCH_RECORD_QUERY) {
                        CUresult q = cuEventQuery(ev);
                        if (q != CUDA_SUCCESS && q != CUDA_ERROR_NOT_READY)
                            CK(q);
                        pending += q == CUDA_ERROR_NOT_READY;
                    }
                }
            }
        }
        device_sync();
        double t = now_us() - t0;
        if (pass == 1)
            printf("result driver %.4f op=%s pending=%ld mode=%s\n", t / count, op_names[op],
                   pending, reference ? "reference" : "native");
        pending = 0; /* the timed pass counts its own */
    }
    if (reads_data(op))
        print_digest(vals, (size_t)count * sizeof(unsigned));
    CK(cuEventDestroy(ev));
    CK(cuMemFree(buf));
    if (stage)
        CK(cuMemFreeHost(stage));
    free(vals);
    return 0;
}
