/* pinned.c - page-locked host memory served from a cache (GPUACCEL_PINNED).
 *
 * cuMemHostAlloc page-locks memory at 1-2 GB/s: a 64 KiB cudaMallocHost +
 * cudaFreeHost pair costs about a millisecond, 64 MiB tens of milliseconds,
 * and provers that stage each upload through fresh pinned buffers pay it
 * every time. Freed blocks are kept here and handed out again, by size class
 * (four per power of two above 4 KiB, so at most a quarter is slack), only to
 * a request from the same context with the same flags (portable, mapped,
 * write-combined: a block is exactly what a fresh one would be, checked with
 * the driver when portable or write-combined was asked: see as_asked). PyTorch's
 * CachingHostAllocator does the same for its own tensors; this serves any
 * program.
 *
 * A freed block may still be read or written by an asynchronous copy the
 * program queued before freeing it (the driver's own cuMemFreeHost waits for
 * the device). It is reused only after a fence recorded at the free has
 * completed (tracking/streams.h), the rule the device pool follows. Freed
 * bytes kept are bounded by GPUACCEL_PINNED_LIMIT: beyond it the oldest go
 * back to the driver; all of them go back when an allocation runs out of
 * memory; the rest at process exit with the process.
 *
 * Owns: the live and free block tables, under `lock`.
 * Must never: call the driver holding `lock`; hand out a block whose fence
 * has not completed; make a driver call of its own while anything captures. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <unistd.h>

#include "core/log.h"
#include "features/feature.h"
#include "tracking/device.h"
#include "tracking/streams.h"

enum { MAX_FREE = 256, TRY = 4 };

typedef struct block {
    void *p;
    size_t size;         /* the class: what was page-locked */
    unsigned flags;
    CUcontext ctx;
    ga_fence_t fence;    /* a free block: reusable once it completes */
    struct block *prev, *next; /* the free list, oldest first */
    UT_hash_handle hh;   /* live blocks, by p */
} block_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block_t *live;          /* under lock: handed out */
static block_t *oldest, *newest; /* under lock: free, in the order freed */
static size_t free_bytes;      /* under lock */
static unsigned n_free;        /* under lock */
static uint64_t limit;         /* set once at init */
static _Atomic uint64_t hits, misses;

/* The class of a request: 4 KiB, then four steps per power of two. */
static size_t class_of(size_t n)
{
    if (n <= 4096)
        return 4096;
    unsigned k = 63 - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
    size_t step = (size_t)1 << (k - 2);
    return (n + step - 1) / step * step;
}

static void unlink_locked(block_t *b)
{
    *(b->prev ? &b->prev->next : &oldest) = b->next;
    *(b->next ? &b->next->prev : &newest) = b->prev;
    b->prev = b->next = NULL;
    free_bytes -= b->size;
    n_free--;
}

static void append_locked(block_t *b)
{
    b->prev = newest;
    b->next = NULL;
    *(newest ? &newest->next : &oldest) = b;
    newest = b;
    free_bytes += b->size;
    n_free++;
}

/* Page-locked memory is taken from every other process on the machine: what
 * is kept stays under an eighth of physical memory whatever the setting says
 * (4 GiB on a 32 GiB machine), said once at info level when that binds. */
static void pinned_init(const ga_rt_t *rt)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t cap = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 8 : UINT64_MAX;
    limit = rt->cfg.pinned_limit < cap ? rt->cfg.pinned_limit : cap;
    if (limit < rt->cfg.pinned_limit)
        ga_log(GA_LOG_INFO, "pinned: keeps at most %llu MiB (an eighth of this machine's memory)",
               (unsigned long long)(limit >> 20));
}

/* cuMemAllocHost's blocks are made by cuMemAllocHost (the driver chooses
 * their flags: cudaMallocHost memory reports itself portable) and reused only
 * for it; cuMemHostAlloc's with the program's flags. */
static CUresult real_alloc(const ga_rt_t *rt, void **p, size_t size, unsigned flags)
{
    return ga_host_alloc_driver(rt, p, size, flags & GA_HOSTALLOC_LEGACY, flags);
}

static void give_back(const ga_rt_t *rt, block_t *b)
{
    ga_fence_release(rt, &b->fence);
    ga_host_free_driver(rt, b->p);
    free(b);
}

/* Each block of a list (linked by next) back to the driver, outside the lock. */
static void give_back_list(const ga_rt_t *rt, block_t *list)
{
    for (block_t *b = list, *next; b; b = next) {
        next = b->next;
        give_back(rt, b);
    }
}

/* Free block b off the free list and onto *out. */
static void move_out_locked(block_t *b, block_t **out)
{
    unlink_locked(b);
    b->next = *out;
    *out = b;
}

/* A free block of (ctx, flags, size) whose fence has completed, or NULL.
 * Up to TRY candidates are taken out under the lock and checked outside it
 * (a fence check may ask the driver); the others go back. */
static block_t *take(const ga_rt_t *rt, CUcontext ctx, unsigned flags, size_t size)
{
    block_t *cand[TRY], *got = NULL;
    unsigned n = 0;
    pthread_mutex_lock(&lock);
    for (block_t *b = oldest, *next; b && n < TRY; b = next) {
        next = b->next;
        if (b->ctx == ctx && b->flags == flags && b->size == size) {
            unlink_locked(b);
            cand[n++] = b;
        }
    }
    pthread_mutex_unlock(&lock);
    for (unsigned i = 0; i < n && !got; i++)
        if (ga_fence_empty(&cand[i]->fence) || ga_fence_done(rt, &cand[i]->fence)) {
            ga_fence_release(rt, &cand[i]->fence);
            got = cand[i];
            cand[i] = NULL;
        }
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < n; i++)
        if (cand[i])
            append_locked(cand[i]);
    pthread_mutex_unlock(&lock);
    return got;
}

static void release_all(const ga_rt_t *rt)
{
    pthread_mutex_lock(&lock);
    block_t *list = oldest;
    oldest = newest = NULL;
    free_bytes = 0;
    n_free = 0;
    pthread_mutex_unlock(&lock);
    give_back_list(rt, list);
}

/* Free blocks of flags other than `flags` go back to the driver. */
static void release_others(const ga_rt_t *rt, unsigned flags)
{
    block_t *out = NULL;
    pthread_mutex_lock(&lock);
    for (block_t *b = oldest, *next; b; b = next) {
        next = b->next;
        if (b->flags != flags)
            move_out_locked(b, &out);
    }
    pthread_mutex_unlock(&lock);
    give_back_list(rt, out);
}

/* Whether the driver reports p with the portable and write-combined bits
 * asked for. It page-locks small requests inside chunks that several share,
 * and a request placed in a chunk another allocation holds takes that
 * chunk's bits (H100, driver 580: a 256 KiB portable request, placed beside
 * blocks kept here that had been asked without it, was reported not
 * portable). Natively those blocks were freed already. */
static bool as_asked(const ga_rt_t *rt, void *p, unsigned flags)
{
    unsigned want = flags & (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED), got = 0;
    if (!want || (flags & GA_HOSTALLOC_LEGACY))
        return true;
    if (GA_REAL(rt, GA_ID_cuMemHostGetFlags, cuMemHostGetFlags)(&got, p) != CUDA_SUCCESS)
        return true; /* cannot tell: as the driver made it */
    return (got & want) == want;
}

/* A new page-locked block. One that came out without the bits asked for is
 * made again after the free blocks of other flags went back, so that it is
 * placed as it would have been natively. */
static block_t *fresh(const ga_rt_t *rt, CUcontext ctx, unsigned flags, size_t size)
{
    void *p = NULL;
    CUresult r = real_alloc(rt, &p, size, flags);
    if (r == CUDA_ERROR_OUT_OF_MEMORY && n_free) {
        release_all(rt);
        r = real_alloc(rt, &p, size, flags);
    }
    if (r == CUDA_SUCCESS && !as_asked(rt, p, flags)) {
        ga_host_free_driver(rt, p);
        release_others(rt, flags);
        r = real_alloc(rt, &p, size, flags);
        ga_debug("pinned: %zu bytes with flags %#x made again apart from other blocks: %s", size,
                 flags, r ? "failed" : as_asked(rt, p, flags) ? "as asked" : "still not as asked");
    }
    block_t *b = r == CUDA_SUCCESS ? calloc(1, sizeof *b) : NULL;
    if (!b) {
        if (r == CUDA_SUCCESS)
            ga_host_free_driver(rt, p);
        return NULL; /* the program's own call then gets the driver's answer */
    }
    b->p = p;
    b->size = size;
    b->flags = flags;
    b->ctx = ctx;
    return b;
}

static bool pinned_alloc(const ga_rt_t *rt, void **pp, size_t bytes, unsigned flags,
                         CUresult *r)
{
    const unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                           CU_MEMHOSTALLOC_WRITECOMBINED | GA_HOSTALLOC_LEGACY;
    size_t size = class_of(bytes);
    if (!pp || !bytes || (flags & ~known) || size > limit || ga_serving_off())
        return false;
    CUcontext ctx = ga_current_ctx(rt);
    if (!ctx)
        return false; /* the driver's own error */
    block_t *b = take(rt, ctx, flags, size);
    atomic_fetch_add_explicit(b ? &hits : &misses, 1, memory_order_relaxed);
    if (!b && !(b = fresh(rt, ctx, flags, size)))
        return false;
    pthread_mutex_lock(&lock);
    HASH_ADD_PTR(live, p, b);
    pthread_mutex_unlock(&lock);
    *pp = b->p;
    *r = CUDA_SUCCESS;
    return true;
}

/* Keep b for reuse behind a fence; the oldest beyond the limit go back. */
static void keep(const ga_rt_t *rt, block_t *b)
{
    block_t *out = NULL;
    pthread_mutex_lock(&lock);
    append_locked(b);
    while (oldest && (free_bytes > limit || n_free > MAX_FREE))
        move_out_locked(oldest, &out);
    pthread_mutex_unlock(&lock);
    give_back_list(rt, out);
}

static bool pinned_free(const ga_rt_t *rt, void *p, CUresult *r)
{
    block_t *b = NULL;
    if (!p)
        return false;
    pthread_mutex_lock(&lock);
    HASH_FIND_PTR(live, &p, b);
    if (b)
        HASH_DEL(live, b);
    pthread_mutex_unlock(&lock);
    if (!b)
        return false; /* not ours: the driver's */
    bool kept = !ga_serving_off() && ga_current_ctx(rt) == b->ctx &&
                (ga_fence_idle(b->ctx, &b->fence) || ga_fence_init(rt, b->ctx, &b->fence));
    if (!kept) {
        *r = ga_host_free_driver(rt, b->p);
        free(b);
        return true;
    }
    keep(rt, b);
    *r = CUDA_SUCCESS;
    return true;
}

static bool pinned_reclaim(const ga_rt_t *rt, bool host)
{
    if (!host || ga_serving_off() || !n_free) /* n_free read racily: a hint */
        return false;
    release_all(rt);
    return true;
}

/* The context's memory went with it: forget its blocks, free nothing. */
static void pinned_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    (void)rt;
    pthread_mutex_lock(&lock);
    for (block_t *b = oldest, *next; b; b = next) {
        next = b->next;
        if (b->ctx == ctx) {
            unlink_locked(b);
            ga_fence_drop(&b->fence);
            free(b);
        }
    }
    block_t *b, *tmp;
    HASH_ITER(hh, live, b, tmp)
        if (b->ctx == ctx) {
            HASH_DEL(live, b);
            free(b);
        }
    pthread_mutex_unlock(&lock);
}

static void pinned_report(void)
{
    ga_report_served("pinned", &hits, &misses, "page-locked allocations served from the cache");
    if (!atomic_load(&hits) && !atomic_load(&misses))
        return;
    pthread_mutex_lock(&lock);
    size_t kept = free_bytes;
    pthread_mutex_unlock(&lock);
    ga_log(GA_LOG_INFO, "pinned: %zu bytes kept at exit (at most %llu)", kept,
           (unsigned long long)limit);
}

static void fork_child(void)
{
    live = oldest = newest = NULL; /* the child cannot use the parent's CUDA state */
    free_bytes = 0;
    n_free = 0;
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

GA_SWITCH(pinned)

const ga_feature_t ga_feature_pinned = {
    .summary = "page-locked host allocations served from a cache",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuMemHostAlloc, GA_ID_cuMemAllocHost_v2, GA_ID_cuMemFreeHost,
             GA_ID_cuEventCreate, GA_ID_cuEventRecord, GA_ID_cuEventQuery,
             GA_ID_cuCtxGetCurrent, GA_ID_cuMemHostGetFlags),
    .uses = GA_USES_STREAMS,
    .init = pinned_init,
    .report = pinned_report,
    .fork = &fork_ops,
    .host_alloc = pinned_alloc,
    .host_free = pinned_free,
    .reclaim = pinned_reclaim,
    .ctx_gone = pinned_ctx_gone,
};
