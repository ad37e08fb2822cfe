/* cache.c - the per-context pools: freed blocks queued behind their fence,
 * handed out again once it completed (or once their later uses are ordered
 * after it: early.c), trimmed to the pool's limit, and given back to the
 * driver when an allocation fails.
 *
 * Owns: `pools` (per context: cached blocks per class, oldest first), the
 * blocks parked while a capture is open, and the counts of hits, early
 * hand-outs, trims and releases; all but the atomic counts under `lock`.
 * Must never: call the driver while holding `lock`; hand out a block whose
 * fence has not completed (nor been ordered after); free a block while a
 * capture is open. */
#define _GNU_SOURCE
#include "features/pool/internal.h"

#include <stdlib.h>

#include "core/log.h"

typedef struct pool {
    CUcontext ctx;
    block_t *head[N_CLASSES], *tail[N_CLASSES]; /* cached blocks, oldest first */
    size_t cached_bytes;
    size_t limit;
    struct pool *next;
} pool_t;

static pool_t *pools;               /* guarded by lock */
static block_t *parked;             /* guarded by lock: to free once no capture is open */
/* Hits are counted under the lock the hit takes anyway: an atomic add more
 * on a path of ~50 ns was measurable. */
static uint64_t hits, early;        /* guarded by lock */
static _Atomic uint64_t trims, releases;

/* ---- pools (all under lock) ----------------------------------------------------- */

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
            ga_pool_unlink_locked(b);
            b->next = out;
            out = b;
        }
    }
    return out;
}

/* Queue a freed block in its pool (under lock). Returns the blocks the pool's
 * limit pushes out, for the caller to free outside the lock. */
static block_t *queue_locked(pool_t *p, block_t *b)
{
    push_back(p, b);
    p->cached_bytes += b->size;
    return p->cached_bytes > p->limit ? drain_locked(p, p->limit) : NULL;
}

/* A block a thread cache lets go of (its fence empty) goes back to its pool,
 * made if it went meanwhile; not trimmed. */
void ga_pool_requeue_locked(block_t *b)
{
    pool_t *p = pool_of(b->ctx, true);
    if (p) {
        push_back(p, b);
        p->cached_bytes += b->size;
    }
}

/* The limit of ctx's pool: SIZE_MAX while it has none, or it is not known yet. */
size_t ga_pool_limit_locked(CUcontext ctx)
{
    pool_t *p = pool_of(ctx, false);
    return p ? p->limit : SIZE_MAX;
}

/* One pool only: a single context uses the pool. */
bool ga_pool_one_ctx_locked(void)
{
    return pools && !pools->next;
}

void ga_pool_drop_pool_locked(CUcontext ctx)
{
    for (pool_t **pp = &pools; *pp; pp = &(*pp)->next)
        if ((*pp)->ctx == ctx) {
            pool_t *dead = *pp;
            *pp = dead->next;
            free(dead);
            break;
        }
}

/* ---- driver calls (outside the lock) ------------------------------------------ */

/* The list joins the parked blocks (see free_for_real). */
static void park(block_t *list)
{
    pthread_mutex_lock(&ga_pool_lock);
    while (list) {
        block_t *b = list;
        list = b->next;
        b->next = parked;
        parked = b;
    }
    pthread_mutex_unlock(&ga_pool_lock);
}

/* One list: the parked blocks go with these (in front of them). */
static block_t *with_parked(block_t *list)
{
    pthread_mutex_lock(&ga_pool_lock);
    if (parked) {
        block_t **tail = &parked;
        while (*tail)
            tail = &(*tail)->next;
        *tail = list;
        list = parked;
        parked = NULL;
    }
    pthread_mutex_unlock(&ga_pool_lock);
    return list;
}

/* Free a list of blocks for real. cuMemFree synchronizes the device, so a
 * block whose fence is still pending is safe to free here. While a capture
 * is open a free would invalidate it: the blocks are parked (unreachable,
 * neither cached nor live) and freed by the next call that may. */
static void free_for_real(const ga_rt_t *rt, block_t *list)
{
    __typeof__(&cuMemFree_v2) mfree = GA_REAL(rt, GA_ID_cuMemFree_v2, cuMemFree_v2);
    if (!ga_own_calls_enter()) {
        park(list);
        return;
    }
    list = with_parked(list);
    for (block_t *b = list; b; b = b->next) {
        if (mfree && ga_dev_free_driver(rt, GA_ID_cuMemFree_v2, b->ptr) != CUDA_SUCCESS)
            ga_debug("pool: freeing cached block %#llx failed", (unsigned long long)b->ptr);
        ga_fence_release(rt, &b->fence);
    }
    ga_own_calls_leave();
    pthread_mutex_lock(&ga_pool_lock);
    while (list) {
        block_t *b = list;
        list = b->next;
        ga_pool_recycle_locked(b);
    }
    pthread_mutex_unlock(&ga_pool_lock);
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

static void trim(const ga_rt_t *rt, block_t *victims)
{
    if (victims) {
        atomic_fetch_add(&trims, 1);
        free_for_real(rt, victims);
    }
}

/* ---- taking a cached block ------------------------------------------------------- */

/* A cached block leaves the cache, live again, handed to `holder` (under lock). */
static uint64_t hand_out_locked(pool_t *p, block_t *b, unsigned holder)
{
    p->cached_bytes -= b->size;
    hits++;
    return ga_pool_set_state_locked(b, holder, B_LIVE);
}

/* b, taken out of p while its fence is asked about: handed out if the fence
 * completed, or if its later uses could be ordered after it; else put back
 * (NULL). */
static block_t *take_checked(const ga_rt_t *rt, unsigned holder, pool_t *p, block_t *b,
                             uint64_t *own)
{
    bool done = ga_fence_done(rt, &b->fence); /* driver calls: outside the lock */
    bool ordered = !done && ga_pool_order_after(rt, b);
    if (done)
        ga_fence_release(rt, &b->fence); /* a live block's fence is empty */
    pthread_mutex_lock(&ga_pool_lock);
    if (done || ordered) {
        *own = hand_out_locked(p, b, holder);
        early += ordered;
    } else {
        ga_pool_set_state_locked(b, 0, B_PENDING);
        push_front(p, b); /* the oldest is still running: newer ones are too */
        b = NULL;
    }
    pthread_mutex_unlock(&ga_pool_lock);
    if (b && ordered)
        ga_pool_prune_outstanding(rt, false);
    return b;
}

/* A cached block of class c in ctx, handed to `holder`, or NULL: one whose
 * fence completed, or one whose later uses could be ordered after its fence.
 * *own: its word. */
block_t *ga_pool_take_cached(const ga_rt_t *rt, unsigned holder, CUcontext ctx, int c,
                             uint64_t *own)
{
    pthread_mutex_lock(&ga_pool_lock);
    pool_t *p = pool_of(ctx, false);
    block_t *b = p ? pop_front(p, c) : NULL;
    /* Freed while its context was idle: nothing to ask, one critical section. */
    bool empty = b && ga_fence_empty(&b->fence);
    if (b && empty)
        *own = hand_out_locked(p, b, holder);
    else if (b)
        ga_pool_set_state_locked(b, 0, B_CHECKING);
    pthread_mutex_unlock(&ga_pool_lock);
    if (!b || empty)
        return b;
    return take_checked(rt, holder, p, b, own);
}

/* ---- keeping a freed block ----------------------------------------------------- */

/* Record b's fence in the block's own context (made current for it if need
 * be), and for a new pool learn its limit. False: no fence could be had. */
static bool record_fence(const ga_rt_t *rt, const pool_t *p, block_t *b, bool new_pool,
                         size_t *limit)
{
    CUcontext cur = ga_current_ctx(rt);
    __typeof__(&cuCtxPushCurrent_v2) push =
        GA_REAL(rt, GA_ID_cuCtxPushCurrent_v2, cuCtxPushCurrent_v2);
    __typeof__(&cuCtxPopCurrent_v2) pop = GA_REAL(rt, GA_ID_cuCtxPopCurrent_v2, cuCtxPopCurrent_v2);
    bool switched = cur != b->ctx && push && pop && push(b->ctx) == CUDA_SUCCESS;
    bool fenced = p && (cur == b->ctx || switched) && ga_fence_init(rt, b->ctx, &b->fence);
    *limit = new_pool ? limit_for(rt) : 0;
    if (switched) {
        CUcontext dummy;
        pop(&dummy);
    }
    return fenced;
}

/* The rest of a free whose context was busy, or whose pool is new: the fence
 * recorded outside the lock, then the block queued behind it. */
static bool keep_fenced(const ga_rt_t *rt, pool_t *p, block_t *b, bool new_pool)
{
    size_t limit;
    bool fenced = record_fence(rt, p, b, new_pool, &limit);
    pthread_mutex_lock(&ga_pool_lock);
    if (!fenced) { /* cannot prove when it is safe: let the driver free it */
        ga_pool_unlink_locked(b);
        ga_pool_recycle_locked(b);
        pthread_mutex_unlock(&ga_pool_lock);
        return false;
    }
    if (new_pool) {
        p->limit = limit;
        ga_pool_rebind_caches(); /* thread caches learn the limit */
    }
    block_t *victims = queue_locked(p, b);
    pthread_mutex_unlock(&ga_pool_lock);
    trim(rt, victims);
    return true;
}

/* The pool's part of a free: queue a live block behind a fence. Returns false
 * when the block is not the pool's to keep (the caller frees it for real);
 * *err is set when the pointer is a block the pool already holds (double
 * free). A block freed while its context is idle, in a pool whose limit is
 * known, is queued in the one critical section that finds it. */
bool ga_pool_keep(const ga_rt_t *rt, CUdeviceptr dptr, CUresult *err)
{
    *err = CUDA_SUCCESS;
    pthread_mutex_lock(&ga_pool_lock);
    block_t *b = ga_pool_find_locked(dptr);
    if (!b) {
        pthread_mutex_unlock(&ga_pool_lock);
        return false;
    }
    bool keep = b->cls >= 0 && !b->exported && pooling(rt);
    /* Whoever holds it: its thread may be freeing it in its cache right now,
     * and then this free is the second. */
    if (!ga_pool_move_live(b, false, keep ? B_PENDING : B_DEAD)) {
        pthread_mutex_unlock(&ga_pool_lock);
        /* what the driver says to a double free, or to anything after a fault */
        *err = ga_faulted() ? ga_fault_code() : CUDA_ERROR_INVALID_VALUE;
        return true;
    }
    if (!keep) {
        ga_pool_unlink_locked(b);
        ga_pool_recycle_locked(b);
        pthread_mutex_unlock(&ga_pool_lock);
        return false;
    }
    pool_t *p = pool_of(b->ctx, true);
    if (p && p->limit != SIZE_MAX && ga_fence_idle(b->ctx, &b->fence)) {
        block_t *victims = queue_locked(p, b);
        pthread_mutex_unlock(&ga_pool_lock);
        trim(rt, victims);
        return true;
    }
    bool new_pool = p && p->limit == SIZE_MAX;
    pthread_mutex_unlock(&ga_pool_lock);
    return keep_fenced(rt, p, b, new_pool);
}

/* ---- giving the cache back ------------------------------------------------------- */

/* Give every cached block of ctx back to the driver (allocation failed),
 * those thread caches hold included. */
void ga_pool_release_cache(const ga_rt_t *rt, CUcontext ctx)
{
    pthread_mutex_lock(&ga_pool_lock);
    pool_t *p = pool_of(ctx, false);
    block_t *list = ga_pool_take_back_all_locked(ctx, p ? drain_locked(p, 0) : NULL);
    pthread_mutex_unlock(&ga_pool_lock);
    if (list) {
        atomic_fetch_add(&releases, 1);
        free_for_real(rt, list);
    }
}

size_t ga_pool_cached_in(CUcontext ctx)
{
    pthread_mutex_lock(&ga_pool_lock);
    pool_t *p = pool_of(ctx, false);
    size_t n = (p ? p->cached_bytes : 0) + ga_pool_held_in_locked(ctx);
    pthread_mutex_unlock(&ga_pool_lock);
    return n;
}

/* ---- counts and fork ------------------------------------------------------------- */

/* Hits, early hand-outs, trims, releases, and the bytes the pools hold. */
void ga_pool_cache_stats_locked(ga_pool_stats_t *s)
{
    s->trims = atomic_load(&trims);
    s->releases = atomic_load(&releases);
    s->hits = hits;
    s->early = early;
    s->cached_bytes = 0;
    for (pool_t *p = pools; p; p = p->next)
        s->cached_bytes += p->cached_bytes;
}

/* The child has no CUDA state: every pool is forgotten (leaked on purpose). */
void ga_pool_cache_fork_child(void)
{
    pools = NULL;
    early = 0;
    hits = 0;
    atomic_store(&trims, 0);
    atomic_store(&releases, 0);
}
