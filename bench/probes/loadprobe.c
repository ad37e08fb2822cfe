/* loadprobe.c - what making the replacement kernels ready costs a process:
 * the kernels feature loads its fatbin with cuLibraryLoadData at the second
 * launch of the first kernel it swaps, and each replacement's code is made
 * ready for the context at its first launch (cuKernelGetFunction here), both
 * inside whatever the program times then. Prints the microseconds of the load
 * and of each named kernel's first cuKernelGetFunction, in a fresh context
 * (run it a few times: the first process of a machine also pays for the
 * driver's own start).
 * usage: loadprobe FATBIN [KERNEL...]   (e.g. the build's kernels/replacements.fatbin)
 * Built on the GPU machine: gcc -O2 -I/usr/local/cuda/include -o ldp
 *   bench/probes/loadprobe.c -lcuda */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../tests/progs/linked.h" /* CK, linked_context */
#include "../clock.h"

/* By hand: the library's ga_read_file (core/textfile.c) would bring its log
 * module into a one-file probe built with plain gcc. */
static void *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "loadprobe: cannot open %s\n", path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "loadprobe: cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: loadprobe FATBIN [KERNEL...]\n");
        return 2;
    }
    void *image = read_file(argv[1]);
    CUdevice d;
    CUcontext c;
    double t0 = now_us();
    linked_context(&d, &c);
    double t1 = now_us();
    CUlibrary lib;
    CK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
    double t2 = now_us();
    printf("loadprobe context %.1f us, cuLibraryLoadData %.1f us\n", t1 - t0, t2 - t1);
    for (int i = 2; i < argc; i++) {
        CUkernel k;
        CUfunction f;
        double a = now_us();
        CK(cuLibraryGetKernel(&k, lib, argv[i]));
        double b = now_us();
        CK(cuKernelGetFunction(&f, k));
        double e = now_us();
        printf("loadprobe %s: cuLibraryGetKernel %.1f us, first cuKernelGetFunction %.1f us\n",
               argv[i], b - a, e - b);
    }
    CK(cuLibraryUnload(lib));
    free(image);
    return 0;
}
