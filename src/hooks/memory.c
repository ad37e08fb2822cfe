/* memory.c - hooks for device memory: allocation and free (sync and
 * stream-ordered), what the driver reports about memory, and IPC.
 *
 * The flow of every hook: flush what features hold when the call may observe
 * it; offer the call to the features that serve it (the pool); if none does,
 * the driver gets it as the program made it; then tell the observers (the
 * profile, the tuner). Returns exactly what the driver (or the serving
 * feature, with the driver's own codes) returned. */
#include "core/hooks.h"
#include "hooks/dispatch.h"
#include "tracking/streams.h"

static uint64_t since(uint64_t t0)
{
    return t0 ? ga_now_ns() - t0 : 0;
}

/* One allocation: a feature's answer (which may come from the driver), else
 * the driver's own, errors included. The epochs move around the driver's
 * calls only (ga_dev_alloc_driver, ga_dev_free_driver, which the pool uses
 * too): a block the pool hands out or takes back maps and writes nothing. */
static CUresult alloc_once(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytesize)
{
    CUresult r;
    if (!GA_SERVE(alloc, rt, id, dptr, bytesize, &r))
        r = ga_dev_alloc_driver(rt, id, dptr, bytesize);
    return r;
}

CUresult ga_hook_alloc(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytesize)
{
    uint64_t t0 = ga_hooks_t0();
    CUresult r = alloc_once(rt, id, dptr, bytesize);
    /* Memory features hold, and waits they deferred, give way before the
     * driver's error is final (also after a fault), served or not. */
    if (r == CUDA_ERROR_OUT_OF_MEMORY && ga_reclaim(rt, false))
        r = alloc_once(rt, id, dptr, bytesize);
    GA_EACH(alloc_done, rt, r == CUDA_SUCCESS && dptr ? *dptr : 0, bytesize, since(t0), r);
    return r;
}

CUresult ga_hook_alloc_pitch(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t *pPitch,
                             size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes)
{
    uint64_t t0 = ga_hooks_t0();
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height,
                                                    ElementSizeBytes);
    ga_work_end(rt, r, GA_NOSTREAM, false, true);
    size_t bytes = r == CUDA_SUCCESS ? *pPitch * Height : WidthInBytes * Height;
    GA_EACH(alloc_done, rt, r == CUDA_SUCCESS ? *dptr : 0, bytes, since(t0), r);
    return r;
}

CUresult ga_hook_free(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dptr)
{
    uint64_t t0 = ga_hooks_t0();
    CUresult r;
    ga_flush(rt, GA_FLUSH_ALL, NULL);
    /* No current context is needed: the driver frees a pointer in its owning
     * context whatever is current (none included). */
    if (!GA_SERVE(free, rt, id, dptr, GA_NOSTREAM, &r))
        r = ga_dev_free_driver(rt, id, dptr);
    GA_EACH(free_done, rt, dptr, since(t0), r);
    return r;
}

CUresult ga_hook_free_async(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dptr, CUstream hStream)
{
    uint64_t t0 = ga_hooks_t0();
    CUresult r;
    ga_flush(rt, GA_FLUSH_STREAM, hStream);
    ga_work_begin(rt, true);
    if (GA_SERVE(free, rt, id, dptr, hStream, &r)) {
        ga_work_end(rt, r, GA_NOSTREAM, false, true);
    } else {
        r = GA_REAL(rt, id, cuMemFreeAsync)(dptr, hStream);
        ga_work_end(rt, r, hStream, ga_entries[id].per_thread, true);
    }
    GA_EACH(free_done, rt, dptr, since(t0), r);
    return r;
}

CUresult ga_hook_meminfo(const ga_rt_t *rt, ga_id_t id, size_t *free_bytes, size_t *total)
{
    CUresult r = GA_REAL(rt, id, cuMemGetInfo_v2)(free_bytes, total);
    if (r != CUDA_SUCCESS || !free_bytes || !total || !ga_dispatch.n_held_free)
        return r;
    /* What features hold for the program is free as far as it is concerned. */
    CUcontext ctx = ga_current_ctx(rt);
    size_t held = 0;
    for (unsigned i = 0; i < ga_dispatch.n_held_free; i++)
        held += ga_dispatch.held_free[i](ctx);
    *free_bytes = *free_bytes + held > *total ? *total : *free_bytes + held;
    return r;
}

CUresult ga_hook_addr_range(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *pbase, size_t *psize,
                            CUdeviceptr dptr)
{
    __typeof__(&cuMemGetAddressRange_v2) real = GA_REAL(rt, id, cuMemGetAddressRange_v2);
    CUresult r = real(pbase, psize, dptr); /* the program's own call, for its answer */
    if (r != CUDA_SUCCESS || !psize || !ga_dispatch.n_asked_size)
        return r;
    CUdeviceptr base = 0;
    size_t size, asked;
    if (pbase)
        base = *pbase;
    else if (real(&base, &size, dptr) != CUDA_SUCCESS) /* the program did not ask for it */
        return r;
    /* A block may be larger than asked for: report the allocation the program made. */
    if (GA_SERVE(asked_size, base, dptr, &asked))
        *psize = asked;
    return r;
}

/* Every allocation [dptr, dptr + size) touches is shared, each named by the
 * start the driver gives it (CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: the key
 * coalescing looks memory up by, and a pool block's own base); at most 64 of
 * them, and dptr itself where the driver names none. */
static void share_range(const ga_rt_t *rt, CUdeviceptr dptr, size_t size)
{
    __typeof__(&cuPointerGetAttributes) get =
        GA_REAL(rt, GA_ID_cuPointerGetAttributes, cuPointerGetAttributes);
    CUdeviceptr at = dptr, end = dptr + size < dptr ? ~(CUdeviceptr)0 : dptr + size;
    unsigned marked = 0;
    while (get && at < end && marked < 64) {
        CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                       CU_POINTER_ATTRIBUTE_RANGE_SIZE};
        CUdeviceptr start = 0;
        size_t len = 0;
        void *data[] = {&start, &len};
        if (get(2, attrs, data, at) != CUDA_SUCCESS || !len || start > at || start + len <= at)
            break;
        GA_EACH(shared, rt, start, true);
        marked++;
        at = start + len;
    }
    if (!marked)
        GA_EACH(shared, rt, dptr, true);
}

CUresult ga_hook_ipc_get(const ga_rt_t *rt, ga_id_t id, CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    CUresult r = GA_REAL(rt, id, cuIpcGetMemHandle)(pHandle, dptr);
    if (r == CUDA_SUCCESS) /* another process may map it, and write it */
        share_range(rt, dptr, 1);
    return r;
}

/* A dma-buf of device memory (a NIC or another device driver may write it,
 * as GPUDirect RDMA over dma-buf does): what it covers is shared. */
CUresult ga_hook_range_export(const ga_rt_t *rt, ga_id_t id, void *handle, CUdeviceptr dptr,
                              size_t size, CUmemRangeHandleType handleType,
                              unsigned long long flags)
{
    CUresult r = GA_REAL(rt, id, cuMemGetHandleForAddressRange)(handle, dptr, size, handleType,
                                                                 flags);
    if (r == CUDA_SUCCESS)
        share_range(rt, dptr, size);
    return r;
}

CUresult ga_hook_ipc_open(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *pdptr,
                          CUipcMemHandle handle, unsigned int Flags)
{
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuIpcOpenMemHandle_v2)(pdptr, handle, Flags);
    if (r == CUDA_SUCCESS && pdptr) /* another process writes it */
        GA_EACH(shared, rt, *pdptr, false);
    ga_work_end(rt, r, GA_NOSTREAM, false, true);
    return r;
}

/* Stream-ordered allocation: the features that keep the driver's pools are
 * told first (they may adjust the pool before its first use); then the
 * driver, with one retry after the features gave memory back on
 * out-of-memory. Under capture the call reaches the graph untouched. */
/* The program's own call: from its pool, or the device's current one. */
static CUresult driver_alloc_async(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr,
                                   size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    if (pool)
        return GA_REAL(rt, id, cuMemAllocFromPoolAsync)(dptr, bytesize, pool, hStream);
    return GA_REAL(rt, id, cuMemAllocAsync)(dptr, bytesize, hStream);
}

static CUresult alloc_async_common(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr,
                                   size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    bool pt = ga_entries[id].per_thread;
    uint64_t t0 = ga_hooks_t0();
    ga_flush(rt, GA_FLUSH_STREAM, hStream);
    ga_work_begin(rt, true);
    if (!ga_serving_off())
        GA_EACH(alloc_async_begin, rt, pool, hStream, pt);
    CUresult r = driver_alloc_async(rt, id, dptr, bytesize, pool, hStream);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && !ga_serving_off() && ga_reclaim(rt, false))
        r = driver_alloc_async(rt, id, dptr, bytesize, pool, hStream);
    ga_work_end(rt, r, hStream, pt, true);
    GA_EACH(alloc_done, rt, r == CUDA_SUCCESS && dptr ? *dptr : 0, bytesize, since(t0), r);
    return r;
}

CUresult ga_hook_alloc_async(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytesize,
                             CUstream hStream)
{
    return alloc_async_common(rt, id, dptr, bytesize, NULL, hStream);
}

CUresult ga_hook_alloc_pool_async(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr,
                                  size_t bytesize, CUmemoryPool pool, CUstream hStream)
{
    if (!pool) /* the driver's own error for a NULL pool, through its own entry */
        return GA_REAL(rt, id, cuMemAllocFromPoolAsync)(dptr, bytesize, pool, hStream);
    return alloc_async_common(rt, id, dptr, bytesize, pool, hStream);
}

CUresult ga_hook_pool_set_attr(const ga_rt_t *rt, ga_id_t id, CUmemoryPool pool,
                               CUmemPool_attribute attr, void *value)
{
    CUresult r;
    if (!GA_SERVE(pool_attr, rt, true, pool, attr, value, &r))
        r = GA_REAL(rt, id, cuMemPoolSetAttribute)(pool, attr, value);
    return r;
}

CUresult ga_hook_pool_get_attr(const ga_rt_t *rt, ga_id_t id, CUmemoryPool pool,
                               CUmemPool_attribute attr, void *value)
{
    CUresult r;
    if (!GA_SERVE(pool_attr, rt, false, pool, attr, value, &r))
        r = GA_REAL(rt, id, cuMemPoolGetAttribute)(pool, attr, value);
    return r;
}
