/* lazy_prog.c - synchronizations after every kernel, as stwo-style provers
 * make them, for comparing a run under the library with a native one on the
 * fake driver (tests/fake), which counts the waits that reach it.
 *   lazy_prog KERNELS.PTX MODE [N]
 * MODE:
 *   chain     N x (add 1; cuCtxSynchronize or, by turns, cuStreamSynchronize),
 *             then a read of every word
 *   fault     a faulting kernel, cuCtxSynchronize, then a read: both codes
 *   hostfunc  N x (add 1; a host function counting; cuCtxSynchronize; the
 *             count read on the host)
 *   pinned    page-locked memory first, then as chain
 *   event     N x (add 1; cuEventRecord; cuCtxSynchronize; cuEventQuery)
 *   percall   N x (a stream created; add 1 on it; cuStreamSynchronize;
 *             cuStreamDestroy), as a stream-per-call program makes them
 *   percall-pool  the same with scratch memory from the stream-ordered pool:
 *             cuMemAllocAsync before the work, cuMemFreeAsync after the
 *             synchronization (ICICLE v2's MSM, bench_msm_loop)
 * Prints the results, then driver_waits=K (waits that reached the driver),
 * event_waits=E (cuStreamWaitEvent calls that reached it) and pool_grows=G
 * (stream-ordered allocations that mapped more memory: the freed scratch had
 * been given back at a synchronization). */
#define _GNU_SOURCE
#include "linked.h"
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

enum { N = 1024 };

static unsigned host_count;
static void count_fn(void *arg)
{
    (void)arg;
    __atomic_fetch_add(&host_count, 1, __ATOMIC_SEQ_CST);
}

static unsigned read_check(CUdeviceptr d, uint32_t want)
{
    static uint32_t h[N];
    CK(cuMemcpyDtoH(h, d, sizeof h));
    unsigned bad = 0;
    for (unsigned i = 0; i < N; i++)
        bad += h[i] != want;
    return bad;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod = linked_setup(argc, argv, &dev, &ctx);
    const char *mode = argc > 2 ? argv[2] : "chain";
    int n = argc > 3 ? atoi(argv[3]) : 50;
    CUfunction fill, add_fn, fault;
    CK(cuModuleGetFunction(&fill, mod, "fill"));
    CK(cuModuleGetFunction(&add_fn, mod, "add"));
    CK(cuModuleGetFunction(&fault, mod, "fault"));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, 4 * N));
    linked_launch(fill, NULL, d, N, 0, 0);
    CK(cuCtxSynchronize());
    unsigned bad = 0;
    if (!strcmp(mode, "fault")) {
        void *args[] = {&d};
        CK(cuLaunchKernel(fault, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
        CUresult s = cuCtxSynchronize();
        uint32_t v;
        CUresult r = cuMemcpyDtoH(&v, d, 4);
        printf("sync=%d read=%d\n", (int)s, (int)r);
    } else if (!strcmp(mode, "hostfunc")) {
        for (int i = 0; i < n; i++) {
            linked_launch(add_fn, NULL, d, N, 1, 0);
            CK(cuLaunchHostFunc(NULL, count_fn, NULL));
            CK(cuCtxSynchronize());
            bad += __atomic_load_n(&host_count, __ATOMIC_SEQ_CST) != (unsigned)i + 1;
        }
        bad += read_check(d, (uint32_t)n);
    } else if (!strcmp(mode, "event")) {
        CUevent e;
        CK(cuEventCreate(&e, 0));
        for (int i = 0; i < n; i++) {
            linked_launch(add_fn, NULL, d, N, 1, 0);
            CK(cuEventRecord(e, NULL));
            CK(cuCtxSynchronize());
            bad += cuEventQuery(e) != CUDA_SUCCESS;
        }
        bad += read_check(d, (uint32_t)n);
    } else if (!strcmp(mode, "percall") || !strcmp(mode, "percall-pool")) {
        bool pool = !strcmp(mode, "percall-pool");
        for (int i = 0; i < n; i++) {
            CUstream s;
            CUdeviceptr scratch = 0;
            CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
            if (pool) {
                CK(cuMemAllocAsync(&scratch, 4 * N, s));
                linked_launch(fill, s, scratch, N, (uint32_t)i, 0);
            }
            linked_launch(add_fn, s, d, N, 1, 0);
            CK(cuStreamSynchronize(s));
            if (pool)
                CK(cuMemFreeAsync(scratch, s));
            CK(cuStreamDestroy(s));
        }
        bad += read_check(d, (uint32_t)n);
    } else {
        void *pinned = NULL;
        if (!strcmp(mode, "pinned"))
            CK(cuMemHostAlloc(&pinned, 4096, 0));
        CUstream s;
        CK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
        for (int i = 0; i < n; i++) {
            linked_launch(add_fn, i % 2 ? s : NULL, d, N, 1, 0);
            CK(i % 2 ? cuStreamSynchronize(s) : cuCtxSynchronize());
        }
        bad += read_check(d, (uint32_t)n);
        CK(cuStreamDestroy(s));
        if (pinned)
            CK(cuMemFreeHost(pinned));
    }
    unsigned (*count)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "fakecuda_waits");
    unsigned (*ewaits)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "fakecuda_event_waits");
    unsigned (*grows)(void) = (unsigned (*)(void))dlsym(RTLD_DEFAULT, "fakecuda_pool_grows");
    printf("bad=%u\ndriver_waits=%u\nevent_waits=%u\npool_grows=%u\n", bad, count ? count() : 0,
           ewaits ? ewaits() : 0, grows ? grows() : 0);
    return bad != 0;
}
