/* early.c - early hand-out: a cached block whose fence has not completed is
 * handed out anyway, by making every stream that could use it wait for the
 * fence ('order_after'); the fence stays outstanding, and streams created
 * later wait for it too, until it is known complete.
 *
 * Owns: the outstanding fences (`outstanding`, newest first), under `lock`.
 * Must never: order a block when a stream could use it without waiting
 * (several contexts, streams the tracker does not know, too many non-blocking
 * streams: the caller then allocates afresh); release a fence's events while a
 * block still owns them (a borrowed record); make the waits while a capture
 * is open. */
#define _GNU_SOURCE
#include "features/pool/internal.h"

#include <stdlib.h>

/* The fence of a block handed out before it completed: streams created later
 * must still wait for it (see ga_pool_order_after). */
typedef struct outstanding {
    CUcontext ctx;
    ga_fence_t fence;
    bool borrowed; /* the events still belong to a block's fence: never released here */
    struct outstanding *next;
} outstanding_t;

/* QUERY_AFTER: outstanding fences kept before completed ones are looked for. */
enum { MAX_OUTSTANDING = 1024, MAX_NONBLOCKING = 64, QUERY_AFTER = 8 };

static outstanding_t *outstanding;  /* guarded by lock, newest first */
static unsigned n_outstanding;      /* guarded by lock */

/* ---- forgetting outstanding fences ---------------------------------------------- */

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

/* The oldest outstanding fence, unlinked; NULL if there is none, or if it is
 * borrowed. */
static outstanding_t *take_oldest(void)
{
    pthread_mutex_lock(&ga_pool_lock);
    outstanding_t **pp = &outstanding;
    while (*pp && (*pp)->next)
        pp = &(*pp)->next;
    outstanding_t *o = *pp;
    if (o && o->borrowed)
        o = NULL; /* the oldest is not ours to release: stop here */
    if (o)
        *pp = NULL, n_outstanding--;
    pthread_mutex_unlock(&ga_pool_lock);
    return o;
}

/* Let go of the oldest outstanding fence if it completed. False: stop (there
 * is none to let go of, or it has not completed). */
static bool drop_oldest_done(const ga_rt_t *rt)
{
    outstanding_t *o = take_oldest();
    if (!o)
        return false;
    if (!ga_fence_done(rt, &o->fence)) {
        pthread_mutex_lock(&ga_pool_lock); /* put it back, still the oldest */
        outstanding_t **pp;
        for (pp = &outstanding; *pp; pp = &(*pp)->next)
            ;
        *pp = o;
        n_outstanding++;
        pthread_mutex_unlock(&ga_pool_lock);
        return false;
    }
    ga_fence_release(rt, &o->fence);
    free(o);
    return true;
}

/* Forget outstanding fences: first those a newer one covers (free), then
 * those that have completed (a few per call, oldest last in the list: they
 * are the likeliest to be done). Asking the driver is what costs (1.5-1.7 us
 * a completed event, see ga_fence_implies): on the allocation path (ask
 * false) a short list, one fence a stream in the usual case, is left alone;
 * a stream creation (rare, and about to wait on each) always asks. */
void ga_pool_prune_outstanding(const ga_rt_t *rt, bool ask)
{
    pthread_mutex_lock(&ga_pool_lock);
    outstanding_t *gone = unlink_covered_locked();
    bool few = !ask && n_outstanding <= QUERY_AFTER;
    pthread_mutex_unlock(&ga_pool_lock);
    while (gone) {
        outstanding_t *o = gone;
        gone = o->next;
        ga_fence_release(rt, &o->fence); /* later waits on its events are not asked for */
        free(o);
    }
    for (int round = 0; round < 4 && !few; round++)
        if (!drop_oldest_done(rt))
            return;
}

/* ---- ordering a block after its fence ------------------------------------------- */

/* List the non-blocking streams of b's context into nb and publish b's fence
 * as outstanding (borrowed: the block keeps owning the events until the waits
 * succeed), in one critical section. Returns how many streams it listed, or
 * more than MAX_NONBLOCKING when b cannot be ordered (nothing is published).
 * Begins a use of the stream tracker (ga_stream_use_begin): the caller ends it
 * once its waits are done. */
static unsigned publish_borrowed(outstanding_t *o, const block_t *b, CUstream *nb)
{
    /* List the streams and publish the fence in one critical section: a stream
     * created meanwhile is either listed here or finds the fence when
     * ga_pool_stream_created runs (it is tracked before that takes the lock).
     * None of the listed can be destroyed until the waits are done (use lock,
     * taken after ours: the fork handlers' order). */
    pthread_mutex_lock(&ga_pool_lock);
    ga_stream_use_begin();
    bool alone = ga_pool_one_ctx_locked() && n_outstanding < MAX_OUTSTANDING;
    unsigned n = alone ? ga_ctx_nonblocking(b->ctx, nb, MAX_NONBLOCKING) : MAX_NONBLOCKING + 1;
    if (n <= MAX_NONBLOCKING) {
        o->ctx = b->ctx, o->fence = b->fence, o->borrowed = true;
        o->next = outstanding;
        outstanding = o;
        n_outstanding++;
    }
    pthread_mutex_unlock(&ga_pool_lock);
    return n;
}

/* The legacy stream waits for the fence's other events, each of the n listed
 * non-blocking streams for all of them. */
static bool wait_fence(__typeof__(&cuStreamWaitEvent) wait, const block_t *b, const CUstream *nb,
                       unsigned n)
{
    bool ok = true;
    /* Event 0 is the legacy stream's own (streams.c records it first). */
    for (unsigned e = 1; ok && e < b->fence.n; e++)
        ok = wait(CU_STREAM_LEGACY, b->fence.ev[e], 0) == CUDA_SUCCESS;
    for (unsigned i = 0; ok && i < n; i++)
        for (unsigned e = 0; ok && e < b->fence.n; e++)
            ok = wait(nb[i], b->fence.ev[e], 0) == CUDA_SUCCESS;
    return ok;
}

/* The waits failed: the block keeps its fence; forget the borrowed copy. */
static void unpublish(outstanding_t *o)
{
    pthread_mutex_lock(&ga_pool_lock);
    for (outstanding_t **op = &outstanding; *op; op = &(*op)->next)
        if (*op == o) {
            *op = o->next;
            n_outstanding--;
            break;
        }
    pthread_mutex_unlock(&ga_pool_lock);
    free(o);
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
static bool order_after_entered(const ga_rt_t *rt, block_t *b)
{
    __typeof__(&cuStreamWaitEvent) wait = GA_REAL(rt, GA_ID_cuStreamWaitEvent, cuStreamWaitEvent);
    outstanding_t *o = wait && !ga_untracked() ? calloc(1, sizeof *o) : NULL;
    if (!o)
        return false;
    CUstream nb[MAX_NONBLOCKING];
    unsigned n = publish_borrowed(o, b, nb);
    if (n > MAX_NONBLOCKING) {
        ga_stream_use_end();
        free(o);
        return false;
    }
    bool ok = wait_fence(wait, b, nb, n);
    ga_stream_use_end();
    if (!ok) { /* some waits may be in place: harmless, they only delay */
        unpublish(o);
        return false;
    }
    pthread_mutex_lock(&ga_pool_lock);
    o->borrowed = false; /* the fence is the outstanding record's now */
    pthread_mutex_unlock(&ga_pool_lock);
    memset(&b->fence, 0, sizeof b->fence);
    return true;
}

/* The waits on the legacy stream are unsafe while a capture is open. */
bool ga_pool_order_after(const ga_rt_t *rt, block_t *b)
{
    if (!ga_own_calls_enter())
        return false;
    bool ok = order_after_entered(rt, b);
    ga_own_calls_leave();
    return ok;
}

void ga_pool_stream_created(const ga_rt_t *rt, CUstream s)
{
    if (!rt->cfg.pool)
        return;
    ga_pool_prune_outstanding(rt, true);
    __typeof__(&cuStreamWaitEvent) wait = GA_REAL(rt, GA_ID_cuStreamWaitEvent, cuStreamWaitEvent);
    pthread_mutex_lock(&ga_pool_lock); /* waits are cheap and never block: fine under the lock */
    for (outstanding_t *o = outstanding; o && wait; o = o->next)
        for (unsigned e = 0; e < o->fence.n; e++)
            wait(s, o->fence.ev[e], 0);
    pthread_mutex_unlock(&ga_pool_lock);
}

/* ---- lifecycle (under lock) ------------------------------------------------------ */

/* The context is gone: forget its outstanding fences (called after its blocks
 * are forgotten, whose fences a borrowed record shares). */
void ga_pool_outstanding_gone_locked(CUcontext ctx)
{
    for (outstanding_t **op = &outstanding; *op;) {
        outstanding_t *o = *op;
        if (o->ctx == ctx) {
            *op = o->next;
            n_outstanding--;
            if (!o->borrowed) /* a borrowed fence is its block's, dropped with it */
                ga_fence_drop(&o->fence);
            free(o);
        } else {
            op = &o->next;
        }
    }
}

void ga_pool_early_fork_child(void)
{
    outstanding = NULL;
    n_outstanding = 0;
}
