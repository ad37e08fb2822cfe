// capture_test.cu - stream captures through cudart as programs make them,
// each graph replayed and its results checked on the host; run natively and
// under the library (tests/gpu/capture.sh), the output must be the same.
//   mixed    global mode on a created blocking stream: cudaMallocAsync, kernels,
//            an event record, a device-to-host cudaMemcpyAsync, a second stream
//            joined through cudaStreamWaitEvent and destroyed while the capture
//            is open, cudaFreeAsync; after allocation churn with kernels in
//            flight (the pool then holds blocks behind pending fences)
//   modes    global, thread-local and relaxed captures of the same kernels
//   ptds     a capture on cudaStreamPerThread
//   thread   a thread-local capture while a second thread allocates, copies,
//            synchronizes its stream and frees (4-byte reads included)
//   invalid  the program's own cudaMalloc in a global capture: the end fails
//            with the driver's error, later work runs as always
//   churn    after all captures: small reads and allocation churn, so the
//            features still serve (their counters show it under the library)
// usage: capture_test [CHECK...]  -> "NAME ok=0|1" per check
#include <cuda_runtime.h>
#include <pthread.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include "check.cuh"

enum { N = 1 << 16, REPLAYS = 3 };

__global__ void fill(uint32_t *p, uint32_t n, uint32_t v)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = v;
}

__global__ void add(uint32_t *p, uint32_t n, uint32_t v)
{
    uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] += v;
}

static void fill_on(cudaStream_t s, uint32_t *p, uint32_t v) { fill<<<N / 256, 256, 0, s>>>(p, N, v); }
static void add_on(cudaStream_t s, uint32_t *p, uint32_t v) { add<<<N / 256, 256, 0, s>>>(p, N, v); }

static bool holds(const uint32_t *d, uint32_t want)
{
    static uint32_t h[N];
    CK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++)
        if (h[i] != want)
            return false;
    return true;
}

static void replay(cudaGraph_t g, cudaStream_t s, int times)
{
    cudaGraphExec_t x;
    CK(cudaGraphInstantiate(&x, g, 0));
    for (int i = 0; i < times; i++)
        CK(cudaGraphLaunch(x, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaGraphExecDestroy(x));
    CK(cudaGraphDestroy(g));
}

static void churn(cudaStream_t busy)
{
    uint32_t *p[8];
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 8; i++) {
            CK(cudaMalloc(&p[i], N * 4 + (size_t)i * 4096));
            fill_on(busy, p[i], (uint32_t)i);
        }
        for (int i = 0; i < 8; i++)
            CK(cudaFree(p[i]));
    }
}

static bool check_mixed()
{
    cudaStream_t s, busy, side;
    cudaEvent_t forked, joined;
    uint32_t *a, *b, *seen;
    CK(cudaStreamCreate(&s));
    CK(cudaStreamCreateWithFlags(&busy, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
    CK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
    CK(cudaMallocHost(&seen, sizeof *seen));
    *seen = 0;
    CK(cudaMalloc(&a, N * 4));
    CK(cudaMalloc(&b, N * 4));
    fill_on(s, a, 0);
    fill_on(s, b, 0);
    CK(cudaStreamSynchronize(s));
    churn(busy);

    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    uint32_t *tmp;
    CK(cudaMallocAsync(&tmp, N * 4, s));
    fill_on(s, tmp, 5);
    add_on(s, a, 1);
    CK(cudaEventRecord(forked, s));
    CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking)); // during the capture
    CK(cudaStreamWaitEvent(side, forked, 0));
    add_on(side, b, 2);
    CK(cudaEventRecord(joined, side));
    CK(cudaStreamWaitEvent(s, joined, 0));
    CK(cudaMemcpyAsync(seen, tmp + 17, sizeof *seen, cudaMemcpyDeviceToHost, s));
    CK(cudaFreeAsync(tmp, s));
    CK(cudaStreamDestroy(side)); // while the capture is open
    cudaGraph_t g;
    cudaError_t end = cudaStreamEndCapture(s, &g);
    if (end != cudaSuccess) {
        printf("mixed: cudaStreamEndCapture: %d (%s)\n", (int)end, cudaGetErrorString(end));
        return false;
    }
    bool ok = holds(a, 0) && holds(b, 0);
    replay(g, s, REPLAYS);
    ok = ok && holds(a, REPLAYS) && holds(b, 2 * REPLAYS) && *seen == 5;
    churn(busy);
    CK(cudaStreamSynchronize(busy));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaFreeHost(seen));
    CK(cudaEventDestroy(forked));
    CK(cudaEventDestroy(joined));
    CK(cudaStreamDestroy(busy));
    CK(cudaStreamDestroy(s));
    return ok;
}

static bool check_modes()
{
    const cudaStreamCaptureMode modes[] = {cudaStreamCaptureModeGlobal,
                                           cudaStreamCaptureModeThreadLocal,
                                           cudaStreamCaptureModeRelaxed};
    cudaStream_t s;
    uint32_t *a;
    bool ok = true;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&a, N * 4));
    for (cudaStreamCaptureMode m : modes) {
        fill_on(s, a, 10);
        CK(cudaStreamSynchronize(s));
        CK(cudaStreamBeginCapture(s, m));
        for (uint32_t k = 1; k <= 6; k++)
            add_on(s, a, k);
        cudaGraph_t g;
        CK(cudaStreamEndCapture(s, &g));
        replay(g, s, 2);
        ok = ok && holds(a, 10 + 2 * 21);
    }
    CK(cudaFree(a));
    CK(cudaStreamDestroy(s));
    return ok;
}

static bool check_ptds()
{
    uint32_t *a;
    CK(cudaMalloc(&a, N * 4));
    fill_on(cudaStreamPerThread, a, 7);
    CK(cudaStreamBeginCapture(cudaStreamPerThread, cudaStreamCaptureModeGlobal));
    add_on(cudaStreamPerThread, a, 3);
    add_on(cudaStreamPerThread, a, 4);
    cudaGraph_t g;
    CK(cudaStreamEndCapture(cudaStreamPerThread, &g));
    replay(g, cudaStreamPerThread, 2);
    bool ok = holds(a, 7 + 2 * 7);
    CK(cudaFree(a));
    return ok;
}

static void *other(void *arg)
{
    bool *ok = static_cast<bool *>(arg);
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *ok = true;
    for (uint32_t round = 0; round < 20; round++) {
        uint32_t *p, one = 0;
        CK(cudaMalloc(&p, N * 4));
        fill_on(s, p, round * 3 + 1);
        CK(cudaStreamSynchronize(s));
        for (int k = 0; k < 8; k++) { // small reads, the kind coalescing serves
            CK(cudaMemcpy(&one, p + 97 * k, sizeof one, cudaMemcpyDeviceToHost));
            *ok = *ok && one == round * 3 + 1;
        }
        CK(cudaFree(p));
    }
    CK(cudaStreamDestroy(s));
    return nullptr;
}

static bool check_thread()
{
    cudaStream_t s;
    uint32_t *a;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&a, N * 4));
    fill_on(s, a, 1);
    CK(cudaStreamSynchronize(s));
    bool other_ok = false;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    pthread_t t;
    if (pthread_create(&t, nullptr, other, &other_ok) != 0)
        return false;
    for (int k = 0; k < 50; k++)
        add_on(s, a, 1);
    pthread_join(t, nullptr);
    cudaGraph_t g;
    CK(cudaStreamEndCapture(s, &g));
    replay(g, s, 2);
    bool ok = other_ok && holds(a, 1 + 2 * 50);
    CK(cudaFree(a));
    CK(cudaStreamDestroy(s));
    return ok;
}

static bool check_invalid()
{
    cudaStream_t s;
    uint32_t *a, *extra = nullptr;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&a, N * 4));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    add_on(s, a, 1);
    cudaError_t unsafe = cudaMalloc(&extra, 4096); // prohibited in a global capture
    cudaGraph_t g = nullptr;
    cudaError_t end = cudaStreamEndCapture(s, &g);
    (void)cudaGetLastError();
    printf("invalid: malloc=%d end=%d graph=%s\n", (int)unsafe, (int)end, g ? "yes" : "no");
    if (unsafe == cudaSuccess)
        CK(cudaFree(extra));
    cudaStreamCaptureStatus st;
    CK(cudaStreamIsCapturing(s, &st));
    fill_on(s, a, 9);
    CK(cudaStreamSynchronize(s));
    bool ok = end != cudaSuccess && !g && st == cudaStreamCaptureStatusNone && holds(a, 9);
    CK(cudaFree(a));
    CK(cudaStreamDestroy(s));
    return ok;
}

static bool check_churn()
{
    uint32_t *a;
    CK(cudaMalloc(&a, N * 4));
    fill_on(nullptr, a, 4);
    uint64_t sum = 0;
    for (int i = 0; i < N; i += 16) {
        uint32_t v;
        CK(cudaMemcpy(&v, a + i, sizeof v, cudaMemcpyDeviceToHost));
        sum += v;
    }
    for (int i = 0; i < 200; i++) {
        void *p;
        CK(cudaMalloc(&p, 65536));
        CK(cudaFree(p));
    }
    CK(cudaFree(a));
    return sum == 4ull * (N / 16);
}

static bool wanted(int argc, char **argv, const char *name)
{
    if (argc < 2)
        return true;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], name))
            return true;
    return false;
}

int main(int argc, char **argv)
{
    skip_without_gpu();
    struct {
        const char *name;
        bool (*fn)();
    } checks[] = {{"mixed", check_mixed}, {"modes", check_modes},   {"ptds", check_ptds},
                  {"thread", check_thread}, {"invalid", check_invalid}, {"churn", check_churn}};
    int failed = 0;
    for (auto &c : checks)
        if (wanted(argc, argv, c.name)) {
            bool ok = c.fn();
            printf("%s ok=%d\n", c.name, ok ? 1 : 0);
            failed += !ok;
        }
    return failed ? 1 : 0;
}
