/* ptx_prog.c - loads PTX text whose .version is above what the driver takes,
 * through cuModuleLoadData and cuLibraryLoadData: once with code the driver's
 * JIT knows (on the fake driver), once with an instruction it does not
 * (`fake.newinstr`). Prints each call's result code. Links -lcuda. */
#include <cuda.h>
#include <stdio.h>
#include <string.h>

static const char old_code[] =
    "//\n.version 9.9\n.target sm_80\n.address_size 64\n.visible .entry add()\n{\n ret;\n}\n";
static const char new_code[] =
    ".version 9.9\n.target sm_80\n.address_size 64\n.visible .entry add()\n{\n"
    " fake.newinstr;\n ret;\n}\n";

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUresult r = cuInit(0);
    if (r)
        return fprintf(stderr, "SKIP: no CUDA device (cuInit returned %d)\n", (int)r), 77;
    if ((r = cuDeviceGet(&dev, 0)) || (r = cuDevicePrimaryCtxRetain(&ctx, dev)) ||
        (r = cuCtxSetCurrent(ctx)))
        return fprintf(stderr, "no context on device 0: %d\n", (int)r), 1;
    CUmodule m;
    CUlibrary l;
    int a = cuModuleLoadData(&m, old_code), b = cuModuleLoadData(&m, new_code);
    int c = cuLibraryLoadData(&l, old_code, NULL, NULL, 0, NULL, NULL, 0);
    int d = cuLibraryLoadData(&l, new_code, NULL, NULL, 0, NULL, NULL, 0);
    printf("module old=%d new=%d library old=%d new=%d\n", a, b, c, d);
    return 0;
}
