/* stub_device.h - device memory for the pool's unit tests: a 1 MiB "device"
 * whose allocations the tests count (real_allocs, real_frees), and the
 * allocate/free calls as the wrappers make them. Include after
 * stub_driver.h. */
#ifndef GA_STUB_DEVICE_H
#define GA_STUB_DEVICE_H

#include <pthread.h>

#include "core/hooks.h"
#include "hooks/dispatch.h"

/* Threads of a test may allocate at once: the stub device has one lock. */
static pthread_mutex_t stub_dev_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t capacity = 1 << 20, used; /* the stub "device" */
static int real_frees, real_allocs;
static struct { CUdeviceptr p; size_t n; } live[256];

static CUresult stub_alloc(CUdeviceptr *d, size_t n)
{
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&stub_dev_lock);
    for (int i = 0; i < 256 && used + n <= capacity; i++)
        if (!live[i].p) {
            live[i].p = (CUdeviceptr)(0x100000000ull + 0x1000000ull * (unsigned)real_allocs);
            live[i].n = n;
            used += n;
            real_allocs++;
            *d = live[i].p;
            r = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&stub_dev_lock);
    return r;
}

static CUresult stub_free(CUdeviceptr d)
{
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&stub_dev_lock);
    for (int i = 0; i < 256; i++)
        if (live[i].p == d) {
            used -= live[i].n;
            live[i].p = 0;
            real_frees++;
            r = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&stub_dev_lock);
    return r;
}

static CUresult stub_info(size_t *f, size_t *t)
{
    pthread_mutex_lock(&stub_dev_lock);
    *f = capacity - used;
    pthread_mutex_unlock(&stub_dev_lock);
    *t = capacity;
    return CUDA_SUCCESS;
}

static CUresult stub_range(CUdeviceptr *base, size_t *size, CUdeviceptr d)
{
    CUresult r = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&stub_dev_lock);
    for (int i = 0; i < 256; i++)
        if (live[i].p && d >= live[i].p && d < live[i].p + live[i].n) {
            *base = live[i].p;
            *size = live[i].n;
            r = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&stub_dev_lock);
    return r;
}

static CUresult stub_ipc(CUipcMemHandle *h, CUdeviceptr d) { (void)h; (void)d; return CUDA_SUCCESS; }
/* cuMemGetHandleForAddressRange: any range exports, as fd 3. */
static CUresult stub_dmabuf(void *fd, CUdeviceptr d, size_t n, CUmemRangeHandleType t,
                           unsigned long long flags)
{
    (void)d, (void)n, (void)t, (void)flags;
    *(int *)fd = 3;
    return CUDA_SUCCESS;
}
static CUresult stub_memset(CUdeviceptr d, unsigned char v, size_t n) { (void)d; (void)v; (void)n; return CUDA_SUCCESS; }

static CUdeviceptr alloc(ga_rt_t *rt, size_t n)
{
    CUdeviceptr d = 0;
    CUresult r = ga_hook_alloc(rt, GA_ID_cuMemAlloc_v2, &d, n);
    return r == CUDA_SUCCESS ? d : 0;
}

static CUresult release(ga_rt_t *rt, CUdeviceptr d)
{
    return ga_hook_free(rt, GA_ID_cuMemFree_v2, d);
}

/* The stub runtime with the pool on, over this device. */
static void stub_device(ga_rt_t *rt)
{
    rt->cfg.pool = true;
    rt->cfg.pool_limit = (ga_limit_t){.bytes = 0, .percent = 100};
    rt->drv.fn[GA_ID_cuMemAlloc_v2] = (void *)stub_alloc;
    rt->drv.fn[GA_ID_cuMemFree_v2] = (void *)stub_free;
    rt->drv.fn[GA_ID_cuMemGetInfo_v2] = (void *)stub_info;
    rt->drv.fn[GA_ID_cuMemGetAddressRange_v2] = (void *)stub_range;
    rt->drv.fn[GA_ID_cuIpcGetMemHandle] = (void *)stub_ipc;
    rt->drv.fn[GA_ID_cuMemGetHandleForAddressRange] = (void *)stub_dmabuf;
    rt->drv.fn[GA_ID_cuMemsetD8_v2] = (void *)stub_memset;
    stub_features(rt);
}

#endif
