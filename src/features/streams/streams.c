/* streams.c - streams a program creates and destroys per operation, kept and
 * handed out again (GPUACCEL_STREAMS).
 *
 * Why: provers create a stream per operation (ICICLE v2 one per MSM, older
 * RISC Zero code one per kernel batch) and destroy it after; each
 * cuStreamCreate and cuStreamDestroy is a driver round trip, and a created
 * stream's first work pays for setting it up. A destroyed stream is kept here
 * instead and handed to the next cuStreamCreate or cuStreamCreateWithPriority
 * with the same context, flags and priority, as the stream pools of PyTorch
 * (c10/cuda/CUDAStream.cpp) and CuPy do for their own work.
 *
 * A kept stream is reused only when the driver says it is idle
 * (cuStreamQuery): the new owner starts with an empty stream, as a created
 * one is, with no dependency on the old owner's work (which, as after
 * cuStreamDestroy, still completes in order). Streams the program gave
 * attributes or attached managed memory to are not kept (streams_touched). What
 * differs from native: cuStreamGetId of a reused stream is
 * the id it had before.
 *
 * The hooks (hooks/lifecycle.c) tell every feature that the program's stream
 * is gone, as for a real destroy; the tracker keeps its record (the stream
 * lives on in the driver, its queued work still counted), which the stream
 * takes back when handed out again.
 *
 * Owns: the kept streams, under `lock`.
 * Must never: call the driver holding `lock`; keep or hand out a stream while
 * anything captures (cuStreamQuery is not capture-safe). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <uthash.h>

#include "core/log.h"
#include "features/feature.h"
#include "tracking/capture.h"
#include "tracking/device.h"
#include "tracking/streams.h"

enum { MAX_KEPT = 64, TRY = 4 };

typedef struct kept {
    CUstream h;
    CUcontext ctx;
    unsigned flags;
    int prio;
} kept_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static kept_t kept[MAX_KEPT]; /* under lock: the first n_kept, oldest first */
static unsigned n_kept;       /* under lock */
/* Streams the program created while on, by handle: their flags and priority
 * (a stream created before the feature saw it, or touched, is destroyed for
 * real). */
typedef struct made {
    CUstream h;
    CUcontext ctx; /* current at its creation: the stream's */
    unsigned flags;
    int prio;
    UT_hash_handle hh;
} made_t;
static made_t *made;          /* under lock */
static _Atomic uint64_t hits, misses;

static void remember_made(CUstream h, CUcontext ctx, unsigned flags, int prio)
{
    made_t *m = calloc(1, sizeof *m), *old = NULL;
    if (!m)
        return; /* then destroyed for real: nothing is lost */
    *m = (made_t){.h = h, .ctx = ctx, .flags = flags, .prio = prio};
    pthread_mutex_lock(&lock);
    HASH_REPLACE_PTR(made, h, m, old);
    pthread_mutex_unlock(&lock);
    free(old);
}

/* h's record, out of the table (NULL: not one we made). */
static made_t *take_made(CUstream h)
{
    made_t *m = NULL;
    pthread_mutex_lock(&lock);
    HASH_FIND_PTR(made, &h, m);
    if (m)
        HASH_DEL(made, m);
    pthread_mutex_unlock(&lock);
    return m;
}

/* Up to TRY kept streams of (ctx, flags, prio) taken out under the lock and
 * asked outside it; the first idle one is handed out, the others go back. */
static CUstream take(const ga_rt_t *rt, CUcontext ctx, unsigned flags, int prio)
{
    kept_t cand[TRY];
    unsigned n = 0;
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < n_kept && n < TRY;) {
        if (kept[i].ctx == ctx && kept[i].flags == flags && kept[i].prio == prio) {
            cand[n++] = kept[i];
            kept[i] = kept[--n_kept]; /* order among equals does not matter */
        } else {
            i++;
        }
    }
    pthread_mutex_unlock(&lock);
    CUstream got = NULL;
    if (n && ga_own_calls_enter()) {
        __typeof__(&cuStreamQuery) q = GA_REAL(rt, GA_ID_cuStreamQuery, cuStreamQuery);
        for (unsigned i = 0; i < n && !got; i++)
            if (q(cand[i].h) == CUDA_SUCCESS) {
                got = cand[i].h;
                cand[i].h = NULL;
            }
        ga_own_calls_leave();
    }
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < n; i++)
        if (cand[i].h && n_kept < MAX_KEPT)
            kept[n_kept++] = cand[i];
    pthread_mutex_unlock(&lock);
    return got;
}

static bool streams_create(const ga_rt_t *rt, CUstream *ph, unsigned flags, int prio,
                           bool with_prio, CUresult *r)
{
    if (!ph || ga_serving_off())
        return false;
    CUcontext ctx = ga_current_ctx(rt);
    if (!ctx)
        return false; /* the driver's own error */
    CUstream h = take(rt, ctx, flags, prio);
    atomic_fetch_add_explicit(h ? &hits : &misses, 1, memory_order_relaxed);
    if (!h) {
        *r = with_prio ? GA_REAL(rt, GA_ID_cuStreamCreateWithPriority,
                                 cuStreamCreateWithPriority)(&h, flags, prio)
                       : GA_REAL(rt, GA_ID_cuStreamCreate, cuStreamCreate)(&h, flags);
        if (*r != CUDA_SUCCESS)
            return true; /* the driver's answer, as the program's own call gets it */
    }
    remember_made(h, ctx, flags, prio);
    *ph = h;
    *r = CUDA_SUCCESS;
    return true;
}

/* The program destroys h: keep it if we made it and there is room. */
static bool streams_destroy(const ga_rt_t *rt, CUstream h, CUresult *r)
{
    if (!h || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD || ga_serving_off())
        return false;
    (void)rt;
    made_t *m = take_made(h);
    bool keep = false;
    pthread_mutex_lock(&lock);
    if (m && n_kept < MAX_KEPT) {
        kept[n_kept++] = (kept_t){h, m->ctx, m->flags, m->prio};
        keep = true;
    }
    pthread_mutex_unlock(&lock);
    free(m);
    if (!keep)
        return false; /* the driver destroys it */
    *r = CUDA_SUCCESS;
    return true;
}

/* An attribute or attached memory: destroyed for real when the time comes. */
static void streams_touched(const ga_rt_t *rt, CUstream h)
{
    (void)rt;
    free(take_made(h));
}

/* The context's streams went with it: forget them, free nothing (a later
 * context may get the same handle values). */
static void streams_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    (void)rt;
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < n_kept;)
        if (kept[i].ctx == ctx)
            kept[i] = kept[--n_kept];
        else
            i++;
    made_t *m, *tmp;
    HASH_ITER(hh, made, m, tmp)
        if (m->ctx == ctx) {
            HASH_DEL(made, m);
            free(m);
        }
    pthread_mutex_unlock(&lock);
}

static void streams_report(void)
{
    ga_report_served("streams", &hits, &misses, "stream creations served from kept streams");
}

static void fork_child(void)
{
    n_kept = 0; /* the child cannot use the parent's CUDA state */
    made = NULL; /* the parent's records, left (a child forgets, as pinned's does) */
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

GA_SWITCH(streams)

const ga_feature_t ga_feature_streams = {
    .summary = "streams created and destroyed per operation kept and handed out again",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuStreamCreate, GA_ID_cuStreamDestroy_v2, GA_ID_cuStreamQuery,
             GA_ID_cuCtxGetCurrent),
    .report = streams_report,
    .fork = &fork_ops,
    .stream_create = streams_create,
    .stream_destroy = streams_destroy,
    .stream_touched = streams_touched,
    .ctx_gone = streams_ctx_gone,
};
