/* hostmem.c - hooks for page-locked host memory: cuMemHostAlloc,
 * cuMemAllocHost and cuMemFreeHost. Offered to the features that serve them
 * (the pinned cache); otherwise the driver's call exactly as a plain entry
 * point makes it. Held-back work goes out first either way (a free may
 * synchronize, and the cache fences a freed block behind the work enqueued).
 * The epochs move around the driver's own calls only (these map memory and
 * may synchronize: writers): a block the cache hands out or takes back maps
 * and writes nothing, and the cache moves them around its own driver calls.
 * Bumping them on every served call cost a loop of allocations and frees the
 * cache served 40-70 ns a pair on the fake driver once a feature kept the
 * epochs. (On an H200 such a loop still ran ~0.4 us a pair slower with
 * coalescing on than with the cache alone after this: a cost not found yet.) */
#include "core/hooks.h"
#include "core/log.h"
#include "hooks/dispatch.h"
#include "tracking/streams.h"

/* The program's own call: cuMemAllocHost has no flags (Flags then holds only
 * GA_HOSTALLOC_LEGACY, which the features read). */
static CUresult driver_alloc(const ga_rt_t *rt, ga_id_t id, void **pp, size_t bytesize,
                             unsigned Flags)
{
    CUresult r;
    ga_work_begin(rt, true);
    if (id == GA_ID_cuMemAllocHost_v2)
        r = GA_REAL(rt, id, cuMemAllocHost_v2)(pp, bytesize);
    else
        r = GA_REAL(rt, id, cuMemHostAlloc)(pp, bytesize, Flags);
    ga_work_end(rt, r, GA_NOSTREAM, false, true);
    return r;
}

static CUresult host_alloc(const ga_rt_t *rt, ga_id_t id, void **pp, size_t bytesize,
                           unsigned Flags)
{
    CUresult r;
    ga_flush(rt, GA_FLUSH_ALL, GA_NOSTREAM);
    /* What features hold gives way before the driver's error is final, served
     * or not; then the program's allocation once more. */
    for (int pass = 0; pass < 2; pass++) {
        if (!GA_SERVE(host_alloc, rt, pp, bytesize, Flags, &r))
            r = driver_alloc(rt, id, pp, bytesize, Flags);
        if (r != CUDA_ERROR_OUT_OF_MEMORY || pass || !ga_reclaim(rt, true))
            break;
    }
    ga_debug("host alloc: %zu bytes, flags %#x%s: %s %p", bytesize, Flags & ~GA_HOSTALLOC_LEGACY,
             Flags & GA_HOSTALLOC_LEGACY ? " (cuMemAllocHost)" : "", r ? "error" : "at",
             pp && !r ? *pp : NULL);
    return r;
}

CUresult ga_hook_host_alloc(const ga_rt_t *rt, ga_id_t id, void **pp, size_t bytesize,
                            unsigned int Flags)
{
    return host_alloc(rt, id, pp, bytesize, Flags);
}

CUresult ga_hook_host_alloc_v2(const ga_rt_t *rt, ga_id_t id, void **pp, size_t bytesize)
{
    return host_alloc(rt, id, pp, bytesize, GA_HOSTALLOC_LEGACY);
}

CUresult ga_hook_host_free(const ga_rt_t *rt, ga_id_t id, void *p)
{
    CUresult r;
    ga_flush(rt, GA_FLUSH_ALL, GA_NOSTREAM);
    if (GA_SERVE(host_free, rt, p, &r))
        return r;
    ga_work_begin(rt, true);
    r = GA_REAL(rt, id, cuMemFreeHost)(p);
    ga_work_end(rt, r, GA_NOSTREAM, false, true);
    return r;
}
