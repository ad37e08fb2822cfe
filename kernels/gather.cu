/* gather.cu - the library's own gather kernel (coalesce's gathers): one launch
 * copies small device reads, each at most 16 bytes, to consecutive 16-byte
 * cells of one buffer, so a query's reads cost one round trip. Up to 128
 * reads travel in the launch's parameters; more (a prover's query reads
 * about 1,600 words) in a list the device reads, one thread a read.
 * The buffer is page-locked host memory mapped into the device: each cell is
 * one 16-byte store (bytes past the read's length are zero), so a read costs
 * one bus write, not one per byte.
 * Shipped as PTX, kernels/gather.ptx, made with
 *     nvcc -ptx -arch=compute_75 -o - kernels/gather.cu |
 *         sed 's/^[.]version [0-9.]*$/.version 7.8/' >kernels/gather.ptx
 * (the .version lowered so that drivers from CUDA 11.8 on take it; the code
 * uses nothing newer) and embedded in the library (gather_ptx.c, built from
 * it), so a build without nvcc has it too. A build with nvcc embeds a fatbin
 * of this file instead: machine code for NVCC_ARCH and compute_75 PTX.
 * When its block's cells are written, each block stores `stamp` in its word
 * of `done` (mapped memory too): the host sees the whole gather land by
 * spinning on those words, 2.9 us sooner on an H100 than a stream
 * synchronization tells it (bench/probes/launchprobe.c). */
struct ga_gather_read {
    unsigned long long src;
    unsigned n, pad;
};

struct ga_gather_args {
    unsigned long long dst;  /* 16-byte aligned: count cells of 16 bytes */
    unsigned long long list; /* 0: the reads are src[] and n[] below; else count
                              * ga_gather_read entries the device can read */
    unsigned count, stamp;
    unsigned long long done; /* a word per block, set to stamp once its cells landed */
    unsigned long long src[128];
    unsigned n[128];
};

extern "C" __global__ void ga_gather(const ga_gather_args a)
{
    unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < a.count) {
        const ga_gather_read *list = (const ga_gather_read *)a.list;
        const unsigned char *s = (const unsigned char *)(list ? list[k].src : a.src[k]);
        unsigned n = list ? list[k].n : a.n[k];
        n = n < 16 ? n : 16;
        unsigned w[4] = {0, 0, 0, 0};
#pragma unroll
        for (unsigned b = 0; b < 16; b++) /* unrolled: w stays in registers */
            if (b < n)
                w[b / 4] |= (unsigned)s[b] << (8 * (b % 4));
        ((uint4 *)a.dst)[k] = make_uint4(w[0], w[1], w[2], w[3]);
        __threadfence_system(); /* the cell is seen before the block's word */
    }
    __syncthreads();
    if (threadIdx.x == 0)
        ((volatile unsigned *)a.done)[blockIdx.x] = a.stamp;
}
