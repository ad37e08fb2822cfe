/* hostmem.c - hooks for page-locked host memory: cuMemHostAlloc,
 * cuMemAllocHost and cuMemFreeHost. Offered to the features that serve them
 * (the pinned cache); otherwise the driver's call exactly as a plain entry
 * point makes it; then the observers are told (the tuner). Held-back work
 * goes out first either way (a free may synchronize, and the cache fences a
 * freed block behind the work enqueued).
 * The epochs move around the driver's own calls only (ga_host_alloc_driver,
 * ga_host_free_driver: these map memory and may synchronize): a block the
 * cache hands out or takes back maps and writes nothing.
 * Bumping them on every served call cost a loop of allocations and frees the
 * cache served 40-70 ns a pair on the fake driver once a feature kept the
 * epochs. (On an H200 such a loop still ran ~0.4 us a pair slower with
 * coalescing on than with the cache alone after this: a cost not found yet.) */
#include "core/hooks.h"
#include "core/log.h"
#include "hooks/dispatch.h"
#include "tracking/streams.h"

static CUresult host_alloc(const ga_rt_t *rt, ga_id_t id, void **pp, size_t bytesize,
                           unsigned Flags)
{
    CUresult r;
    ga_flush(rt, GA_FLUSH_ALL, GA_NOSTREAM);
    /* What features hold gives way before the driver's error is final, served
     * or not; then the program's allocation once more. */
    for (int pass = 0; pass < 2; pass++) {
        if (!GA_SERVE(host_alloc, rt, pp, bytesize, Flags, &r))
            r = ga_host_alloc_driver(rt, pp, bytesize, id == GA_ID_cuMemAllocHost_v2, Flags);
        if (r != CUDA_ERROR_OUT_OF_MEMORY || pass || !ga_reclaim(rt, true))
            break;
    }
    ga_debug("host alloc: %zu bytes, flags %#x%s: %s %p", bytesize, Flags & ~GA_HOSTALLOC_LEGACY,
             Flags & GA_HOSTALLOC_LEGACY ? " (cuMemAllocHost)" : "", r ? "error" : "at",
             pp && !r ? *pp : NULL);
    GA_EACH(host_alloc_done, rt, r == CUDA_SUCCESS && pp ? *pp : NULL, bytesize, r);
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
    (void)id; /* cuMemFreeHost's, the one entry point it hooks */
    CUresult r;
    ga_flush(rt, GA_FLUSH_ALL, GA_NOSTREAM);
    if (!GA_SERVE(host_free, rt, p, &r))
        r = ga_host_free_driver(rt, p);
    GA_EACH(host_free_done, rt, p, r);
    return r;
}
