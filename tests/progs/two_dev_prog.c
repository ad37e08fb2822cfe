/* two_dev_prog.c - one process on two devices, the current context switched
 * before every call as cudaSetDevice-style code does: a buffer on each device,
 * kernels on each device's default stream and on a non-blocking stream of its
 * own, single words read back, peer copies both ways (synchronous, and
 * asynchronous behind an event recorded on the other device), a scratch block
 * each round on each device (its pointer attributes must name its own device
 * and context; a kernel on it is still queued when it is freed), and at the
 * end a kernel of one device writing the other's memory through peer access.
 * Every value is checked against the host's arithmetic. Runs against
 * tests/fake with FAKECUDA_DEVICES=2, and on two GPUs.
 *   two_dev_prog KERNELS.PTX [ROUNDS]  -> one "NAME ok=0|1" line per check and
 *   "digest=<hex>"; exits 1 when a check fails, 77 with fewer than two devices */
#include "linked.h"
#include "verdict.h"

#include <string.h>

enum { N = 4096, DEVS = 2 };

static CUcontext ctx[DEVS];
static CUfunction fill_fn[DEVS], add_fn[DEVS];
static CUstream own[DEVS]; /* a non-blocking stream of each device */
static uint64_t digest = 1469598103934665603ull;

/* cudaSetDevice(d): before every call below. */
static void on(int d)
{
    CK(cuCtxSetCurrent(ctx[d]));
}

static uint32_t word(int d, CUdeviceptr p, size_t i)
{
    uint32_t v;
    on(d);
    CK(cuMemcpyDtoH(&v, p + 4 * i, 4));
    digest = (digest ^ v) * 1099511628211ull;
    return v;
}

/* p[i] += v on device d, on its default stream or its own. */
static void add(int d, CUdeviceptr p, uint32_t v, int own_stream)
{
    on(d);
    linked_launch(add_fn[d], own_stream ? own[d] : NULL, p, N, v, 0);
}

/* Does p belong to device d and its context? */
static int owned_by(int d, CUdeviceptr p)
{
    int ordinal = -1;
    CUcontext c = NULL;
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   CU_POINTER_ATTRIBUTE_CONTEXT};
    void *data[] = {&ordinal, &c};
    on(d);
    CK(cuPointerGetAttributes(2, attrs, data, p));
    return ordinal == d && c == ctx[d];
}

static int all_equal(int d, CUdeviceptr p, uint32_t want)
{
    static uint32_t h[N];
    on(d);
    CK(cuMemcpyDtoH(h, p, sizeof h));
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= h[i] == want;
    return ok;
}

int main(int argc, char **argv)
{
    static char ptx[1 << 16];
    FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
    int rounds = argc > 2 ? atoi(argv[2]) : 40, count = 0;
    if (!f) {
        fprintf(stderr, "usage: %s KERNELS.PTX [ROUNDS]\n", argv[0]);
        return 2;
    }
    ptx[fread(ptx, 1, sizeof ptx - 1, f)] = 0;
    fclose(f);
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&count) != CUDA_SUCCESS || count < DEVS) {
        fprintf(stderr, "SKIP: fewer than two devices (%d)\n", count);
        return 77;
    }
    for (int d = 0; d < DEVS; d++) {
        CUdevice dev;
        CUmodule mod;
        CK(cuDeviceGet(&dev, d));
        CK(cuDevicePrimaryCtxRetain(&ctx[d], dev));
        on(d);
        CK(cuModuleLoadData(&mod, ptx)); /* modules belong to a context */
        CK(cuModuleGetFunction(&fill_fn[d], mod, "fill"));
        CK(cuModuleGetFunction(&add_fn[d], mod, "add"));
        CK(cuStreamCreate(&own[d], CU_STREAM_NON_BLOCKING));
    }
    int can01 = 0, can10 = 0;
    CK(cuDeviceCanAccessPeer(&can01, 0, 1));
    CK(cuDeviceCanAccessPeer(&can10, 1, 0));
    printf("devices=%d peer=%d%d\n", count, can01, can10);

    CUdeviceptr buf[DEVS];
    uint32_t model[DEVS];
    int attrs_ok = 1, reads_ok = 1, peer_ok = 1, scratch_ok = 1;
    for (int d = 0; d < DEVS; d++) {
        on(d);
        CK(cuMemAlloc(&buf[d], 4 * N));
        on(d);
        linked_launch(fill_fn[d], NULL, buf[d], N, 10 + (uint32_t)d, 0);
        model[d] = 10 + (uint32_t)d;
        attrs_ok &= owned_by(d, buf[d]);
    }
    CUevent ev;
    on(1);
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    for (int r = 0; r < rounds; r++) {
        uint32_t k = 3 + (uint32_t)r % 5;
        for (int d = 0; d < DEVS; d++) { /* the same work on both, switched per call */
            add(d, buf[d], k + (uint32_t)d, r % 2);
            model[d] += k + (uint32_t)d;
            if (r % 2) { /* the own stream orders with nothing: wait for it */
                on(d);
                CK(cuStreamSynchronize(own[d]));
            }
        }
        for (int d = 0; d < DEVS; d++)
            reads_ok &= word(d, buf[d], (size_t)(r * 97 + d) % N) == model[d];
        if (r % 4 == 1) { /* device 0 to 1, the copy issued from either */
            on(r % 8 == 1 ? 0 : 1);
            CK(cuMemcpyPeer(buf[1], ctx[1], buf[0], ctx[0], 4 * N));
            model[1] = model[0];
            peer_ok &= word(1, buf[1], (size_t)r) == model[1];
        } else if (r % 4 == 3) { /* device 1 to 0 on 0's stream, behind 1's kernel */
            add(1, buf[1], 1, 0);
            model[1] += 1;
            on(1);
            CK(cuEventRecord(ev, NULL));
            on(0);
            CK(cuStreamWaitEvent(own[0], ev, 0));
            on(0);
            CK(cuMemcpyPeerAsync(buf[0], ctx[0], buf[1], ctx[1], 4 * N, own[0]));
            on(0);
            CK(cuStreamSynchronize(own[0]));
            model[0] = model[1];
            peer_ok &= word(0, buf[0], (size_t)r) == model[0];
        }
        /* Scratch: a block of one size each round on each device; the kernel
         * last queued on it (on the own stream) is still queued at the free,
         * and must neither land in the next round's block nor be lost. */
        for (int d = 0; d < DEVS; d++) {
            CUdeviceptr s;
            on(d);
            CK(cuMemAlloc(&s, 4 * N));
            attrs_ok &= owned_by(d, s);
            on(d);
            CK(cuMemcpyDtoD(s, buf[d], 4 * N));
            add(d, s, 1, 0);
            uint32_t v1 = word(d, s, (size_t)(r * 31) % N);
            on(d);
            CK(cuStreamSynchronize(own[d]));
            uint32_t v2 = word(d, s, (size_t)(r * 31 + 1) % N);
            scratch_ok &= v1 == model[d] + 1 && v2 == model[d] + 1;
            add(d, s, 5, 1);
            on(d);
            CK(cuMemFree(s));
        }
    }
    printf("attributes ok=%d\n", verdict(attrs_ok));
    printf("reads ok=%d\n", verdict(reads_ok));
    printf("peer copies ok=%d\n", verdict(peer_ok));
    printf("scratch ok=%d\n", verdict(scratch_ok));

    /* Device 1's kernel writes device 0's buffer, once 1 may reach 0. */
    on(1);
    CUresult enable = cuCtxEnablePeerAccess(ctx[0], 0);
    on(0);
    CUresult enable0 = cuCtxEnablePeerAccess(ctx[1], 0);
    on(1);
    CUresult again = cuCtxEnablePeerAccess(ctx[0], 0);
    printf("enable codes=%d %d %d\n", (int)enable, (int)enable0, (int)again);
    on(1);
    linked_launch(add_fn[1], own[1], buf[0], N, 7, 0);
    on(1);
    CK(cuStreamSynchronize(own[1]));
    model[0] += 7;
    printf("peer kernel ok=%d\n", verdict(word(0, buf[0], 5) == model[0]));
    int equal = 1;
    for (int d = 0; d < DEVS; d++)
        equal &= all_equal(d, buf[d], model[d]);
    printf("buffers ok=%d\n", verdict(equal));
    for (int d = 0; d < DEVS; d++) {
        on(d);
        CK(cuMemFree(buf[d]));
        on(d);
        CK(cuStreamDestroy(own[d]));
    }
    on(1);
    CK(cuEventDestroy(ev));
    printf("digest=%016llx\n", (unsigned long long)digest);
    return verdicts();
}
