/* namesake_prog.c - a program with kernels named like every row of the
 * shipped replacement table (same mangled names, same parameters), loaded
 * from IMAGE, run three times each on the same data; prints one line per
 * kernel with a checksum of what it wrote (a kernel IMAGE lacks: one line
 * saying so). Run against the fake driver
 * (tests/fake), which gives the kernels of IMAGE the arithmetic IMAGE says:
 * compared with its native output, a replacement the library should not have
 * launched shows as another checksum. Links -lcuda.
 *
 * usage: namesake_prog IMAGE [data|fatbin|library]
 *   data     cuModuleLoadData (the default)
 *   fatbin   cuModuleLoadFatBinary (IMAGE is a fatbin)
 *   library  cuLibraryLoadData and cuLibraryGetKernel, as cudart loads */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(call)                                                                          \
    do {                                                                                  \
        CUresult r_ = (call);                                                             \
        if (r_ != CUDA_SUCCESS) {                                                         \
            fprintf(stderr, "%s:%d: %s: %d\n", __FILE__, __LINE__, #call, (int)r_);       \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

enum { N = 1000 };

/* Each shipped row's original: its name, its pointer parameters (the fake
 * reads the first and writes the second, or works in place on one), then its
 * 32-bit parameters. */
static const struct {
    const char *name;
    int pointers, words;
} kernels[] = {
    {"_Z9ntt_layerPjjjj", 1, 3},         {"_Z11coset_shiftPjjj", 1, 2},
    {"_Z5scalePjjj", 1, 2},              {"_Z11bit_reversePjjj", 1, 2},
    {"_Z11hash_leavesPKjPjjjj", 2, 3},   {"_Z10hash_nodesPKjPjj", 2, 1},
    {"_Z15combine_columnsPKjPjjjj", 2, 3}, {"_Z8fri_foldPKjPjjjjj", 2, 4},
    {"_Z22batch_rfft_circle_partPPjS_ii", 2, 2},
    {"_Z20batch_rfft_line_partPPjS_iiii", 2, 4},
    {"_Z22batch_ifft_circle_partPPjS_ii", 2, 2},
    {"_Z20batch_ifft_line_partPPjS_iii", 2, 3},
    {"_Z13batch_rescalePPjiij", 1, 3},
    {"_Z8sha_rowsP9ShaDigestPK2Fpjj", 2, 2},
    {"_Z8sha_foldP9ShaDigestPKS_j", 2, 1},
};

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 20, n = 0, got;
    char *b = malloc(cap);
    while (b && (got = fread(b + n, 1, cap - n - 1, f)) > 0)
        if ((n += got) == cap - 1)
            b = realloc(b, cap *= 2);
    fclose(f);
    if (b)
        b[n] = '\0';
    return b;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return fprintf(stderr, "usage: %s IMAGE [data|fatbin|library]\n", argv[0]), 2;
    const char *how = argc > 2 ? argv[2] : "data";
    char *image = read_all(argv[1]);
    if (!image)
        return fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]), 2;
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUmodule mod = NULL;
    CUlibrary lib = NULL;
    if (!strcmp(how, "library"))
        CK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
    else if (!strcmp(how, "fatbin"))
        CK(cuModuleLoadFatBinary(&mod, image));
    else
        CK(cuModuleLoadData(&mod, image));
    CUdeviceptr in, out, aux;
    CK(cuMemAlloc(&in, N * 4));
    CK(cuMemAlloc(&out, N * 4));
    CK(cuMemAlloc(&aux, N * 4));
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        CUfunction f;
        CUresult got;
        if (lib) {
            CUkernel kern;
            got = cuLibraryGetKernel(&kern, lib, kernels[k].name);
            f = (CUfunction)kern;
        } else {
            got = cuModuleGetFunction(&f, mod, kernels[k].name);
        }
        if (got == CUDA_ERROR_NOT_FOUND) {
            printf("%s absent\n", kernels[k].name);
            continue;
        }
        CK(got);
        uint32_t host[N];
        for (uint32_t i = 0; i < N; i++)
            host[i] = i * 2654435761u + (uint32_t)k;
        CK(cuMemcpyHtoD(in, host, sizeof host));
        CK(cuMemcpyHtoD(out, host, sizeof host));
        /* the fake adds the last word: 1,000 apart from kernel to kernel, so
         * no two kernels' outputs coincide (the test asks them all different) */
        uint32_t tag = 1000u * (uint32_t)(k + 1);
        uint32_t words[4] = {N, tag + 1, tag + 2, tag + 3};
        void *args[8];
        unsigned a = 0;
        args[a++] = &in;
        if (kernels[k].pointers > 1)
            args[a++] = &out;
        if (kernels[k].pointers > 2)
            args[a++] = &aux;
        for (int w = 0; w < kernels[k].words; w++)
            args[a++] = &words[w];
        /* three launches: the first of a handle always runs as made */
        for (int round = 0; round < 3; round++)
            CK(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
        CK(cuMemcpyDtoH(host, kernels[k].pointers > 1 ? out : in, sizeof host));
        uint64_t sum = 0;
        for (uint32_t i = 0; i < N; i++)
            sum = sum * 1000003u + host[i];
        printf("%s sum=%016llx\n", kernels[k].name, (unsigned long long)sum);
    }
    CK(cuMemFree(in));
    CK(cuMemFree(out));
    CK(cuMemFree(aux));
    if (mod)
        CK(cuModuleUnload(mod));
    free(image);
    return 0;
}
