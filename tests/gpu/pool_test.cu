// pool_test.cu - what the pool must keep true, checked with and without it:
//   slow_free  a buffer freed while a slow kernel on a non-blocking stream still
//              writes it is not handed out again until that kernel ends
//   threads    eight host threads allocating, launching, checking and freeing
//   big_alloc  nearly all free memory can still be allocated after churn
//   meminfo    cudaMemGetInfo after a free shows the memory as free
//   ipc        an IPC handle of a (reused) block opens in a second process
//   contexts   two driver contexts allocate and free independently
//   no_context a thread with no current context frees blocks (the driver frees
//              a pointer in its own context whatever is current), once while
//              a kernel runs and once idle; the memory is then reused
// Prints one line per check ("NAME ... ok=0|1"), and exits 1 when any fails;
// the library must not change any of them.
#include <cuda.h>
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <sys/wait.h>

#include "check.cuh"

__global__ void slow_fill(unsigned *p, size_t n, unsigned v, long long spin)
{
    long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = v;
}

__global__ void fill(unsigned *p, size_t n, unsigned v)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = v + (unsigned)i;
}

static bool all_bytes(const unsigned *h, size_t n, unsigned v)
{
    for (size_t i = 0; i < n; i++)
        if (h[i] != v)
            return false;
    return true;
}

static void slow_free()
{
    const size_t n = 1 << 22;
    int ok = 1;
    for (int round = 0; round < 3; round++) {
        cudaStream_t s;
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        unsigned *x, *y;
        CK(cudaMalloc(&x, n * 4));
        slow_fill<<<64, 256, 0, s>>>(x, n, 0xdeadbeef, 200000000LL); // ~100 ms
        CK(cudaFree(x));  // natively a device-wide wait; in the pool a fence
        CK(cudaMalloc(&y, n * 4));
        CK(cudaMemset(y, 0x11, n * 4)); // legacy stream: does not wait for s
        CK(cudaDeviceSynchronize());
        unsigned *h = (unsigned *)malloc(n * 4);
        CK(cudaMemcpy(h, y, n * 4, cudaMemcpyDeviceToHost));
        ok &= all_bytes(h, n, 0x11111111u);
        free(h);
        CK(cudaFree(y));
        CK(cudaStreamDestroy(s));
    }
    printf("slow_free ok=%d\n", verdict(ok));
}

static void *thread_main(void *arg)
{
    long id = (long)arg;
    unsigned seed = 1234 + (unsigned)id;
    int ok = 1;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, id % 2 ? cudaStreamNonBlocking : cudaStreamDefault));
    for (int it = 0; it < 200; it++) {
        size_t n = 1024 + rand_r(&seed) % (1 << 20);
        unsigned *d, probe[4];
        CK(cudaMalloc(&d, n * 4));
        unsigned v = (unsigned)(id << 24) + (unsigned)it * 977;
        fill<<<32, 256, 0, s>>>(d, n, v);
        size_t at[4] = {0, n / 3, n / 2, n - 1};
        for (int k = 0; k < 4; k++)
            CK(cudaMemcpyAsync(&probe[k], d + at[k], 4, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        for (int k = 0; k < 4; k++)
            ok &= probe[k] == v + (unsigned)at[k];
        CK(cudaFree(d));
    }
    CK(cudaStreamDestroy(s));
    return (void *)(long)ok;
}

static void threads()
{
    pthread_t t[8];
    for (long i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, thread_main, (void *)i);
    int ok = 1;
    for (int i = 0; i < 8; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok &= r != NULL;
    }
    printf("threads ok=%d\n", verdict(ok));
}

static void churn()
{
    for (int i = 0; i < 200; i++) {
        void *p;
        CK(cudaMalloc(&p, ((size_t)1 << (12 + i % 16)) + (size_t)i * 4096));
        CK(cudaFree(p));
    }
}

static void big_alloc()
{
    churn();
    size_t free_b, total;
    CK(cudaMemGetInfo(&free_b, &total));
    size_t want = free_b - ((size_t)512 << 20);
    void *p;
    cudaError_t e = cudaMalloc(&p, want);
    printf("big_alloc ok=%d\n", verdict(e == cudaSuccess));
    if (e == cudaSuccess) {
        CK(cudaMemset(p, 1, want));
        CK(cudaFree(p));
    }
    cudaGetLastError();
}

static void meminfo()
{
    size_t f0, f1, total;
    CK(cudaMemGetInfo(&f0, &total));
    void *p;
    CK(cudaMalloc(&p, (size_t)1 << 30));
    CK(cudaFree(p));
    CK(cudaMemGetInfo(&f1, &total));
    long long diff = (long long)f0 - (long long)f1;
    printf("meminfo ok=%d\n", verdict(diff < (64ll << 20) && diff > -(64ll << 20)));
}

static int ipc_child(const char *hex)
{
    cudaIpcMemHandle_t h;
    for (size_t i = 0; i < sizeof h; i++)
        sscanf(hex + 2 * i, "%2hhx", (unsigned char *)&h + i);
    unsigned *d, v[4];
    CK(cudaIpcOpenMemHandle((void **)&d, h, cudaIpcMemLazyEnablePeerAccess));
    CK(cudaMemcpy(v, d, sizeof v, cudaMemcpyDeviceToHost));
    CK(cudaIpcCloseMemHandle(d));
    return v[0] == 4242 && v[3] == 4245 ? 0 : 1;
}

static void ipc(const char *self)
{
    unsigned *d;
    CK(cudaMalloc(&d, 1 << 20));
    CK(cudaFree(d));
    CK(cudaMalloc(&d, 1 << 20)); // from the pool when it is on
    fill<<<4, 256>>>(d, 1 << 18, 4242);
    CK(cudaDeviceSynchronize());
    cudaIpcMemHandle_t h;
    CK(cudaIpcGetMemHandle(&h, d));
    char hex[2 * sizeof h + 1];
    for (size_t i = 0; i < sizeof h; i++)
        sprintf(hex + 2 * i, "%02x", ((unsigned char *)&h)[i]);
    pid_t pid = fork();
    if (pid == 0) {
        execl(self, self, "--ipc-child", hex, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("ipc ok=%d\n", verdict(WIFEXITED(status) && WEXITSTATUS(status) == 0));
    CK(cudaFree(d));
}

static void contexts()
{
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CUcontext saved, c[2];
    CU(cuCtxGetCurrent(&saved));
    int ok = 1;
    for (int k = 0; k < 2; k++) {
        CUctxCreateParams params = {};
        CU(cuCtxCreate(&c[k], &params, 0, dev));
        CU(cuCtxPopCurrent(&c[k]));
    }
    for (int round = 0; round < 4; round++)
        for (int k = 0; k < 2; k++) {
            CU(cuCtxPushCurrent(c[k]));
            CUdeviceptr p;
            unsigned v = 0;
            CU(cuMemAlloc(&p, 1 << 16));
            CU(cuMemsetD32(p, 100 * k + round, 1 << 14));
            CU(cuMemcpyDtoH(&v, p + 4000, 4));
            ok &= v == (unsigned)(100 * k + round);
            CU(cuMemFree(p));
            CUcontext out;
            CU(cuCtxPopCurrent(&out));
        }
    for (int k = 0; k < 2; k++)
        CU(cuCtxDestroy(c[k]));
    CU(cuCtxSetCurrent(saved));
    printf("contexts ok=%d\n", verdict(ok));
}

struct contextless {
    CUdeviceptr p;
    CUresult get, free;
    bool none; /* no context was current on the freeing thread */
};

static void *free_without_context(void *arg)
{
    contextless *c = (contextless *)arg;
    CUcontext cur = (CUcontext)1;
    c->get = cuCtxGetCurrent(&cur);
    c->none = cur == NULL;
    c->free = cuMemFree(c->p);
    return NULL;
}

static void no_context()
{
    const size_t n = 1 << 20;
    int ok = 1;
    contextless c[2];
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned *busy, *h = (unsigned *)malloc(n * 4);
    CK(cudaMalloc(&busy, n * 4));
    for (int k = 0; k < 2; k++) {
        unsigned *x, *y;
        CK(cudaMalloc(&x, n * 4));
        fill<<<64, 256>>>(x, n, 7u);
        if (k == 0) /* the context is busy while the free happens */
            slow_fill<<<64, 256, 0, s>>>(busy, n, 1u, 50000000LL);
        else
            CK(cudaDeviceSynchronize());
        c[k].p = (CUdeviceptr)x;
        pthread_t t;
        ok &= pthread_create(&t, NULL, free_without_context, &c[k]) == 0;
        ok &= pthread_join(t, NULL) == 0;
        CK(cudaMalloc(&y, n * 4));
        fill<<<64, 256>>>(y, n, 1000u * (k + 1));
        CK(cudaMemcpy(h, y, n * 4, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++)
            ok &= h[i] == 1000u * (k + 1) + (unsigned)i;
        CK(cudaFree(y));
    }
    CK(cudaDeviceSynchronize());
    CK(cudaFree(busy));
    CK(cudaStreamDestroy(s));
    free(h);
    printf("no_context get=%d,%d none=%d,%d free=%d,%d ok=%d\n", (int)c[0].get, (int)c[1].get,
           (int)c[0].none, (int)c[1].none, (int)c[0].free, (int)c[1].free, verdict(ok));
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--ipc-child"))
        return ipc_child(argv[2]);
    skip_without_gpu();
    CK(cudaFree(0));
    slow_free();
    threads();
    big_alloc();
    meminfo();
    ipc(argv[0]);
    contexts();
    no_context();
    return verdicts();
}
