// gather_test.cu - the library's gather kernel (kernels/gather.cu) on a real
// GPU, against a CPU reference: the fake driver runs a C model of it
// (tests/fake/fakecuda.c), so the Bats tests check the library against the
// model only; this checks the model's rules against the kernel itself.
//
// Two builds of the kernel: the source compiled into this program, and the
// PTX the library embeds when built without nvcc (kernels/gather.ptx, the
// first argument), loaded with cuModuleLoadData. Each is launched as the
// library launches it (src/features/coalesce/gather.c: 128 threads a block,
// the cells and the blocks' words in mapped page-locked memory) on seeded
// random reads: any alignment, lengths 0 to 24 (a read longer than 16 bytes
// copies 16), counts up to 2048, with the reads in the parameters (up to 128)
// and in a list in device memory (129 and more). The cells start as garbage:
// each must hold the read's bytes then zeros, and each block's word the
// launch's stamp. One line per build and form, "NAME ok=0|1"; exits 1 when
// any check fails.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "check.cuh"
#include "../../kernels/gather.cu"

enum { THREADS = 128, INLINE = 128, MAX_READS = 2048, CELL = 16, SRC_BYTES = 1 << 20 };

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_rand()
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

struct env {
    unsigned char *src_dev, *src_host;  // the bytes the reads come from
    ga_gather_read *list_dev;            // the list form's reads
    unsigned char *cells, *cells_dev;    // mapped: count cells of 16 bytes
    unsigned *done, *done_dev;           // mapped: a word per block
    CUfunction ptx;                      // the shipped PTX's ga_gather
};

// One launch of `count` random reads through build `ptx` (else the compiled
// kernel); the reads in a list when `list`. Returns whether every cell and
// every block's word is the reference's.
static bool one(env &e, unsigned count, bool list, bool ptx, unsigned stamp)
{
    static ga_gather_args a; // 2.6 KB: kept off the stack
    memset(&a, 0, sizeof a);
    std::vector<ga_gather_read> reads(count);
    for (unsigned k = 0; k < count; k++) {
        unsigned n = next_rand() % 25;
        unsigned off = next_rand() % (SRC_BYTES - 32);
        reads[k].src = (unsigned long long)(uintptr_t)(e.src_dev + off);
        reads[k].n = n;
        reads[k].pad = next_rand(); // the kernel must not read it
    }
    if (list) {
        CK(cudaMemcpy(e.list_dev, reads.data(), count * sizeof(ga_gather_read),
                      cudaMemcpyHostToDevice));
        a.list = (unsigned long long)(uintptr_t)e.list_dev;
    } else {
        for (unsigned k = 0; k < count; k++)
            a.src[k] = reads[k].src, a.n[k] = reads[k].n;
    }
    unsigned blocks = (count + THREADS - 1) / THREADS;
    a.dst = (unsigned long long)(uintptr_t)e.cells_dev;
    a.count = count;
    a.stamp = stamp;
    a.done = (unsigned long long)(uintptr_t)e.done_dev;
    memset(e.cells, 0xa5, (size_t)MAX_READS * CELL);
    memset(e.done, 0, (MAX_READS / THREADS + 1) * sizeof(unsigned));
    if (ptx) {
        void *params[] = {&a};
        CU(cuLaunchKernel(e.ptx, blocks, 1, 1, THREADS, 1, 1, 0, 0, params, NULL));
    } else {
        ga_gather<<<blocks, THREADS>>>(a);
        CK(cudaGetLastError());
    }
    CK(cudaDeviceSynchronize());
    bool ok = true;
    for (unsigned k = 0; k < count; k++) {
        unsigned char want[CELL] = {0};
        unsigned n = reads[k].n < CELL ? reads[k].n : CELL;
        memcpy(want, e.src_host + (reads[k].src - (uintptr_t)e.src_dev), n);
        if (memcmp(e.cells + (size_t)k * CELL, want, CELL)) {
            if (ok)
                fprintf(stderr, "%s %s count=%u: cell %u (n=%u) is not the read's bytes\n",
                        ptx ? "ptx" : "compiled", list ? "list" : "inline", count, k, reads[k].n);
            ok = false;
        }
    }
    for (unsigned b = 0; b < blocks; b++)
        if (e.done[b] != stamp) {
            fprintf(stderr, "%s %s count=%u: block %u's word is %u, not the stamp %u\n",
                    ptx ? "ptx" : "compiled", list ? "list" : "inline", count, b, e.done[b], stamp);
            ok = false;
        }
    // Past the last read the cells are the kernel's to leave alone.
    for (size_t i = (size_t)count * CELL; i < (size_t)MAX_READS * CELL; i++)
        if (e.cells[i] != 0xa5) {
            fprintf(stderr, "%s %s count=%u: a byte past the last cell written (%zu)\n",
                    ptx ? "ptx" : "compiled", list ? "list" : "inline", count, i);
            ok = false;
            break;
        }
    return ok;
}

// Reads a whole file (the PTX) as a string.
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    std::vector<char> buf;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf.insert(buf.end(), chunk, chunk + n);
    fclose(f);
    char *s = (char *)malloc(buf.size() + 1);
    memcpy(s, buf.data(), buf.size());
    s[buf.size()] = '\0';
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gather_test kernels/gather.ptx\n");
        return 2;
    }
    skip_without_gpu();
    CK(cudaSetDeviceFlags(cudaDeviceMapHost));
    CK(cudaFree(0)); // the primary context, current for the driver calls too
    env e;
    CK(cudaMalloc(&e.src_dev, SRC_BYTES));
    e.src_host = (unsigned char *)malloc(SRC_BYTES);
    for (size_t i = 0; i < SRC_BYTES; i++)
        e.src_host[i] = (unsigned char)next_rand();
    CK(cudaMemcpy(e.src_dev, e.src_host, SRC_BYTES, cudaMemcpyHostToDevice));
    CK(cudaMalloc(&e.list_dev, MAX_READS * sizeof(ga_gather_read)));
    CK(cudaHostAlloc(&e.cells, (size_t)MAX_READS * CELL, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(&e.cells_dev, e.cells, 0));
    CK(cudaHostAlloc(&e.done, (MAX_READS / THREADS + 1) * sizeof(unsigned), cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer(&e.done_dev, e.done, 0));
    char *text = slurp(argv[1]);
    CUmodule m;
    CU(cuModuleLoadData(&m, text));
    CU(cuModuleGetFunction(&e.ptx, m, "ga_gather"));

    static const unsigned inline_counts[] = {1, 2, 31, 127, INLINE};
    static const unsigned list_counts[] = {INLINE + 1, 255, 256, 1000, 1601, MAX_READS};
    unsigned stamp = 1;
    for (int ptx = 0; ptx < 2; ptx++) {
        bool ok_inline = true, ok_list = true;
        for (int round = 0; round < 4; round++) {
            for (unsigned c : inline_counts)
                ok_inline &= one(e, c, false, ptx, stamp++);
            for (unsigned c : list_counts)
                ok_list &= one(e, c, true, ptx, stamp++);
        }
        printf("%s inline ok=%d\n", ptx ? "ptx" : "compiled", verdict(ok_inline));
        printf("%s list ok=%d\n", ptx ? "ptx" : "compiled", verdict(ok_list));
    }
    CU(cuModuleUnload(m));
    return verdicts();
}
