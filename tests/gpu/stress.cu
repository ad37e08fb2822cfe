// stress.cu - 16 host threads for a while (--seconds, default 20) of mixed
// allocation, launches, small and large reads, async copies and frees, each
// result checked against the host's own arithmetic; prints one summary line
// with the number of operations and whether every check held.
#include <pthread.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "check.cuh"


__global__ void affine(unsigned *p, unsigned n, unsigned a, unsigned b)
{
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        p[i] = p[i] * a + b;
}

static double seconds = 20;
static double now()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

struct worker {
    unsigned id;
    long ops;
    int ok;
};

static void *run(void *arg)
{
    worker *w = (worker *)arg;
    unsigned seed = 7 + w->id;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, w->id % 3 ? cudaStreamNonBlocking : cudaStreamDefault));
    double end = now() + seconds;
    w->ok = 1;
    while (now() < end) {
        unsigned n = 256 + rand_r(&seed) % (1 << 18);
        unsigned *d, v0 = rand_r(&seed), a = rand_r(&seed) | 1, b = rand_r(&seed);
        CK(cudaMalloc(&d, n * 4));
        CK(cudaMemsetAsync(d, 0, n * 4, s));
        unsigned model = 0;
        int rounds = 1 + rand_r(&seed) % 12;
        for (int r = 0; r < rounds; r++) {
            affine<<<1 + n / 1024, 256, 0, s>>>(d, n, a, b + (unsigned)r);
            model = model * a + b + (unsigned)r;
        }
        unsigned probe[3], at[3] = {0, n / 2, n - 1};
        for (int k = 0; k < 3; k++) { // small reads, either way
            if (rand_r(&seed) % 2)
                CK(cudaMemcpyAsync(&probe[k], d + at[k], 4, cudaMemcpyDeviceToHost, s));
            else {
                CK(cudaStreamSynchronize(s));
                CK(cudaMemcpy(&probe[k], d + at[k], 4, cudaMemcpyDeviceToHost));
            }
        }
        CK(cudaStreamSynchronize(s));
        for (int k = 0; k < 3; k++)
            w->ok &= probe[k] == model;
        if (rand_r(&seed) % 8 == 0) { // now and then the whole buffer
            unsigned *h = (unsigned *)malloc(n * 4);
            CK(cudaMemcpy(h, d, n * 4, cudaMemcpyDeviceToHost));
            for (unsigned i = 0; i < n; i++)
                w->ok &= h[i] == model;
            free(h);
        }
        (void)v0;
        CK(cudaFree(d));
        w->ops++;
    }
    CK(cudaStreamDestroy(s));
    return nullptr;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
    skip_without_gpu();
    CK(cudaFree(0));
    worker w[16];
    pthread_t t[16];
    for (unsigned i = 0; i < 16; i++) {
        w[i] = {i, 0, 1};
        pthread_create(&t[i], nullptr, run, &w[i]);
    }
    long ops = 0;
    int ok = 1;
    for (int i = 0; i < 16; i++) {
        pthread_join(t[i], nullptr);
        ops += w[i].ops, ok &= w[i].ok;
    }
    fprintf(stderr, "stress: %ld operations in %.0f s by 16 threads\n", ops, seconds);
    printf("stress ok=%d\n", ok);
    return ok ? 0 : 1;
}
