/* door_newer.c - what a program finds of entry points newer than its driver,
 * through both doors: dlsym (on the driver's handle and in the global scope)
 * and cuGetProcAddress_v2 (a base name at a CUDA version). Each pointer found
 * of cuCtxSynchronize is called once. Prints one line per lookup:
 * "NAME=missing", "NAME=found [r=RESULT]", or for cuGetProcAddress
 * "NAME@VERSION=r=CODE status=S pfn=..." (pfn "null", "found", or "called
 * r=RESULT"). Links nothing: dlopen, as cudarc does. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

typedef CUresult (*sync_v1_fn)(void);
typedef CUresult (*sync_v2_fn)(CUcontext);

enum { CALL_NONE = -1, CALL_V1, CALL_V2 }; /* cuCtxSynchronize(void) or _v2(NULL) */

static void by_dlsym(void *handle, const char *where, const char *name, int call)
{
    void *p = dlsym(handle, name);
    if (!p)
        printf("%s:%s=missing\n", where, name);
    else if (call == CALL_V2)
        printf("%s:%s=found r=%d\n", where, name, (int)((sync_v2_fn)p)(NULL));
    else
        printf("%s:%s=found\n", where, name);
}

static void by_getproc(__typeof__(&cuGetProcAddress_v2) getproc, const char *base, int version,
                       int call)
{
    void *p = (void *)1; /* must come back NULL when nothing is found */
    CUdriverProcAddressQueryResult status = (CUdriverProcAddressQueryResult)-1;
    CUresult r = getproc(base, &p, version, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    printf("getproc:%s@%d=r=%d status=%d pfn=", base, version, (int)r, (int)status);
    if (!p)
        printf("null\n");
    else if (p == (void *)1)
        printf("untouched\n");
    else if (call == CALL_NONE)
        printf("found\n");
    else
        printf("called r=%d\n", (int)(call == CALL_V2 ? ((sync_v2_fn)p)(NULL) : ((sync_v1_fn)p)()));
}

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        return fprintf(stderr, "no libcuda.so.1: %s\n", dlerror()), 77;
    __typeof__(&cuInit) init = (__typeof__(&cuInit))dlsym(lib, "cuInit");
    __typeof__(&cuDriverGetVersion) version =
        (__typeof__(&cuDriverGetVersion))dlsym(lib, "cuDriverGetVersion");
    __typeof__(&cuGetProcAddress_v2) getproc =
        (__typeof__(&cuGetProcAddress_v2))dlsym(lib, "cuGetProcAddress_v2");
    __typeof__(&cuDevicePrimaryCtxRetain) retain =
        (__typeof__(&cuDevicePrimaryCtxRetain))dlsym(lib, "cuDevicePrimaryCtxRetain");
    __typeof__(&cuCtxSetCurrent) set = (__typeof__(&cuCtxSetCurrent))dlsym(lib, "cuCtxSetCurrent");
    int v = 0;
    CUcontext ctx;
    if (!init || !version || !getproc || !retain || !set || init(0) || version(&v) ||
        retain(&ctx, 0) || set(ctx))
        return fprintf(stderr, "no driver\n"), 2;
    printf("driver=%d\n", v);
    by_dlsym(lib, "dlsym", "cuCtxSynchronize_v2", CALL_V2); /* CUDA 13.0 */
    by_dlsym(RTLD_DEFAULT, "global", "cuCtxSynchronize_v2", CALL_V2);
    by_dlsym(lib, "dlsym", "cuEventElapsedTime_v2", CALL_NONE); /* 12.8 */
    by_getproc(getproc, "cuCtxSynchronize", 13000, CALL_V2); /* the 13.0 ABI */
    by_getproc(getproc, "cuCtxSynchronize", v, v >= 13000 ? CALL_V2 : CALL_V1); /* the newest */
    by_getproc(getproc, "cuCtxSynchronize", 12000, CALL_V1);
    by_getproc(getproc, "cuFuncGetName", 12000, CALL_NONE); /* 12.3: none at 12.0 */
    by_getproc(getproc, "cuFuncGetName", v, CALL_NONE);
    return 0;
}
