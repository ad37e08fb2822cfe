/* reopen.c - dlopen libcuda, use it, dlclose it, open and use it again: the
 * library must keep working (it keeps its own reference, so its pointers into
 * the driver stay valid). Prints one line per round. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

int main(void)
{
    for (int round = 0; round < 3; round++) {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib)
            return fprintf(stderr, "no libcuda.so.1\n"), 77;
        __typeof__(&cuInit) init = (__typeof__(&cuInit))dlsym(lib, "cuInit");
        __typeof__(&cuDriverGetVersion) ver =
            (__typeof__(&cuDriverGetVersion))dlsym(lib, "cuDriverGetVersion");
        int v = 0;
        CUresult r = init && ver ? init(0) : CUDA_ERROR_NOT_FOUND;
        if (r == CUDA_SUCCESS)
            r = ver(&v);
        printf("round %d: %d %d\n", round, (int)r, v > 0);
        dlclose(lib);
    }
    return 0;
}
