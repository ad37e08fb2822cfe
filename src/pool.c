/* pool.c - the allocation hooks. The block cache (GPUACCEL_POOL) is not built
 * yet: every call goes to the driver, with the epoch kept right. */
#include "hooks.h"
#include "modules.h"
#include "streams.h"

CUresult ga_hook_alloc(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytesize)
{
    ga_work_begin(rt, true);
    return GA_REAL(rt, id, cuMemAlloc_v2)(dptr, bytesize);
}

CUresult ga_hook_alloc_pitch(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t *pPitch,
                             size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes)
{
    ga_work_begin(rt, true);
    return GA_REAL(rt, id, cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height,
                                              ElementSizeBytes);
}

CUresult ga_hook_free(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dptr)
{
    ga_modules_flush(rt, GA_FLUSH_ALL, NULL);
    ga_work_begin(rt, true);
    return GA_REAL(rt, id, cuMemFree_v2)(dptr);
}

CUresult ga_hook_meminfo(const ga_rt_t *rt, ga_id_t id, size_t *free, size_t *total)
{
    return GA_REAL(rt, id, cuMemGetInfo_v2)(free, total);
}
