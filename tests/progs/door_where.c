/* door_where.c - which shared object a program's driver entry points live in,
 * fetched as cudarc and ctypes do (dlopen + dlsym) and as cudart does
 * (cuGetProcAddress_v2). Prints "dlsym=OBJ getproc=OBJ" with each object's
 * base name: libcuda.so.1 when the program reaches the driver directly. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

static const char *where(void *p)
{
    Dl_info info;
    if (!p || !dladdr(p, &info) || !info.dli_fname)
        return "none";
    const char *slash = strrchr(info.dli_fname, '/');
    return slash ? slash + 1 : info.dli_fname;
}

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib)
        return fprintf(stderr, "no libcuda.so.1: %s\n", dlerror()), 77;
    __typeof__(&cuInit) init = (__typeof__(&cuInit))dlsym(lib, "cuInit");
    __typeof__(&cuGetProcAddress_v2) getproc =
        (__typeof__(&cuGetProcAddress_v2))dlsym(lib, "cuGetProcAddress_v2");
    if (!init || !getproc || init(0) != CUDA_SUCCESS)
        return fprintf(stderr, "no driver\n"), 2;
    void *by_dlsym = dlsym(lib, "cuLaunchKernel"), *by_getproc = NULL;
    CUdriverProcAddressQueryResult status;
    if (getproc("cuLaunchKernel", &by_getproc, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &status))
        return fprintf(stderr, "cuGetProcAddress failed\n"), 2;
    printf("dlsym=%s getproc=%s\n", where(by_dlsym), where(by_getproc));
    return 0;
}
