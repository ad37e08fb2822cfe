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
 * Owns: `blocks` (every block the pool owns, by address) and `pools` (per
 * context: cached blocks per class, oldest first), both under `lock`.
 * Must never: call the driver while holding `lock`; hand out a block whose
 * fence has not completed; change an error code the driver would return.
 * Prior art, read not copied: PyTorch's CUDACachingAllocator (event-guarded
 * reuse across streams), RMM's pool resource (size classes). Both split blocks
 * and own one device's memory; this pool never splits, for IPC and range
 * queries, and keys everything by context for multi-GPU programs. */
#define _GNU_SOURCE
#include "pool.h"

#include "coalesce.h"
#include "profile.h"
#include "tuner.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* `blocks` is keyed by device address alone: a multiplicative (Fibonacci)
 * hash of the address, whose low bits are zero (blocks are 256-byte aligned
 * or more), instead of uthash's default Jenkins hash of the key's bytes, which
 * took a third of a pooled free's time. uthash picks a bucket from the hash's
 * low bits, which the top half of the product fills. */
#define HASH_FUNCTION(keyptr, keylen, hashv)                                             \
    do {                                                                                 \
        uint64_t k_;                                                                     \
        memcpy(&k_, (keyptr), sizeof k_);                                                \
        (hashv) = (unsigned)((k_ * 0x9E3779B97F4A7C15ull) >> 32);                        \
    } while (0)
#include <uthash.h>

#include "hooks.h"
#include "log.h"
#include "modules.h"
#include "streams.h"

enum {
    MIN_CLASS_BYTES = 256,
    MAX_CLASS_LOG2 = 48,                              /* larger requests bypass the pool */
    N_CLASSES = 1 + (MAX_CLASS_LOG2 - 8) * 8,
};

typedef enum { B_LIVE, B_PENDING, B_CHECKING } bstate_t;

typedef struct block {
    CUdeviceptr ptr;
    size_t size;      /* what the driver allocated */
    size_t requested; /* while live: what the program asked for */
    CUcontext ctx;
    int cls;          /* size class, or -1: freed for real, never cached */
    bstate_t state;
    bool exported;    /* an IPC handle was taken: freed for real */
    ga_fence_t fence; /* while pending */
    struct block *next;
    UT_hash_handle hh;
} block_t;

typedef struct pool {
    CUcontext ctx;
    block_t *head[N_CLASSES], *tail[N_CLASSES]; /* cached blocks, oldest first */
    size_t cached_bytes;
    size_t limit;
    struct pool *next;
} pool_t;

/* The fence of a block handed out before it completed: streams created later
 * must still wait for it (see order_after). */
typedef struct outstanding {
    CUcontext ctx;
    ga_fence_t fence;
    bool borrowed; /* the events still belong to a block's fence: never released here */
    struct outstanding *next;
} outstanding_t;

/* QUERY_AFTER: outstanding fences kept before completed ones are looked for. */
enum { MAX_OUTSTANDING = 1024, MAX_NONBLOCKING = 64, QUERY_AFTER = 8 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static block_t *blocks;             /* guarded by lock */
static pool_t *pools;               /* guarded by lock */
static outstanding_t *outstanding;  /* guarded by lock, newest first */
static unsigned n_outstanding;      /* guarded by lock */
/* Hits are counted under the lock the hit takes anyway: an atomic add more
 * on a path of ~50 ns was measurable. */
static uint64_t hits, early;        /* guarded by lock */
static _Atomic uint64_t misses, trims, releases;

/* ---- size classes ------------------------------------------------------------- */

int ga_pool_class(size_t n)
{
    if (n <= MIN_CLASS_BYTES)
        return 0;
    unsigned e = 63 - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
    if (e >= MAX_CLASS_LOG2)
        return -1;
    size_t step = (size_t)1 << (e - 3);
    size_t k = (n - 1 - ((size_t)1 << e)) / step;
    return 1 + (int)(e - 8) * 8 + (int)k;
}

size_t ga_pool_class_bytes(int c)
{
    if (c <= 0)
        return MIN_CLASS_BYTES;
    unsigned e = 8 + (unsigned)(c - 1) / 8, k = (unsigned)(c - 1) % 8;
    return ((size_t)1 << e) + (size_t)(k + 1) * ((size_t)1 << (e - 3));
}

/* ---- bookkeeping (all under lock) -------------------------------------------- */

static pool_t *pool_of(CUcontext ctx, bool create)
{
    for (pool_t *p = pools; p; p = p->next)
        if (p->ctx == ctx)
            return p;
    if (!create)
        return NULL;
    pool_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->ctx = ctx;
    p->limit = SIZE_MAX; /* set by the caller outside the lock */
    p->next = pools;
    pools = p;
    return p;
}

static void push_back(pool_t *p, block_t *b)
{
    b->next = NULL;
    if (p->tail[b->cls])
        p->tail[b->cls]->next = b;
    else
        p->head[b->cls] = b;
    p->tail[b->cls] = b;
}

static void push_front(pool_t *p, block_t *b)
{
    b->next = p->head[b->cls];
    p->head[b->cls] = b;
    if (!p->tail[b->cls])
        p->tail[b->cls] = b;
}

static block_t *pop_front(pool_t *p, int c)
{
    block_t *b = p->head[c];
    if (b) {
        p->head[c] = b->next;
        if (!p->head[c])
            p->tail[c] = NULL;
        b->next = NULL;
    }
    return b;
}

/* Take every cached block of `p` out, as a list, for freeing for real. */
static block_t *drain_locked(pool_t *p, size_t keep)
{
    block_t *out = NULL;
    for (int c = N_CLASSES - 1; c >= 0 && p->cached_bytes > keep; c--) {
        block_t *b;
        while (p->cached_bytes > keep && (b = pop_front(p, c))) {
            p->cached_bytes -= b->size;
            HASH_DEL(blocks, b);
            b->next = out;
            out = b;
        }
    }
    return out;
}

/* ---- driver calls (outside the lock) ------------------------------------------ */

/* Free a list of blocks for real. cuMemFree synchronizes the device, so a
 * block whose fence is still pending is safe to free here. */
static void free_for_real(const ga_rt_t *rt, block_t *list)
{
    __typeof__(&cuMemFree_v2) mfree = GA_REAL(rt, GA_ID_cuMemFree_v2, cuMemFree_v2);
    while (list) {
        block_t *b = list;
        list = b->next;
        if (mfree && mfree(b->ptr) != CUDA_SUCCESS)
            ga_debug("pool: freeing cached block %#llx failed", (unsigned long long)b->ptr);
        ga_fence_release(rt, &b->fence);
        free(b);
    }
}

static size_t limit_for(const ga_rt_t *rt)
{
    const ga_limit_t *l = &rt->cfg.pool_limit;
    if (l->bytes)
        return l->bytes;
    size_t free_b = 0, total = 0;
    __typeof__(&cuMemGetInfo_v2) info = GA_REAL(rt, GA_ID_cuMemGetInfo_v2, cuMemGetInfo_v2);
    if (!info || info(&free_b, &total) != CUDA_SUCCESS)
        return SIZE_MAX / 2;
    return total / 100 * l->percent;
}

/* Unlink the outstanding fences that a kept one covers (ga_fence_implies):
 * streams created later wait for the newest legacy record, which follows
 * theirs, so they need not be kept, and no driver call learns it. */
static outstanding_t *unlink_covered_locked(void)
{
    outstanding_t *newest = NULL, *gone = NULL;
    for (outstanding_t *o = outstanding; o; o = o->next)
        if (!o->borrowed && o->fence.n > 0 &&
            (!newest || o->fence.rec_begin > newest->fence.rec_begin))
            newest = o;
    for (outstanding_t **pp = &outstanding; newest && *pp;) {
        outstanding_t *o = *pp;
        if (o != newest && !o->borrowed && ga_fence_implies(&newest->fence, &o->fence)) {
            *pp = o->next;
            n_outstanding--;
            o->next = gone;
            gone = o;
        } else {
            pp = &o->next;
        }
    }
    return gone;
}

/* Forget outstanding fences: first those a newer one covers (free), then
 * those that have completed (a few per call, oldest last in the list: they
 * are the likeliest to be done). Asking the driver is what costs (1.5-1.7 us
 * a completed event, see ga_fence_implies): on the allocation path (ask
 * false) a short list, one fence a stream in the usual case, is left alone;
 * a stream creation (rare, and about to wait on each) always asks. */
static void prune_outstanding(const ga_rt_t *rt, bool ask)
{
    pthread_mutex_lock(&lock);
    outstanding_t *gone = unlink_covered_locked();
    bool few = !ask && n_outstanding <= QUERY_AFTER;
    pthread_mutex_unlock(&lock);
    while (gone) {
        outstanding_t *o = gone;
        gone = o->next;
        ga_fence_release(rt, &o->fence); /* later waits on its events are not asked for */
        free(o);
    }
    for (int round = 0; round < 4 && !few; round++) {
        pthread_mutex_lock(&lock);
        outstanding_t **pp = &outstanding;
        while (*pp && (*pp)->next)
            pp = &(*pp)->next;
        outstanding_t *o = *pp;
        if (o && o->borrowed)
            o = NULL; /* the oldest is not ours to release: stop here */
        if (o)
            *pp = NULL, n_outstanding--;
        pthread_mutex_unlock(&lock);
        if (!o)
            return;
        if (!ga_fence_done(rt, &o->fence)) {
            pthread_mutex_lock(&lock); /* put it back, still the oldest */
            for (pp = &outstanding; *pp; pp = &(*pp)->next)
                ;
            *pp = o;
            n_outstanding++;
            pthread_mutex_unlock(&lock);
            return;
        }
        ga_fence_release(rt, &o->fence);
        free(o);
    }
}

/* Hand out a block whose fence has not completed yet, by ordering every later
 * use of it after the fence instead of waiting for it. Any device access the
 * program makes to the block from now on is enqueued on a stream of its
 * context: the legacy stream (made to wait for the fence's other events),
 * blocking streams and per-thread default streams (which wait for earlier
 * legacy-stream work), or a non-blocking stream (each made to wait for every
 * event of the fence; streams created later wait too, while the fence is
 * outstanding). Only with a single context, every stream known, and few
 * non-blocking streams; otherwise the caller allocates afresh. */
static bool order_after(const ga_rt_t *rt, block_t *b)
{
    __typeof__(&cuStreamWaitEvent) wait = GA_REAL(rt, GA_ID_cuStreamWaitEvent, cuStreamWaitEvent);
    outstanding_t *o = wait && !ga_streams_untracked() ? calloc(1, sizeof *o) : NULL;
    if (!o)
        return false;
    CUstream nb[MAX_NONBLOCKING];
    /* List the streams and publish the fence in one critical section: a stream
     * created meanwhile is either listed here or finds the fence when
     * ga_pool_stream_created runs (it is tracked before that takes the lock).
     * None of the listed can be destroyed until the waits are done (use lock,
     * taken after ours: the fork handlers' order). */
    pthread_mutex_lock(&lock);
    ga_stream_use_begin();
    bool alone = pools && !pools->next && n_outstanding < MAX_OUTSTANDING;
    unsigned n = alone ? ga_ctx_nonblocking(b->ctx, nb, MAX_NONBLOCKING) : MAX_NONBLOCKING + 1;
    bool ok = n <= MAX_NONBLOCKING;
    if (ok) { /* borrowed: the block keeps owning the events until this succeeds */
        o->ctx = b->ctx, o->fence = b->fence, o->borrowed = true;
        o->next = outstanding;
        outstanding = o;
        n_outstanding++;
    }
    pthread_mutex_unlock(&lock);
    if (!ok) {
        ga_stream_use_end();
        free(o);
        return false;
    }
    /* Event 0 is the legacy stream's own (streams.c records it first). */
    for (unsigned e = 1; ok && e < b->fence.n; e++)
        ok = wait(CU_STREAM_LEGACY, b->fence.ev[e], 0) == CUDA_SUCCESS;
    for (unsigned i = 0; ok && i < n; i++)
        for (unsigned e = 0; ok && e < b->fence.n; e++)
            ok = wait(nb[i], b->fence.ev[e], 0) == CUDA_SUCCESS;
    ga_stream_use_end();
    if (!ok) { /* some waits may be in place: harmless, they only delay */
        pthread_mutex_lock(&lock); /* the block keeps its fence: forget the borrowed copy */
        for (outstanding_t **op = &outstanding; *op; op = &(*op)->next)
            if (*op == o) {
                *op = o->next;
                n_outstanding--;
                break;
            }
        pthread_mutex_unlock(&lock);
        free(o);
        return false;
    }
    pthread_mutex_lock(&lock);
    o->borrowed = false; /* the fence is the outstanding record's now */
    pthread_mutex_unlock(&lock);
    memset(&b->fence, 0, sizeof b->fence);
    return true;
}

void ga_pool_stream_created(const ga_rt_t *rt, CUstream s)
{
    if (!rt->cfg.pool)
        return;
    prune_outstanding(rt, true);
    __typeof__(&cuStreamWaitEvent) wait = GA_REAL(rt, GA_ID_cuStreamWaitEvent, cuStreamWaitEvent);
    pthread_mutex_lock(&lock); /* waits are cheap and never block: fine under the lock */
    for (outstanding_t *o = outstanding; o && wait; o = o->next)
        for (unsigned e = 0; e < o->fence.n; e++)
            wait(s, o->fence.ev[e], 0);
    pthread_mutex_unlock(&lock);
}

/* A cached block leaves the cache, live again (under lock). */
static void hand_out_locked(pool_t *p, block_t *b)
{
    p->cached_bytes -= b->size;
    b->state = B_LIVE;
    hits++;
}

/* A cached block of class c in ctx, or NULL: one whose fence completed, or
 * one whose later uses could be ordered after its fence. */
static block_t *take_cached(const ga_rt_t *rt, CUcontext ctx, int c)
{
    pthread_mutex_lock(&lock);
    pool_t *p = pool_of(ctx, false);
    block_t *b = p ? pop_front(p, c) : NULL;
    /* Freed while its context was idle: nothing to ask, one critical section. */
    bool empty = b && ga_fence_empty(&b->fence);
    if (b && empty)
        hand_out_locked(p, b);
    else if (b)
        b->state = B_CHECKING;
    pthread_mutex_unlock(&lock);
    if (!b || empty)
        return b;
    bool done = ga_fence_done(rt, &b->fence); /* driver calls: outside the lock */
    bool ordered = !done && order_after(rt, b);
    pthread_mutex_lock(&lock);
    if (done || ordered) {
        hand_out_locked(p, b);
        early += ordered;
    } else {
        b->state = B_PENDING;
        push_front(p, b); /* the oldest is still running: newer ones are too */
        b = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (b && done)
        ga_fence_release(rt, &b->fence);
    if (b && ordered)
        prune_outstanding(rt, false);
    return b;
}

static void poison(const ga_rt_t *rt, const block_t *b)
{
    __typeof__(&cuMemsetD8_v2) set = GA_REAL(rt, GA_ID_cuMemsetD8_v2, cuMemsetD8_v2);
    __typeof__(&cuStreamSynchronize) sync =
        GA_REAL(rt, GA_ID_cuStreamSynchronize, cuStreamSynchronize);
    /* Done before the block is handed out: a non-blocking stream's first write
     * must not be overtaken by the poison. */
    if (set && set(b->ptr, 0xA5, b->size) == CUDA_SUCCESS && sync)
        sync(CU_STREAM_LEGACY);
}

static bool remember(CUdeviceptr ptr, size_t size, size_t requested, CUcontext ctx, int cls)
{
    block_t *b = calloc(1, sizeof *b);
    if (!b)
        return false;
    b->ptr = ptr;
    b->size = size;
    b->requested = requested;
    b->ctx = ctx;
    b->cls = cls;
    b->state = B_LIVE;
    pthread_mutex_lock(&lock);
    HASH_ADD(hh, blocks, ptr, sizeof b->ptr, b);
    pthread_mutex_unlock(&lock);
    return true;
}

/* Give every cached block of ctx back to the driver (allocation failed). */
static void release_cache(const ga_rt_t *rt, CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    pool_t *p = pool_of(ctx, false);
    block_t *list = p ? drain_locked(p, 0) : NULL;
    pthread_mutex_unlock(&lock);
    if (list) {
        atomic_fetch_add(&releases, 1);
        free_for_real(rt, list);
    }
}

static bool pooling(const ga_rt_t *rt)
{
    return rt->cfg.pool && !ga_serving_off();
}

static size_t cached_in(CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    pool_t *p = pool_of(ctx, false);
    size_t n = p ? p->cached_bytes : 0;
    pthread_mutex_unlock(&lock);
    return n;
}

/* ---- hooks --------------------------------------------------------------------- */

static CUresult alloc_block(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytesize)
{
    __typeof__(&cuMemAlloc_v2) real = GA_REAL(rt, id, cuMemAlloc_v2);
    int c = ga_pool_class(bytesize);
    CUcontext ctx = NULL;
    if (!pooling(rt) || !dptr || bytesize == 0 || c < 0 || !(ctx = ga_current_ctx(rt))) {
        ga_work_begin(rt, true);
        CUresult r = real(dptr, bytesize); /* the driver's own answer, errors included */
        /* Not serving after a fault: the cache still gives way (never during a
         * capture, where a free would invalidate the program's capture). */
        if (r == CUDA_ERROR_OUT_OF_MEMORY && rt->cfg.pool && !ga_capture_active() &&
            (ctx || (ctx = ga_current_ctx(rt))) && cached_in(ctx)) {
            release_cache(rt, ctx);
            r = real(dptr, bytesize);
        }
        return r;
    }
    ga_work_begin(rt, true);
    block_t *b = take_cached(rt, ctx, c);
    if (b) {
        b->requested = bytesize;
        if (rt->cfg.pool_poison)
            poison(rt, b);
        *dptr = b->ptr;
        ga_work_end(rt, CUDA_SUCCESS, GA_NOSTREAM, false, true);
        return CUDA_SUCCESS;
    }
    atomic_fetch_add_explicit(&misses, 1, memory_order_relaxed);
    size_t size = ga_pool_class_bytes(c);
    CUresult r = real(dptr, size);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
        release_cache(rt, ctx);
        r = real(dptr, size);
    }
    if (r == CUDA_ERROR_OUT_OF_MEMORY && size != bytesize) {
        r = real(dptr, bytesize); /* the class rounding may be what does not fit */
        size = bytesize, c = -1;
    }
    if (r == CUDA_SUCCESS)
        (void)remember(*dptr, size, bytesize, ctx, c); /* untracked: a plain allocation */
    return r;
}

CUresult ga_hook_alloc(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytesize)
{
    uint64_t t0 = ga_profile_t0();
    CUresult r = alloc_block(rt, id, dptr, bytesize);
    ga_profile_alloc_done(t0, r, dptr ? *dptr : 0, bytesize);
    if (GA_UNLIKELY(rt->tuning) && r == CUDA_SUCCESS)
        ga_tuner_alloc(rt, *dptr, bytesize);
    return r;
}

CUresult ga_hook_alloc_pitch(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t *pPitch,
                             size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes)
{
    uint64_t t0 = ga_profile_t0();
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuMemAllocPitch_v2)(dptr, pPitch, WidthInBytes, Height,
                                                    ElementSizeBytes);
    ga_profile_alloc_done(t0, r, dptr ? *dptr : 0,
                          r == CUDA_SUCCESS ? *pPitch * Height : WidthInBytes * Height);
    return r;
}

/* Queue a freed block in its pool (under lock). Returns the blocks the pool's
 * limit pushes out, for the caller to free outside the lock. */
static block_t *queue_locked(pool_t *p, block_t *b)
{
    push_back(p, b);
    p->cached_bytes += b->size;
    return p->cached_bytes > p->limit ? drain_locked(p, p->limit) : NULL;
}

static void trim(const ga_rt_t *rt, block_t *victims)
{
    if (victims) {
        atomic_fetch_add(&trims, 1);
        free_for_real(rt, victims);
    }
}

/* The pool's part of a free: queue a live block behind a fence. Returns false
 * when the block is not the pool's to keep (the caller frees it for real);
 * *err is set when the pointer is a block the pool already holds (double
 * free). A block freed while its context is idle, in a pool whose limit is
 * known, is queued in the one critical section that finds it. */
static bool keep_block(const ga_rt_t *rt, CUdeviceptr dptr, CUresult *err)
{
    *err = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    block_t *b;
    HASH_FIND(hh, blocks, &dptr, sizeof dptr, b);
    if (b && b->state != B_LIVE) {
        pthread_mutex_unlock(&lock);
        /* what the driver says to a double free, or to anything after a fault */
        *err = ga_faulted() ? ga_fault_code() : CUDA_ERROR_INVALID_VALUE;
        return true;
    }
    if (!b || b->cls < 0 || b->exported || !pooling(rt)) {
        if (b)
            HASH_DEL(blocks, b);
        pthread_mutex_unlock(&lock);
        free(b);
        return false;
    }
    b->state = B_PENDING;
    pool_t *p = pool_of(b->ctx, true);
    if (p && p->limit != SIZE_MAX && ga_fence_idle(b->ctx, &b->fence)) {
        block_t *victims = queue_locked(p, b);
        pthread_mutex_unlock(&lock);
        trim(rt, victims);
        return true;
    }
    bool new_pool = p && p->limit == SIZE_MAX;
    pthread_mutex_unlock(&lock);

    /* Record the fence in the block's own context. */
    CUcontext cur = ga_current_ctx(rt);
    __typeof__(&cuCtxPushCurrent_v2) push =
        GA_REAL(rt, GA_ID_cuCtxPushCurrent_v2, cuCtxPushCurrent_v2);
    __typeof__(&cuCtxPopCurrent_v2) pop = GA_REAL(rt, GA_ID_cuCtxPopCurrent_v2, cuCtxPopCurrent_v2);
    bool switched = cur != b->ctx && push && pop && push(b->ctx) == CUDA_SUCCESS;
    bool fenced = p && (cur == b->ctx || switched) && ga_fence_init(rt, b->ctx, &b->fence);
    size_t limit = new_pool ? limit_for(rt) : 0;
    if (switched) {
        CUcontext dummy;
        pop(&dummy);
    }

    pthread_mutex_lock(&lock);
    if (!fenced) { /* cannot prove when it is safe: let the driver free it */
        HASH_DEL(blocks, b);
        pthread_mutex_unlock(&lock);
        free(b);
        return false;
    }
    if (new_pool)
        p->limit = limit;
    block_t *victims = queue_locked(p, b);
    pthread_mutex_unlock(&lock);
    trim(rt, victims);
    return true;
}

CUresult ga_hook_free(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dptr)
{
    uint64_t t0 = ga_profile_t0();
    ga_modules_flush(rt, GA_FLUSH_ALL, NULL);
    ga_work_begin(rt, true);
    CUresult r;
    /* No current context is needed: the driver frees a pointer in its owning
     * context whatever is current (none included), and so does the pool. */
    if (!(rt->cfg.pool && dptr && keep_block(rt, dptr, &r)))
        r = GA_REAL(rt, id, cuMemFree_v2)(dptr);
    ga_work_end(rt, r, GA_NOSTREAM, false, true);
    ga_profile_free_done(t0, r, dptr);
    if (GA_UNLIKELY(rt->tuning) && r == CUDA_SUCCESS)
        ga_tuner_free(dptr);
    return r;
}

CUresult ga_hook_free_async(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dptr, CUstream hStream)
{
    uint64_t t0 = ga_profile_t0();
    ga_modules_flush(rt, GA_FLUSH_STREAM, hStream);
    ga_work_begin(rt, true);
    CUresult r;
    /* A pooled block freed stream-ordered: the fence covers hStream if the
     * tracker saw work on it, which it did if the program used the block there. */
    if (rt->cfg.pool && dptr && keep_block(rt, dptr, &r))
        ga_work_end(rt, r, GA_NOSTREAM, false, true);
    else {
        r = GA_REAL(rt, id, cuMemFreeAsync)(dptr, hStream);
        ga_work_end(rt, r, hStream, ga_entries[id].per_thread, true);
    }
    ga_profile_free_done(t0, r, dptr);
    if (GA_UNLIKELY(rt->tuning) && r == CUDA_SUCCESS)
        ga_tuner_free(dptr);
    return r;
}

CUresult ga_hook_meminfo(const ga_rt_t *rt, ga_id_t id, size_t *free_bytes, size_t *total)
{
    CUresult r = GA_REAL(rt, id, cuMemGetInfo_v2)(free_bytes, total);
    if (r == CUDA_SUCCESS && rt->cfg.pool && free_bytes && total) {
        /* Cached blocks are free as far as the program is concerned. */
        size_t cached = cached_in(ga_current_ctx(rt));
        *free_bytes = *free_bytes + cached > *total ? *total : *free_bytes + cached;
    }
    return r;
}

CUresult ga_hook_addr_range(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *pbase, size_t *psize,
                            CUdeviceptr dptr)
{
    __typeof__(&cuMemGetAddressRange_v2) real = GA_REAL(rt, id, cuMemGetAddressRange_v2);
    CUresult r = real(pbase, psize, dptr); /* the program's own call, for its answer */
    if (r != CUDA_SUCCESS || !rt->cfg.pool || !psize)
        return r;
    CUdeviceptr base = 0;
    size_t size;
    if (pbase)
        base = *pbase;
    else if (real(&base, &size, dptr) != CUDA_SUCCESS) /* the program did not ask for it */
        return r;
    /* A block may be larger than asked for (its size class): report the
     * allocation the program made. */
    pthread_mutex_lock(&lock);
    block_t *b;
    HASH_FIND(hh, blocks, &base, sizeof base, b);
    if (b && b->state == B_LIVE && dptr < base + b->requested)
        *psize = b->requested;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult ga_hook_ipc_get(const ga_rt_t *rt, ga_id_t id, CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    CUresult r = GA_REAL(rt, id, cuIpcGetMemHandle)(pHandle, dptr);
    if (r == CUDA_SUCCESS)
        ga_coalesce_note_shared(dptr); /* another process may write it now */
    if (r == CUDA_SUCCESS && rt->cfg.pool) {
        /* Another process may map it: it must be freed when the program says. */
        pthread_mutex_lock(&lock);
        block_t *b;
        HASH_FIND(hh, blocks, &dptr, sizeof dptr, b);
        if (b)
            b->exported = true;
        pthread_mutex_unlock(&lock);
    }
    return r;
}

/* ---- lifecycle ----------------------------------------------------------------- */

void ga_pool_ctx_gone(CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    block_t *b, *tmp;
    HASH_ITER(hh, blocks, b, tmp)
        if (b->ctx == ctx) {
            HASH_DEL(blocks, b);
            ga_fence_drop(&b->fence); /* the driver freed the memory and the events */
            free(b);
        }
    for (outstanding_t **op = &outstanding; *op;) {
        outstanding_t *o = *op;
        if (o->ctx == ctx) {
            *op = o->next;
            n_outstanding--;
            if (!o->borrowed) /* a borrowed fence is its block's, dropped above */
                ga_fence_drop(&o->fence);
            free(o);
        } else {
            op = &o->next;
        }
    }
    for (pool_t **pp = &pools; *pp; pp = &(*pp)->next)
        if ((*pp)->ctx == ctx) {
            pool_t *dead = *pp;
            *pp = dead->next;
            free(dead);
            break;
        }
    pthread_mutex_unlock(&lock);
}

void ga_pool_stats(ga_pool_stats_t *s)
{
    s->misses = atomic_load(&misses);
    s->trims = atomic_load(&trims);
    s->releases = atomic_load(&releases);
    s->cached_bytes = 0;
    pthread_mutex_lock(&lock);
    s->hits = hits;
    s->early = early;
    for (pool_t *p = pools; p; p = p->next)
        s->cached_bytes += p->cached_bytes;
    pthread_mutex_unlock(&lock);
}

void ga_pool_report(void)
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
    blocks = NULL;
    pools = NULL;
    outstanding = NULL;
    n_outstanding = 0;
    early = 0;
    hits = 0;
    atomic_store(&misses, 0);
    atomic_store(&trims, 0);
    atomic_store(&releases, 0);
}

const ga_fork_ops_t ga_pool_fork = {NULL, &lock, fork_child};
