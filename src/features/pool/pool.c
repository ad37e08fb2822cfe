/* pool.c - allocations served from a per-context cache of whole device blocks
 * (GPUACCEL_POOL), with cuMemFree's guarantee kept.
 *
 * A block is a real cuMemAlloc of its size class (8 classes per power of two),
 * never split, so pointer attributes, address ranges and IPC handles are those
 * of a real allocation. cuMemFree does not free: it records a fence (streams.h)
 * and queues the block; the block is handed out again only once the fence shows
 * that everything enqueued before the free has finished, on every stream.
 * The host never blocks in free. On allocation failure the cache is given back
 * to the driver and the allocation retried before the driver's error is
 * returned. Blocks freed while a stream capture is under way, blocks with an
 * IPC handle, and pitched allocations go straight to the driver.
 *
 * A thread's own free-then-allocate takes no lock: a block of up to 1 MiB that
 * a thread frees while its context is idle (the fence would be empty) goes to
 * that thread's cache, and its next allocation of the class takes it back
 * from there (see tcache.c for how other threads stay safe).
 *
 * The files: internal.h (what they share: the block record, its ownership
 * word, the lock), block.c (size classes, records, the block table), cache.c
 * (the per-context pools), early.c (blocks handed out before their fence
 * completed), tcache.c (the thread caches), and this one: the feature's
 * handlers, its counts and report, fork, and the descriptor.
 * Owns: `lock` (internal.h says what it guards) and the count of misses.
 * Must never (nor any file of the pool): call the driver while holding
 * `lock`; hand out a block whose fence has not completed; change an error
 * code the driver would return.
 * Prior art, read not copied: PyTorch's CUDACachingAllocator (event-guarded
 * reuse across streams), RMM's pool resource (size classes). Both split blocks
 * and own one device's memory; this pool never splits, for IPC and range
 * queries, and keys everything by context for multi-GPU programs. */
#define _GNU_SOURCE
#include "features/pool/internal.h"

#include "core/log.h"
#include "features/feature.h"

pthread_mutex_t ga_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint64_t misses;

static void poison(const ga_rt_t *rt, const block_t *b)
{
    __typeof__(&cuMemsetD8_v2) set = GA_REAL(rt, GA_ID_cuMemsetD8_v2, cuMemsetD8_v2);
    __typeof__(&cuStreamSynchronize) sync =
        GA_REAL(rt, GA_ID_cuStreamSynchronize, cuStreamSynchronize);
    /* Done before the block is handed out: a non-blocking stream's first write
     * must not be overtaken by the poison. Not while a capture is open (a
     * legacy-stream memset and a sync would invalidate it). */
    if (!ga_own_calls_enter())
        return;
    ga_data_begin(rt); /* it writes the block: no reader may trust what it held */
    CUresult r = set ? set(b->ptr, 0xA5, b->size) : CUDA_ERROR_NOT_SUPPORTED;
    if (r == CUDA_SUCCESS && sync)
        sync(CU_STREAM_LEGACY);
    ga_data_end(rt, r, GA_NOSTREAM, false);
    ga_own_calls_leave();
}

/* ---- handlers ------------------------------------------------------------------ */

/* A miss: a new block of class c from the driver, the cache given back and
 * the allocation retried if the driver is out of memory. */
static void alloc_new(const ga_rt_t *rt, ga_id_t id, tcache_t *tc, CUcontext ctx, int c,
                      CUdeviceptr *dptr, size_t bytesize, CUresult *r)
{
    atomic_fetch_add_explicit(&misses, 1, memory_order_relaxed);
    size_t size = class_bytes(c);
    *r = ga_dev_alloc_driver(rt, id, dptr, size);
    if (*r == CUDA_ERROR_OUT_OF_MEMORY) {
        ga_pool_release_cache(rt, ctx);
        *r = ga_dev_alloc_driver(rt, id, dptr, size);
    }
    if (*r == CUDA_ERROR_OUT_OF_MEMORY && size != bytesize) {
        /* the class rounding may be what does not fit */
        *r = ga_dev_alloc_driver(rt, id, dptr, bytesize);
        size = bytesize, c = -1;
    }
    /* Without a record it is a plain allocation, freed by the driver. */
    uint64_t own = 0;
    block_t *b;
    if (*r == CUDA_SUCCESS &&
        (b = ga_pool_remember(*dptr, size, bytesize, ctx, c, ga_pool_holder_of(tc), &own)))
        ga_pool_note_live(tc, b, own, ctx, c);
}

/* A cached block of class c: from this thread's cache, else from ctx's pool;
 * NULL if neither has one. *tc: this thread's cache, or NULL. */
static block_t *alloc_cached(const ga_rt_t *rt, CUcontext ctx, int c, size_t bytesize,
                             tcache_t **tc)
{
    uint64_t own = 0;
    /* Poisoning fills every reused block: only the locked path does it. */
    block_t *b = rt->cfg.pool_poison ? NULL : ga_pool_alloc_fast(ctx, c, tc, &own);
    if (b) {
        atomic_store_explicit(&b->requested, bytesize, memory_order_relaxed);
        return b;
    }
    if (!(b = ga_pool_take_cached(rt, ga_pool_holder_of(*tc), ctx, c, &own)))
        return NULL;
    atomic_store_explicit(&b->requested, bytesize, memory_order_relaxed);
    if (rt->cfg.pool_poison)
        poison(rt, b);
    ga_pool_note_live(*tc, b, own, ctx, c);
    return b;
}

/* Served: a cached block, or a new one of its class from the driver. */
static bool pool_alloc(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytesize,
                       CUresult *r)
{
    int c = class_of(bytesize);
    CUcontext ctx = NULL;
    if (!pooling(rt) || !dptr || bytesize == 0 || c < 0 || !(ctx = ga_current_ctx(rt)))
        return false; /* the driver's own answer, errors included */
    tcache_t *tc = NULL;
    block_t *b = alloc_cached(rt, ctx, c, bytesize, &tc);
    if (!b) {
        alloc_new(rt, id, tc, ctx, c, dptr, bytesize, r);
        return true;
    }
    *dptr = b->ptr;
    *r = CUDA_SUCCESS;
    return true;
}

/* The driver refused an allocation the pool did not serve (after a fault,
 * say): the cache gives way, except during a capture, where a free would
 * invalidate the program's capture. */
static bool pool_reclaim(const ga_rt_t *rt, bool host)
{
    CUcontext ctx = host ? NULL : ga_current_ctx(rt);
    if (ga_capture_active() || !ctx || !ga_pool_cached_in(ctx))
        return false;
    ga_pool_release_cache(rt, ctx);
    return true;
}

/* Served: the block goes to the pool (or this thread's cache) behind a fence.
 * A stream-ordered free (s given) of a pooled block: the fence covers s if the
 * tracker saw work on it, which it did if the program used the block there. */
static bool pool_free(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dptr, CUstream s, CUresult *r)
{
    (void)id;
    if (!dptr)
        return false;
    if (s == GA_NOSTREAM && ga_pool_free_fast(rt, dptr)) {
        *r = CUDA_SUCCESS;
        return true;
    }
    return ga_pool_keep(rt, dptr, r);
}

static size_t pool_held_free(CUcontext ctx)
{
    return ga_pool_cached_in(ctx);
}

/* A block may be larger than asked for (its size class): the allocation the
 * program made is what it asked. */
static bool pool_asked_size(CUdeviceptr base, CUdeviceptr dptr, size_t *size)
{
    pthread_mutex_lock(&ga_pool_lock);
    block_t *b = ga_pool_find_locked(base);
    size_t asked = b ? atomic_load_explicit(&b->requested, memory_order_relaxed) : 0;
    bool known = b && state_of(b) == B_LIVE && dptr < base + asked;
    pthread_mutex_unlock(&ga_pool_lock);
    if (known)
        *size = asked;
    return known;
}

/* Another process may map an exported block: it must be freed when the
 * program says, not cached. */
static void pool_shared(const ga_rt_t *rt, CUdeviceptr dptr, bool exported)
{
    (void)rt;
    if (!exported)
        return;
    pthread_mutex_lock(&ga_pool_lock);
    block_t *b = ga_pool_find_locked(dptr);
    if (b) {
        b->exported = true;
        /* The word moves: its thread's cache no longer takes it on a free. */
        ga_pool_move_live(b, true, B_LIVE);
    }
    pthread_mutex_unlock(&ga_pool_lock);
}

/* ---- lifecycle ----------------------------------------------------------------- */

static void forget_gone(block_t *b, void *arg)
{
    (void)arg;
    ga_pool_take_back_locked(b); /* a thread cache's: counted as taken */
    ga_pool_unlink_locked(b);
    ga_fence_drop(&b->fence); /* the driver freed the memory and the events */
    ga_pool_recycle_locked(b);
}

void ga_pool_ctx_gone(CUcontext ctx)
{
    pthread_mutex_lock(&ga_pool_lock);
    ga_pool_each_locked(ctx, forget_gone, NULL);
    ga_pool_outstanding_gone_locked(ctx);
    ga_pool_rebind_caches(); /* thread caches bound to it bind again */
    ga_pool_drop_pool_locked(ctx);
    pthread_mutex_unlock(&ga_pool_lock);
}

void ga_pool_stats(ga_pool_stats_t *s)
{
    s->misses = atomic_load(&misses);
    pthread_mutex_lock(&ga_pool_lock);
    ga_pool_cache_stats_locked(s);
    s->hits += ga_pool_tc_hits_locked();
    s->cached_bytes += ga_pool_held_in_locked(NULL);
    pthread_mutex_unlock(&ga_pool_lock);
}

static void pool_report(void)
{
    ga_pool_stats_t s;
    ga_pool_stats(&s);
    if (s.hits + s.misses == 0)
        return;
    ga_info("pool: hits=%llu (ordered after their fence: %llu) misses=%llu cached_bytes=%zu "
            "trims=%llu releases=%llu",
            (unsigned long long)s.hits, (unsigned long long)s.early,
            (unsigned long long)s.misses, s.cached_bytes, (unsigned long long)s.trims,
            (unsigned long long)s.releases);
}

static void fork_child(void)
{
    /* The child has no CUDA state: forget every block (leaked on purpose). */
    ga_pool_blocks_fork_child();
    ga_pool_cache_fork_child();
    ga_pool_tc_fork_child();
    ga_pool_early_fork_child();
    atomic_store(&misses, 0);
}

static const ga_fork_ops_t fork_ops = {NULL, &ga_pool_lock, fork_child};

static void pool_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    (void)rt;
    ga_pool_ctx_gone(ctx);
}

GA_SWITCH(pool)

const ga_feature_t ga_feature_pool = {
    .summary = "allocations served from a cache of device blocks",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuEventCreate, GA_ID_cuEventRecord, GA_ID_cuEventQuery,
             GA_ID_cuStreamWaitEvent, GA_ID_cuStreamGetFlags, GA_ID_cuStreamGetCtx,
             GA_ID_cuCtxPushCurrent_v2, GA_ID_cuCtxPopCurrent_v2),
    .uses = GA_USES_STREAMS,
    .report = pool_report,
    .fork = &fork_ops,
    .alloc = pool_alloc,
    .reclaim = pool_reclaim,
    .free = pool_free,
    .held_free = pool_held_free,
    .asked_size = pool_asked_size,
    .shared = pool_shared,
    .stream_created = ga_pool_stream_created,
    .ctx_gone = pool_ctx_gone,
};
