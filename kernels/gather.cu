/* gather.cu - the library's own gather kernel (coalesce's gathers): one launch
 * copies up to 128 small device reads, each at most 16 bytes, to consecutive
 * 16-byte cells of one buffer, so a query's reads cost one round trip.
 * Shipped as PTX, kernels/gather.ptx, made with
 *     nvcc -ptx -arch=compute_75 -o - kernels/gather.cu |
 *         sed 's/^\.version .*/.version 7.8/' >kernels/gather.ptx
 * (the .version lowered so that drivers from CUDA 11.8 on take it; the code
 * uses nothing newer) and embedded in the library (gather_ptx.c, built from
 * it), so a build without nvcc has it too. */
struct ga_gather_args {
    unsigned long long dst; /* device buffer of count 16-byte cells */
    unsigned count, pad;
    unsigned long long src[128];
    unsigned n[128];
};

extern "C" __global__ void ga_gather(const ga_gather_args a)
{
    unsigned k = threadIdx.x;
    if (k >= a.count)
        return;
    const unsigned char *s = (const unsigned char *)a.src[k];
    unsigned char *d = (unsigned char *)a.dst + 16 * k;
    unsigned n = a.n[k] < 16 ? a.n[k] : 16;
    for (unsigned b = 0; b < n; b++)
        d[b] = s[b];
}
