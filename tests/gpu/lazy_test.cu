// lazy_test.cu - what a program sees on the host when synchronizations may be
// deferred (GPUACCEL_LAZY_SYNC): every result here is checked against a host
// reference and printed, so a native run and a library run must print the same.
//   lazy_test MODE SEED
// MODE:
//   chain     stwo-style: a kernel and cudaDeviceSynchronize, over and over,
//             then the data read and compared with the host's computation
//   zerocopy  a kernel writes mapped host memory, then cudaDeviceSynchronize:
//             the host reads the value at once
//   pinned    cudaMemcpyAsync into page-locked memory, cudaStreamSynchronize,
//             the host reads it
//   hostfunc  a host function after a kernel, cudaStreamSynchronize: it ran
//   events    events around a 2 ms kernel, cudaDeviceSynchronize, then the
//             elapsed time: at least the kernel's
//   printf    device printf, cudaDeviceSynchronize, a read, a host line
//   threads   4 threads: each synchronizes its own stream's kernels; pairs
//             hand buffers over (writer synchronizes the device, then a
//             barrier, then the reader copies on its own non-blocking stream)
//   fork      a deferred synchronization, fork (the child exits without CUDA),
//             then the parent reads
//   capture   deferred synchronizations, then a stream capture in global
//             mode, the graph launched, the result read
//   fault     a kernel writing through a bad pointer, cudaDeviceSynchronize,
//             then a read: prints both error codes (these differ by design:
//             the read reports what the deferred synchronization would have)
// Each check prints a line with "ok=0|1" (printf and fault print what they
// saw: tests/gpu/lazy.sh checks those); a mode exits 1 when a check failed.
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.cuh"

__host__ __device__ static uint32_t mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

__global__ void step(uint32_t *p, uint32_t n, uint32_t k)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = mix(p[i] + k);
}

static void step_host(uint32_t *p, uint32_t n, uint32_t k)
{
    for (uint32_t i = 0; i < n; i++)
        p[i] = mix(p[i] + k);
}

__global__ void spin_ns(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

__global__ void write_flag(volatile uint32_t *flag, uint32_t v) { *flag = v; }

__global__ void say(uint32_t v) { printf("device line %u\n", v + threadIdx.x); }

__global__ void bad_write(uint32_t *p) { p[threadIdx.x] = 1; }

enum { N = 1 << 16 };
static uint32_t seed;

static void fill(uint32_t *h, uint32_t n, uint32_t s)
{
    for (uint32_t i = 0; i < n; i++)
        h[i] = mix(s ^ i);
}

static int chain(void)
{
    static uint32_t h[N], ref[N];
    uint32_t *d;
    fill(h, N, seed);
    memcpy(ref, h, sizeof h);
    CK(cudaMalloc(&d, sizeof h));
    CK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    for (uint32_t k = 0; k < 200; k++) {
        step<<<N / 256, 256>>>(d, N, k);
        CK(cudaDeviceSynchronize());
        step_host(ref, N, k);
        if (k % 50 == 49) { // a read in the middle observes every step before it
            CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
            printf("chain step %u ok=%d\n", k, verdict(!memcmp(h, ref, sizeof h)));
        }
    }
    CK(cudaFree(d));
    return verdicts();
}

static int zerocopy(void)
{
    volatile uint32_t *flag;
    uint32_t *dflag;
    CK(cudaHostAlloc((void **)&flag, 4, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&dflag, (void *)flag, 0));
    unsigned ok = 0;
    for (uint32_t k = 1; k <= 100; k++) {
        spin_ns<<<1, 1>>>(20000);
        write_flag<<<1, 1>>>(dflag, mix(seed + k));
        CK(cudaDeviceSynchronize());
        ok += *flag == mix(seed + k);
    }
    printf("zerocopy %u of 100 ok=%d\n", ok, verdict(ok == 100));
    CK(cudaFreeHost((void *)flag));
    return verdicts();
}

static int pinned(void)
{
    uint32_t *h, *d;
    cudaStream_t s;
    CK(cudaMallocHost(&h, N * 4));
    CK(cudaMalloc(&d, N * 4));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMemsetAsync(d, 0, N * 4, s));
    static uint32_t ref[N];
    memset(ref, 0, sizeof ref);
    unsigned ok = 0;
    for (uint32_t k = 0; k < 50; k++) {
        step<<<N / 256, 256, 0, s>>>(d, N, seed + k);
        step_host(ref, N, seed + k);
        CK(cudaMemcpyAsync(h, d, N * 4, cudaMemcpyDeviceToHost, s));
        CK(cudaStreamSynchronize(s));
        ok += !memcmp(h, ref, N * 4);
    }
    printf("pinned %u of 50 ok=%d\n", ok, verdict(ok == 50));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(d));
    CK(cudaFreeHost(h));
    return verdicts();
}

static volatile uint32_t host_seen;
static void CUDART_CB host_fn(void *arg) { host_seen = (uint32_t)(uintptr_t)arg; }

static int hostfunc(void)
{
    cudaStream_t s;
    uint32_t *d;
    CK(cudaMalloc(&d, N * 4));
    CK(cudaStreamCreate(&s));
    unsigned ok = 0;
    for (uint32_t k = 1; k <= 100; k++) {
        step<<<N / 256, 256, 0, s>>>(d, N, k);
        CK(cudaStreamSynchronize(s)); // deferrable: nothing host-visible yet
        spin_ns<<<1, 1, 0, s>>>(10000);
        CK(cudaLaunchHostFunc(s, host_fn, (void *)(uintptr_t)(seed + k)));
        CK(cudaStreamSynchronize(s));
        ok += host_seen == seed + k;
    }
    printf("hostfunc %u of 100 ok=%d\n", ok, verdict(ok == 100));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(d));
    return verdicts();
}

static int events(void)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    unsigned ok = 0;
    for (int k = 0; k < 10; k++) {
        CK(cudaEventRecord(a));
        spin_ns<<<1, 1>>>(2000000);
        CK(cudaEventRecord(b));
        CK(cudaDeviceSynchronize());
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        ok += ms >= 1.9f;
    }
    printf("events %u of 10 ok=%d\n", ok, verdict(ok == 10));
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return verdicts();
}

static int printf_mode(void)
{
    uint32_t *d, v = 0;
    CK(cudaMalloc(&d, 4));
    CK(cudaMemset(d, 0, 4));
    for (uint32_t k = 0; k < 3; k++) {
        say<<<1, 2>>>(seed % 1000 + 10 * k);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(&v, d, 4, cudaMemcpyDeviceToHost));
        printf("host line %u\n", k);
        fflush(stdout);
    }
    CK(cudaFree(d));
    return 0;
}

/* ---- threads ---- */
enum { THREADS = 4, ROUNDS = 40 };
static pthread_barrier_t bar;
static uint32_t *shared_buf[THREADS];
static unsigned thread_ok[THREADS];

static void *worker(void *arg)
{
    int me = (int)(intptr_t)arg, peer = me ^ 1;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    static uint32_t refs[THREADS][N];
    uint32_t *ref = refs[me], *h = (uint32_t *)malloc(N * 4);
    fill(ref, N, seed + me);
    CK(cudaMemcpyAsync(shared_buf[me], ref, N * 4, cudaMemcpyHostToDevice, s));
    CK(cudaStreamSynchronize(s));
    pthread_barrier_wait(&bar);
    for (uint32_t r = 0; r < ROUNDS; r++) {
        if ((r + me) % 2 == 0) { // write my buffer, synchronize the device
            step<<<N / 256, 256, 0, s>>>(shared_buf[me], N, r);
            step_host(ref, N, r);
            CK(cudaStreamSynchronize(s));
            CK(cudaDeviceSynchronize());
        }
        pthread_barrier_wait(&bar);
        if ((r + me) % 2 == 1) { // the peer wrote: read its buffer on my stream
            CK(cudaMemcpyAsync(h, shared_buf[peer], N * 4, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            uint32_t tmp[N];
            memcpy(tmp, refs[peer], sizeof tmp);
            thread_ok[me] += !memcmp(h, tmp, N * 4);
        }
        pthread_barrier_wait(&bar);
    }
    free(h);
    CK(cudaStreamDestroy(s));
    return NULL;
}

static int threads(void)
{
    pthread_t t[THREADS];
    pthread_barrier_init(&bar, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        CK(cudaMalloc(&shared_buf[i], N * 4));
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        printf("thread %d %u of %d ok=%d\n", i, thread_ok[i], ROUNDS / 2,
               verdict(thread_ok[i] == ROUNDS / 2));
        CK(cudaFree(shared_buf[i]));
    }
    return verdicts();
}

static int fork_mode(void)
{
    static uint32_t h[N], ref[N];
    uint32_t *d;
    fill(ref, N, seed);
    CK(cudaMalloc(&d, N * 4));
    CK(cudaMemcpy(d, ref, N * 4, cudaMemcpyHostToDevice));
    for (uint32_t k = 0; k < 20; k++) {
        step<<<N / 256, 256>>>(d, N, k);
        step_host(ref, N, k);
        CK(cudaDeviceSynchronize());
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
        _exit(7); // no CUDA in the child
    int status = 0;
    waitpid(pid, &status, 0);
    CK(cudaMemcpy(h, d, N * 4, cudaMemcpyDeviceToHost));
    int equal = !memcmp(h, ref, sizeof h);
    printf("fork child=%d ok=%d\n", WEXITSTATUS(status),
           verdict(WIFEXITED(status) && WEXITSTATUS(status) == 7 && equal));
    CK(cudaFree(d));
    return verdicts();
}

static int capture(void)
{
    static uint32_t h[N], ref[N];
    uint32_t *d;
    cudaStream_t s;
    fill(ref, N, seed);
    CK(cudaMalloc(&d, N * 4));
    CK(cudaMemcpy(d, ref, N * 4, cudaMemcpyHostToDevice));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (uint32_t k = 0; k < 10; k++) { // owed waits when the capture begins
        step<<<N / 256, 256, 0, s>>>(d, N, k);
        step_host(ref, N, k);
        CK(cudaDeviceSynchronize());
    }
    cudaGraph_t g;
    cudaGraphExec_t x;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (uint32_t k = 100; k < 105; k++)
        step<<<N / 256, 256, 0, s>>>(d, N, k);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&x, g, 0));
    for (int rep = 0; rep < 3; rep++) {
        CK(cudaGraphLaunch(x, s));
        for (uint32_t k = 100; k < 105; k++)
            step_host(ref, N, k);
        CK(cudaStreamSynchronize(s));
    }
    CK(cudaMemcpy(h, d, N * 4, cudaMemcpyDeviceToHost));
    printf("capture ok=%d\n", verdict(!memcmp(h, ref, sizeof h)));
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s));
    CK(cudaFree(d));
    return verdicts();
}

static int fault(void)
{
    uint32_t *d, v;
    CK(cudaMalloc(&d, 4));
    bad_write<<<1, 32>>>((uint32_t *)0x10);
    cudaError_t s = cudaDeviceSynchronize();
    cudaError_t r = cudaMemcpy(&v, d, 4, cudaMemcpyDeviceToHost);
    printf("fault sync=%d read=%d\n", (int)s, (int)r);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODE SEED\n", argv[0]);
        return 2;
    }
    skip_without_gpu();
    seed = (uint32_t)strtoul(argv[2], NULL, 0);
    static const struct {
        const char *name;
        int (*run)(void);
    } modes[] = {{"chain", chain},       {"zerocopy", zerocopy}, {"pinned", pinned},
                 {"hostfunc", hostfunc}, {"events", events},     {"printf", printf_mode},
                 {"threads", threads},   {"fork", fork_mode},    {"capture", capture},
                 {"fault", fault}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (!strcmp(argv[1], modes[i].name))
            return modes[i].run();
    fprintf(stderr, "%s: unknown mode %s\n", argv[0], argv[1]);
    return 2;
}
