/* dma_prog.c - device memory a network card writes behind the program's back
 * (GPUDirect RDMA): a word read with a synchronous 4-byte copy, rewritten by
 * fakecuda_dma_write (no driver call), read again. With MODE marked the
 * memory carries CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, as RDMA users set it; with
 * dmabuf it is exported with cuMemGetHandleForAddressRange; with late it is
 * marked after the first read (a window over it may already exist); plain is
 * neither.
 * Runs against tests/fake.  usage: dma_prog KERNELS.PTX plain|marked|dmabuf|late
 *   -> "MODE first=<hex> second=<hex>" */
#include "linked.h"
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    CUdevice dev;
    CUcontext ctx;
    linked_setup(argc, argv, &dev, &ctx);
    const char *mode = argc > 2 ? argv[2] : "plain";
    void (*dma_write)(CUdeviceptr, const void *, size_t) =
        (void (*)(CUdeviceptr, const void *, size_t))dlsym(RTLD_DEFAULT, "fakecuda_dma_write");
    if (!dma_write) {
        fprintf(stderr, "dma_prog: needs the fake driver (fakecuda_dma_write)\n");
        return 2;
    }
    enum { N = 1 << 14 };
    static uint32_t h[N];
    for (uint32_t i = 0; i < N; i++)
        h[i] = i * 2654435761u;
    CUdeviceptr d;
    CK(cuMemAlloc(&d, sizeof h));
    CK(cuMemcpyHtoD(d, h, sizeof h));
    int fd = -1;
    if (!strcmp(mode, "marked")) {
        unsigned one = 1;
        CK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
    } else if (!strcmp(mode, "dmabuf")) {
        CK(cuMemGetHandleForAddressRange(&fd, d + 4096, 8192, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD,
                                         0));
    }
    uint32_t first, second, next = 0xfeedbeefu;
    CK(cuMemcpyDtoH(&first, d + 4 * 100, 4));
    if (!strcmp(mode, "late")) { /* registered for RDMA once the program read it */
        unsigned one = 1;
        CK(cuPointerSetAttribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, d));
    }
    dma_write(d + 4 * 101, &next, 4); /* the card writes the next word */
    CK(cuMemcpyDtoH(&second, d + 4 * 101, 4));
    printf("%s first=%08x second=%08x\n", mode, first, second);
    if (fd >= 0)
        close(fd);
    CK(cuMemFree(d));
    return 0;
}
