// coalesce_test.cu - what coalescing must keep true, checked with and without it:
//   scan      4-byte reads see the right values, before and after a kernel, a
//             memset and a host-to-device copy change the data
//   stream    reads on a non-blocking stream right after a kernel on that
//             stream see its writes (async copy + stream sync, like .item())
//   poll      a host loop polling a flag that a running kernel sets ends
//   threads   four threads reading different buffers at once
//   query     a STARK query phase (columns, Merkle siblings, fold neighbours,
//             every position from one random index; gathers learn it), with
//             a kernel, a memset or a device-to-device copy changing a
//             column between some queries, a buffer freed and made anew
//             between rounds; every value checked against what was written
// Prints one line per check; the library must not change any of them.
#include <pthread.h>
#include <cstdio>
#include <cstdlib>

#include "check.cuh"


__global__ void pattern(unsigned *p, unsigned n, unsigned salt)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = i * 2654435761u ^ salt;
}

__global__ void set_flag_late(volatile unsigned *flag, long long spin)
{
    long long t0 = clock64();
    while (clock64() - t0 < spin) {
    }
    *flag = 1;
    __threadfence_system();
}

static unsigned expect(unsigned i, unsigned salt) { return i * 2654435761u ^ salt; }

static int read_all(const unsigned *d, unsigned n, unsigned salt, unsigned stride)
{
    int ok = 1;
    for (unsigned i = 0; i < n; i += stride) {
        unsigned v;
        CK(cudaMemcpy(&v, d + i, 4, cudaMemcpyDeviceToHost));
        ok &= v == expect(i, salt);
    }
    return ok;
}

static void scan()
{
    const unsigned n = 1 << 20;
    unsigned *d;
    CK(cudaMalloc(&d, n * 4));
    pattern<<<(n + 255) / 256, 256>>>(d, n, 7);
    int ok = read_all(d, 1 << 16, 7, 1) && read_all(d, n, 7, 4099); // forward, then jumps
    pattern<<<(n + 255) / 256, 256>>>(d, n, 99); // a kernel changes everything
    ok &= read_all(d, 4096, 99, 1);
    CK(cudaMemset(d + 100, 0xff, 4)); // a memset changes one word
    unsigned v;
    CK(cudaMemcpy(&v, d + 100, 4, cudaMemcpyDeviceToHost));
    ok &= v == 0xffffffffu;
    unsigned w = 12345; // a host-to-device copy changes another
    CK(cudaMemcpy(d + 101, &w, 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(&v, d + 101, 4, cudaMemcpyDeviceToHost));
    ok &= v == 12345;
    CK(cudaMemcpy(&v, d + 102, 4, cudaMemcpyDeviceToHost));
    ok &= v == expect(102, 99);
    printf("scan ok=%d\n", ok);
    CK(cudaFree(d));
}

static void stream()
{
    const unsigned n = 1 << 16;
    unsigned *d, v;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&d, n * 4));
    int ok = 1;
    for (unsigned round = 0; round < 50; round++) {
        pattern<<<(n + 255) / 256, 256, 0, s>>>(d, n, round);
        for (unsigned k = 0; k < 20; k++) {
            CK(cudaMemcpyAsync(&v, d + k * 31, 4, cudaMemcpyDeviceToHost, s));
            CK(cudaStreamSynchronize(s));
            ok &= v == expect(k * 31, round);
        }
    }
    printf("stream ok=%d\n", ok);
    CK(cudaFree(d));
    CK(cudaStreamDestroy(s));
}

static void poll()
{
    unsigned *flag;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaMalloc(&flag, 4096));
    CK(cudaMemset(flag, 0, 4096));
    CK(cudaDeviceSynchronize());
    set_flag_late<<<1, 1, 0, s>>>(flag, 100000000LL); // ~50 ms
    unsigned v = 0;
    long polls = 0;
    while (v == 0 && polls < 50000000) {
        CK(cudaMemcpy(&v, flag, 4, cudaMemcpyDeviceToHost)); // legacy: does not wait for s
        polls++;
    }
    CK(cudaStreamSynchronize(s));
    printf("poll ok=%d\n", v == 1);
    CK(cudaFree(flag));
    CK(cudaStreamDestroy(s));
}

static void *reader(void *arg)
{
    long id = (long)arg;
    const unsigned n = 1 << 16;
    unsigned *d;
    CK(cudaMalloc(&d, n * 4));
    pattern<<<(n + 255) / 256, 256>>>(d, n, (unsigned)id);
    CK(cudaDeviceSynchronize());
    long ok = read_all(d, n, (unsigned)id, 3);
    CK(cudaFree(d));
    return (void *)ok;
}

static void threads()
{
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, reader, (void *)i);
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        ok &= r != NULL;
    }
    printf("threads ok=%d\n", ok);
}

// One query's reads (as bench/bench_query.cu), each checked against salt.
static int one_query(unsigned **cols, unsigned ncols, unsigned **tree, unsigned **fri,
                     unsigned log_n, const unsigned *salt, unsigned idx)
{
    int ok = 1;
    unsigned v, folds = log_n / 2;
    for (unsigned c = 0; c < ncols; c++) {
        CK(cudaMemcpy(&v, cols[c] + idx, 4, cudaMemcpyDeviceToHost));
        ok &= v == expect(idx, salt[c]);
    }
    for (unsigned l = 0; l < log_n; l++) {
        unsigned at = ((idx >> l) ^ 1) * 8;
        CK(cudaMemcpy(&v, tree[l] + at, 4, cudaMemcpyDeviceToHost));
        ok &= v == expect(at, 1000 + l);
    }
    for (unsigned m = 0; m < folds; m++) {
        unsigned pair = (idx >> (m + 1)) & ~1u;
        for (unsigned k = 0; k < 2; k++) {
            CK(cudaMemcpy(&v, fri[m] + (pair | k), 4, cudaMemcpyDeviceToHost));
            ok &= v == expect(pair | k, 2000 + m);
        }
    }
    return ok;
}

static void query()
{
    const unsigned log_n = 18, n = 1u << log_n, ncols = 8, folds = log_n / 2;
    unsigned *cols[8], *tree[18], *fri[9], salt[8];
    for (unsigned c = 0; c < ncols; c++)
        CK(cudaMalloc(&cols[c], n * 4));
    for (unsigned l = 0; l < log_n; l++)
        CK(cudaMalloc(&tree[l], (n >> l) * 32));
    for (unsigned m = 0; m < folds; m++)
        CK(cudaMalloc(&fri[m], (n >> (m + 1)) * 4));
    int ok = 1;
    unsigned rng = 12345;
    for (unsigned r = 0; r < 4; r++) {
        if (r == 2) { // a fold layer freed and made anew between rounds
            CK(cudaFree(fri[0]));
            CK(cudaMalloc(&fri[0], (n >> 1) * 4));
        }
        for (unsigned c = 0; c < ncols; c++) {
            salt[c] = r * 100 + c;
            pattern<<<(n + 255) / 256, 256>>>(cols[c], n, salt[c]);
        }
        for (unsigned l = 0; l < log_n; l++)
            pattern<<<((n >> l) * 8 + 255) / 256, 256>>>(tree[l], (n >> l) * 8, 1000 + l);
        for (unsigned m = 0; m < folds; m++)
            pattern<<<((n >> (m + 1)) + 255) / 256, 256>>>(fri[m], n >> (m + 1), 2000 + m);
        CK(cudaGetLastError());
        for (unsigned q = 0; q < 48; q++) {
            rng = rng * 1664525u + 1013904223u;
            ok &= one_query(cols, ncols, tree, fri, log_n, salt, (rng >> 8) & (n - 1));
            unsigned c = q % ncols;
            if (q % 5 == 1) { // a kernel rewrites a column
                salt[c] += 7;
                pattern<<<(n + 255) / 256, 256>>>(cols[c], n, salt[c]);
            } else if (q % 5 == 3) { // a copy from another column
                unsigned from = (c + 1) % ncols;
                CK(cudaMemcpy(cols[c], cols[from], n * 4, cudaMemcpyDeviceToDevice));
                salt[c] = salt[from];
            }
        }
        unsigned v; // a memset, then one more query sees it
        CK(cudaMemset(cols[0], 0, n * 4));
        CK(cudaMemcpy(&v, cols[0] + (rng & (n - 1)), 4, cudaMemcpyDeviceToHost));
        ok &= v == 0;
    }
    printf("query ok=%d\n", ok);
    for (unsigned c = 0; c < ncols; c++)
        CK(cudaFree(cols[c]));
    for (unsigned l = 0; l < log_n; l++)
        CK(cudaFree(tree[l]));
    for (unsigned m = 0; m < folds; m++)
        CK(cudaFree(fri[m]));
}

int main()
{
    skip_without_gpu();
    scan();
    stream();
    poll();
    threads();
    query();
    return 0;
}
