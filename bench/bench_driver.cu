/*
 * bench_driver.cu - the cost of single driver calls, for the library's
 * pass-through overhead: cudart-free, straight to libcuda (linked -lcuda).
 *
 *   bench_driver --op ctxget|launch|dtoh|record|query-done|launch-record|
 *                     launch-record-query|alloc-free|sync-idle|item|setcur|getdev|
 *                     capturing|cupy-item [--count N]
 *                     [--size BYTES]
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
 * Prints "result driver <microseconds per call>" and a digest of what it read.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/progs/linked.h" /* CK, linked_context */
#include "clock.h"


static const char ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry empty()\n{\n ret;\n}\n";

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

int main(int argc, char **argv)
{
    enum op op = OP_LAUNCH;
    long count = 100000;
    size_t size = 4096;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--op"))
            op = op_named(argv[i + 1]);
        else if (!strcmp(argv[i], "--count"))
            count = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--size"))
            size = (size_t)atoll(argv[i + 1]);
    }
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUdeviceptr buf;
    linked_context(&dev, &ctx); /* exits 77 with a SKIP line without a GPU */
    CK(cuModuleLoadData(&mod, ptx));
    CK(cuModuleGetFunction(&fn, mod, "empty"));
    CK(cuMemAlloc(&buf, 4096));
    CK(cuMemsetD32(buf, 0x5eed, 1024));
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CK(cuEventRecord(ev, NULL));
    CK(cuEventSynchronize(ev));
    unsigned sum = 0, v = 0;
    long pending = 0;
    for (int pass = 0; pass < 2; pass++) { /* warm-up, then the timed pass */
        double t0 = now_us();
        for (long i = 0; i < count; i++) {
            switch (op) {
            case OP_CTXGET: {
                CUcontext c;
                CK(cuCtxGetCurrent(&c));
                sum += c == ctx;
                break;
            }
            case OP_DTOH:
                CK(cuMemcpyDtoH(&v, buf + 4 * (i % 1024), 4));
                sum += v;
                break;
            case OP_SYNC_IDLE: /* a stream with nothing in flight */
                CK(cuStreamSynchronize(NULL));
                break;
            case OP_ITEM: /* PyTorch's .item() in the driver API: async read, sync */
                CK(cuMemcpyDtoHAsync(&v, buf + 4 * (i % 1024), 4, NULL));
                CK(cuStreamSynchronize(NULL));
                sum += v;
                break;
            case OP_SETCUR:
                CK(cuCtxSetCurrent(ctx));
                break;
            case OP_GETDEV: {
                CUdevice d;
                CK(cuCtxGetDevice(&d));
                sum += d == dev;
                break;
            }
            case OP_CAPTURING: {
                CUstreamCaptureStatus st;
                CK(cuStreamIsCapturing(NULL, &st));
                sum += st == CU_STREAM_CAPTURE_STATUS_NONE;
                break;
            }
            case OP_CUPY_ITEM: {
                CUdevice d;
                CUstreamCaptureStatus st;
                CK(cuCtxGetDevice(&d));
                CK(cuCtxSetCurrent(ctx));
                CK(cuStreamIsCapturing(NULL, &st));
                CK(cuMemcpyDtoHAsync(&v, buf + 4 * (i % 1024), 4, NULL));
                CK(cuStreamSynchronize(NULL));
                CK(cuCtxGetDevice(&d));
                CK(cuCtxSetCurrent(ctx));
                sum += v + (st == CU_STREAM_CAPTURE_STATUS_NONE);
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
                sum += p != 0;
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
        CK(cuCtxSynchronize());
        CK(cuStreamQuery(0)); /* observes the device (timer_sync in common.h) */
        double t = now_us() - t0;
        if (pass == 1)
            printf("result driver %.4f op=%s pending=%ld\n", t / count, op_names[op], pending);
        pending = 0; /* the timed pass counts its own */
    }
    printf("digest: %016x\n", sum);
    CK(cuEventDestroy(ev));
    return 0;
}
