/* defer_prog.c - orders a program relies on, for the fake driver's deferred
 * completion (FAKECUDA_DEFER: work waits in its stream until something waits
 * for it). Runs against tests/fake.
 *   defer_prog KERNELS.PTX fake      the stand-in's own rules, natively under
 *                                    FAKECUDA_DEFER (large enough that no work
 *                                    completes on its own): "NAME ok=0|1" lines
 *   defer_prog KERNELS.PTX aging     a kernel queued on a stream, then queries
 *                                    of the stream until it says done: "done
 *                                    after queries=K value=V"
 *   defer_prog KERNELS.PTX fence [N] N x (a kernel that adds to a block is
 *                                    queued on a non-blocking stream, the block
 *                                    freed, a block of its size allocated and
 *                                    written, read, that stream waited for, read
 *                                    again): cuMemFree waits for the queued
 *                                    kernel, so both reads see the new data
 *   defer_prog KERNELS.PTX fence-gone [N]  the same with a stream made each
 *                                    round and destroyed while its kernel is
 *                                    still queued, before the free (a stream
 *                                    per call): the free still waits for it
 *   defer_prog KERNELS.PTX pinned [N] N x (page-locked memory with a copy from
 *                                    it and one into it queued on a non-blocking
 *                                    stream when it is freed; page-locked memory
 *                                    of its size allocated and written; that
 *                                    stream waited for): cuMemFreeHost waits
 *                                    for the copies, so the device holds the
 *                                    first data and the new memory its own
 *   defer_prog KERNELS.PTX settle [N] N x (add 1 on a non-blocking stream,
 *                                    cuCtxSynchronize, a synchronous 4-byte read,
 *                                    which the legacy stream does not order
 *                                    after that stream: the context's
 *                                    synchronization is what makes it right)
 * fence, fence-gone, pinned and settle print "bad=<n>" (values that were not the program's) and
 * exit 1 when n > 0. */
#define _GNU_SOURCE
#include "linked.h"
#include "verdict.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

enum { N = 4096 };

static CUfunction fill, add;

static uint32_t read_word(CUdeviceptr p)
{
    uint32_t v;
    CK(cuMemcpyDtoH(&v, p, 4));
    return v;
}

static unsigned host_calls;
static uint32_t host_saw;

/* A host function may not call CUDA: it reads the word through the fake's
 * back door (the device memory's host backing), as a device would see it. */
static void count_call(void *arg)
{
    void (*peek)(void *, CUdeviceptr, size_t) =
        (void (*)(void *, CUdeviceptr, size_t))dlsym(RTLD_DEFAULT, "fakecuda_peek");
    if (peek)
        peek(&host_saw, *(CUdeviceptr *)arg, 4);
    host_calls++;
}

static void fake_rules(void)
{
    CUstream nb, nb2, blk;
    CUdeviceptr p;
    CUevent e;
    uint32_t *pinned, v = 0;
    CK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&nb2, CU_STREAM_NON_BLOCKING));
    CK(cuStreamCreate(&blk, CU_STREAM_DEFAULT));
    CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CK(cuMemHostAlloc((void **)&pinned, 4 * N, 0));
    CK(cuMemAlloc(&p, 4 * N));
    CK(cuMemsetD32(p, 0, N));
    CK(cuCtxSynchronize());

    /* Work on a non-blocking stream waits there: the legacy stream's read
     * does not wait for it, the stream's synchronization does. */
    linked_launch(fill, nb, p, N, 1, 0);
    int queued = cuStreamQuery(nb) == CUDA_ERROR_NOT_READY;
    uint32_t before = read_word(p);
    CK(cuStreamSynchronize(nb));
    printf("non-blocking waits ok=%d\n", verdict(queued && before == 0 && read_word(p) == 1));

    /* The legacy stream waits for a blocking stream's earlier work. */
    linked_launch(fill, blk, p, N, 2, 0);
    printf("legacy after blocking ok=%d\n", verdict(read_word(p) == 2));

    /* An asynchronous copy to page-locked memory lands in stream order; to
     * pageable memory it is done on return. */
    linked_launch(fill, nb, p, N, 3, 0);
    pinned[0] = 0;
    CK(cuMemcpyDtoHAsync(pinned, p, 4, nb));
    uint32_t early = pinned[0];
    CK(cuStreamSynchronize(nb));
    printf("pinned copy in order ok=%d\n", verdict(early == 0 && pinned[0] == 3));
    linked_launch(fill, nb, p, N, 4, 0);
    CK(cuMemcpyDtoHAsync(&v, p, 4, nb));
    printf("pageable copy on return ok=%d\n", verdict(v == 4));

    /* An event: not ready until its record is reached; a wait on it orders
     * another stream after it, as the record stood when the wait was made. */
    linked_launch(fill, nb, p, N, 5, 0);
    CK(cuEventRecord(e, nb));
    int not_ready = cuEventQuery(e) == CUDA_ERROR_NOT_READY;
    CK(cuStreamWaitEvent(nb2, e, 0));
    linked_launch(fill, nb, p, N, 6, 0); /* after the record: not waited for */
    CK(cuEventRecord(e, nb));            /* a new record: the wait keeps the old */
    CK(cuMemcpyDtoHAsync(pinned, p, 4, nb2));
    CK(cuStreamSynchronize(nb2));
    uint32_t seen = pinned[0];
    CK(cuEventSynchronize(e));
    printf("event order ok=%d\n", verdict(not_ready && seen == 5 && read_word(p) == 6 &&
                                          cuEventQuery(e) == CUDA_SUCCESS));

    /* A host function runs in its stream's order, after the kernel before it. */
    linked_launch(fill, nb, p, N, 7, 0);
    CK(cuLaunchHostFunc(nb, count_call, &p));
    unsigned queued_calls = host_calls;
    CK(cuCtxSynchronize());
    printf("host function in order ok=%d\n",
           verdict(queued_calls == 0 && host_calls == 1 && host_saw == 7 &&
                   cuStreamQuery(nb) == CUDA_SUCCESS));

    /* cuMemFree waits for every stream. */
    CUdeviceptr q;
    CK(cuMemAlloc(&q, 4 * N));
    CK(cuMemsetD32(q, 0, N));
    linked_launch(fill, nb, p, N, 8, 0);
    CK(cuMemFree(q));
    printf("free synchronizes ok=%d\n", verdict(cuStreamQuery(nb) == CUDA_SUCCESS));

    /* A faulting kernel: its launch succeeds, the wait for it fails. */
    CUfunction fault;
    CUmodule mod;
    CK(cuFuncGetModule(&mod, fill));
    CK(cuModuleGetFunction(&fault, mod, "fault"));
    void *args[] = {&p};
    CUresult launched = cuLaunchKernel(fault, 1, 1, 1, 1, 1, 1, 0, nb, args, NULL);
    CUresult waited = cuStreamSynchronize(nb);
    printf("fault when waited for ok=%d (launch=%d sync=%d)\n",
           verdict(launched == CUDA_SUCCESS && waited == CUDA_ERROR_ILLEGAL_ADDRESS),
           (int)launched, (int)waited);
}

/* A kernel queued on a non-blocking stream still adds to a block when the
 * program frees it; the driver's free waits for it. A pool that handed the
 * block out again without its fence would let it land in the next owner's data.
 * gone: the stream is made each round and destroyed, its kernel still queued,
 * before the free (a stream per call): the fence must cover work on a stream
 * the program no longer has (destroyed, or kept by the streams feature for the
 * next cuStreamCreate), and a context synchronization is the wait. */
static unsigned fence(int rounds, bool gone)
{
    static uint32_t h[N];
    unsigned bad = 0;
    CUstream s = NULL;
    for (int r = 0; r < rounds; r++) {
        CUdeviceptr a, b;
        if (!s)
            CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        CK(cuMemAlloc(&a, 4 * N));
        CK(cuMemsetD32(a, 0, N));
        CK(cuCtxSynchronize());
        linked_launch(add, s, a, N, 1000, 0); /* still queued at the free */
        if (gone) {
            CK(cuStreamDestroy(s));
            s = NULL;
        }
        CK(cuMemFree(a));
        CK(cuMemAlloc(&b, 4 * N));
        for (int i = 0; i < N; i++)
            h[i] = (uint32_t)(r * N + i);
        CK(cuMemcpyHtoD(b, h, sizeof h));
        bad += read_word(b + 4 * 7) != (uint32_t)(r * N + 7);
        CK(s ? cuStreamSynchronize(s) : cuCtxSynchronize());
        CK(cuMemcpyDtoH(h, b, sizeof h));
        for (int i = 0; i < N; i++)
            bad += h[i] != (uint32_t)(r * N + i);
        CK(cuMemFree(b));
    }
    if (s)
        CK(cuStreamDestroy(s));
    return bad;
}

/* Copies queued on a non-blocking stream from and into page-locked memory
 * when the program frees it: the driver's free waits for them. A cache that
 * handed the memory out again before they ran would let the first read the
 * next owner's data and the second overwrite it. */
static unsigned pinned(int rounds)
{
    enum { BYTES = 64 << 10 };
    static uint32_t h[BYTES / 4];
    unsigned bad = 0;
    CUstream s;
    CUdeviceptr up, down;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&up, BYTES));
    CK(cuMemAlloc(&down, BYTES));
    for (int r = 0; r < rounds; r++) {
        uint32_t *a, *b;
        for (int i = 0; i < BYTES / 4; i++)
            h[i] = (uint32_t)(r * 7919 + i);
        CK(cuMemcpyHtoD(down, h, BYTES));
        CK(cuMemHostAlloc((void **)&a, BYTES, 0));
        for (int i = 0; i < BYTES / 4; i++)
            a[i] = (uint32_t)(r * 31 + i);
        CK(cuMemcpyHtoDAsync(up, a, BYTES / 2, s));   /* reads a's first half */
        CK(cuMemcpyDtoHAsync(a + BYTES / 8, down, BYTES / 2, s)); /* writes its second */
        CK(cuMemFreeHost(a));
        CK(cuMemHostAlloc((void **)&b, BYTES, 0));
        for (int i = 0; i < BYTES / 4; i++)
            b[i] = 0xb0b0b0b0u ^ (uint32_t)i;
        CK(cuStreamSynchronize(s));
        for (int i = 0; i < BYTES / 4; i++)
            bad += b[i] != (0xb0b0b0b0u ^ (uint32_t)i);
        CK(cuMemcpyDtoH(h, up, BYTES / 2));
        for (int i = 0; i < BYTES / 8; i++)
            bad += h[i] != (uint32_t)(r * 31 + i);
        CK(cuMemFreeHost(b));
    }
    CK(cuMemFree(up));
    CK(cuMemFree(down));
    CK(cuStreamDestroy(s));
    return bad;
}

/* The context's synchronization covers a non-blocking stream: the legacy
 * stream's read after it sees that stream's kernel. */
static unsigned settle(int rounds)
{
    unsigned bad = 0;
    CUstream s;
    CUdeviceptr p;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&p, 4 * N));
    linked_launch(fill, NULL, p, N, 0, 0);
    CK(cuCtxSynchronize());
    for (int r = 0; r < rounds; r++) {
        linked_launch(add, s, p, N, 1, 0);
        CK(cuCtxSynchronize());
        bad += read_word(p + 4 * (CUdeviceptr)(r % N)) != (uint32_t)r + 1;
    }
    CK(cuMemFree(p));
    CK(cuStreamDestroy(s));
    return bad;
}

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod = linked_setup(argc, argv, &dev, &ctx);
    const char *mode = argc > 2 ? argv[2] : "fake";
    int n = argc > 3 ? atoi(argv[3]) : 20;
    CK(cuModuleGetFunction(&fill, mod, "fill"));
    CK(cuModuleGetFunction(&add, mod, "add"));
    if (!strcmp(mode, "fake")) {
        fake_rules();
        return verdicts();
    }
    if (!strcmp(mode, "aging")) {
        CUstream s;
        CUdeviceptr p;
        unsigned k = 1;
        CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        CK(cuMemAlloc(&p, 4 * N));
        linked_launch(fill, s, p, N, 9, 0);
        while (cuStreamQuery(s) == CUDA_ERROR_NOT_READY && k < 1000000)
            k++;
        printf("done after queries=%u value=%u\n", k, read_word(p));
        return 0;
    }
    unsigned bad = !strcmp(mode, "fence")        ? fence(n, false)
                   : !strcmp(mode, "fence-gone") ? fence(n, true)
                   : !strcmp(mode, "pinned") ? pinned(n)
                                             : settle(n);
    printf("bad=%u\n", bad);
    return bad != 0;
}
