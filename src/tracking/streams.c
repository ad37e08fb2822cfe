/* streams.c - the write epoch, the stream tracker and fences.
 *
 * Owns: one hash of stream records keyed by (context, handle, thread), guarded
 * by `lock`; records are never freed (a retired record may still be cached by
 * a thread, and writing a stale counter is harmless), only retired to a free
 * list and reused. Must never: call the driver while holding `lock`. */
#define _GNU_SOURCE
#include "tracking/streams.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "core/log.h"

_Atomic uint64_t ga_epoch;
_Atomic uint64_t ga_map_epoch;
_Atomic uint64_t ga_work_seq;
_Atomic uint64_t ga_order;

typedef struct stream_key {
    CUcontext ctx;    /* NULL for created streams: their handle is unique */
    CUstream handle;  /* a created stream, CU_STREAM_LEGACY or CU_STREAM_PER_THREAD */
    uintptr_t thread; /* the owning thread of a per-thread stream, else 0 */
} stream_key_t;

struct ga_stream {
    stream_key_t key;
    CUcontext ctx;
    bool nonblocking;
    /* Destroyed while busy, during a capture, when its work could not be
     * chained to the legacy stream (ga_stream_outlive): kept, under a key no
     * live stream has, so that its context counts as busy until a context
     * synchronization; never named to the driver again. Guarded by lock. */
    bool gone;
    _Atomic uint64_t work;    /* calls that enqueued work on it */
    _Atomic uint64_t idle_at; /* work counted up to here is known finished */
    struct ga_stream *next_free;
    UT_hash_handle hh;
};

static CUevent event_get(const ga_rt_t *rt, CUcontext ctx);
static void event_put(CUcontext ctx, CUevent ev);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static ga_stream_t *table;     /* guarded by lock */
/* Held shared while the library records on or queries a stream the program
 * owns (it may belong to another thread), exclusive while the program destroys
 * one: the driver need not survive a call on a destroyed stream. Held across
 * driver calls, which is safe because the exclusive side takes it before its
 * own driver call and holds no other lock. */
static pthread_rwlock_t use_lock = PTHREAD_RWLOCK_INITIALIZER;
static ga_stream_t *free_list; /* guarded by lock */
static _Atomic uint64_t generation; /* bumped when a record is retired */
static _Atomic uint64_t fence_clock; /* ticks as each fence's legacy record returns */


/* One-entry per-thread cache in front of the hash: most threads launch on one
 * stream at a time. Valid while `gen` equals the global generation. */
static GA_TLS struct {
    CUstream h;
    CUcontext ctx;
    bool per_thread;
    uint64_t gen;
    ga_stream_t *st;
} cache;

/* The key for a stream handle as the program passed it. */
static bool make_key(const ga_rt_t *rt, CUstream h, bool per_thread, stream_key_t *k,
                     CUcontext *ctx)
{
    memset(k, 0, sizeof *k);
    if (h == NULL)
        h = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    if (h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
        *ctx = ga_current_ctx(rt);
        if (!*ctx)
            return false;
        k->ctx = *ctx;
        k->handle = h;
        k->thread = h == CU_STREAM_PER_THREAD ? (uintptr_t)pthread_self() : 0;
    } else {
        k->handle = h;
        *ctx = NULL; /* learned from the driver on first sight */
    }
    return true;
}

static ga_stream_t *insert(const stream_key_t *k, CUcontext ctx, bool nonblocking)
{
    ga_stream_t *st;
    pthread_mutex_lock(&lock);
    HASH_FIND(hh, table, k, sizeof *k, st);
    if (!st) {
        st = free_list;
        if (st)
            free_list = st->next_free;
        else
            st = calloc(1, sizeof *st);
        if (st) {
            st->key = *k;
            st->ctx = ctx;
            st->nonblocking = nonblocking;
            st->gone = false;
            /* A reused record keeps counting from where it was: a mark taken
             * on its previous stream can then never declare the new one idle. */
            atomic_store(&st->idle_at, atomic_load(&st->work));
            HASH_ADD(hh, table, key, sizeof st->key, st);
        }
    }
    pthread_mutex_unlock(&lock);
    return st;
}

static ga_stream_t *find(const stream_key_t *k)
{
    ga_stream_t *st;
    pthread_mutex_lock(&lock);
    HASH_FIND(hh, table, k, sizeof *k, st);
    pthread_mutex_unlock(&lock);
    return st;
}

ga_stream_t *ga_stream_lookup(CUstream h)
{
    stream_key_t k = {.handle = h};
    return find(&k);
}

ga_stream_t *ga_stream_get(const ga_rt_t *rt, CUstream h, bool per_thread)
{
    uint64_t gen = atomic_load_explicit(&generation, memory_order_acquire);
    bool is_default = h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD;
    CUcontext cur = is_default ? ga_current_ctx(rt) : NULL;
    if (cache.st && cache.gen == gen && cache.h == h && cache.per_thread == per_thread &&
        cache.ctx == cur)
        return cache.st;

    stream_key_t k;
    CUcontext ctx;
    if (!make_key(rt, h, per_thread, &k, &ctx))
        return NULL;
    ga_stream_t *st = find(&k);
    if (!st) {
        bool nonblocking = false;
        if (!is_default) {
            unsigned flags = 0;
            __typeof__(&cuStreamGetFlags) gf = GA_REAL(rt, GA_ID_cuStreamGetFlags, cuStreamGetFlags);
            __typeof__(&cuStreamGetCtx) gc = GA_REAL(rt, GA_ID_cuStreamGetCtx, cuStreamGetCtx);
            if (!gf || !gc || gf(h, &flags) != CUDA_SUCCESS || gc(h, &ctx) != CUDA_SUCCESS)
                return NULL;
            nonblocking = (flags & CU_STREAM_NON_BLOCKING) != 0;
        }
        st = insert(&k, ctx, nonblocking);
    }
    if (st)
        cache.h = h, cache.ctx = cur, cache.per_thread = per_thread, cache.gen = gen,
        cache.st = st;
    return st;
}

/* The stream's counter moves before the sequence: a thread that read the
 * sequence after it moved sees the stream busy (ga_ctx_idle's cache). */
void ga_stream_note_work(const ga_rt_t *rt, CUstream h, bool per_thread)
{
    if (h == GA_HIDDENSTREAM) { /* cannot tell which: every stream is presumed busy */
        ga_note_untracked("cuLaunchCooperativeKernelMultiDevice names its streams "
                                  "inside its parameters");
    } else {
        ga_stream_t *st = ga_stream_get(rt, h, per_thread);
        if (st)
            atomic_fetch_add_explicit(&st->work, 1, memory_order_acq_rel);
    }
    atomic_fetch_add_explicit(&ga_work_seq, 1, memory_order_acq_rel);
}

ga_stream_mark_t ga_stream_mark(const ga_rt_t *rt, CUstream h, bool per_thread)
{
    ga_stream_t *st = rt->track ? ga_stream_get(rt, h, per_thread) : NULL;
    return (ga_stream_mark_t){st, st ? atomic_load(&st->work) : 0};
}

void ga_stream_mark_idle(ga_stream_mark_t m)
{
    if (!m.st)
        return;
    uint64_t cur = atomic_load(&m.st->idle_at);
    while (cur < m.work && !atomic_compare_exchange_weak(&m.st->idle_at, &cur, m.work))
        ;
}

ga_ctx_mark_t ga_ctx_mark(const ga_rt_t *rt, CUcontext ctx)
{
    ga_ctx_mark_t m = {ctx, 0, NULL};
    if (!rt->track)
        return m;
    pthread_mutex_lock(&lock);
    unsigned n = HASH_COUNT(table);
    m.marks = n ? malloc(n * sizeof *m.marks) : NULL;
    for (ga_stream_t *st = table; st && m.marks; st = st->hh.next)
        if (st->ctx == ctx)
            m.marks[m.n++] = (ga_stream_mark_t){st, atomic_load(&st->work)};
    pthread_mutex_unlock(&lock);
    return m;
}

static void retire_locked(ga_stream_t *st);

void ga_ctx_mark_idle(ga_ctx_mark_t *m, bool succeeded)
{
    bool any_gone = false;
    for (unsigned i = 0; succeeded && i < m->n; i++) {
        ga_stream_mark_idle(m->marks[i]);
        any_gone |= m->marks[i].st->gone;
    }
    if (any_gone) { /* the context's synchronization covered a destroyed stream's work */
        pthread_mutex_lock(&lock);
        ga_stream_t *st, *tmp;
        HASH_ITER(hh, table, st, tmp)
            if (st->gone && st->ctx == m->ctx && !ga_stream_busy(st))
                retire_locked(st);
        pthread_mutex_unlock(&lock);
    }
    free(m->marks);
    m->marks = NULL;
    m->n = 0;
}

bool ga_stream_busy(const ga_stream_t *st)
{
    return atomic_load(&st->work) > atomic_load(&st->idle_at) ||
           ga_untracked();
}

uint64_t ga_stream_note_own(ga_stream_t *st)
{
    return atomic_fetch_add_explicit(&st->work, 1, memory_order_acq_rel) + 1;
}

bool ga_stream_done(const ga_stream_t *st, uint64_t work)
{
    return atomic_load(&st->idle_at) >= work && !ga_untracked();
}

bool ga_stream_nonblocking(const ga_stream_t *st)
{
    return st->nonblocking;
}

unsigned ga_streams_contexts(void)
{
    CUcontext seen[2] = {NULL, NULL};
    unsigned n = 0;
    pthread_mutex_lock(&lock);
    for (ga_stream_t *st = table; st && n < 2; st = st->hh.next)
        if (st->ctx && st->ctx != seen[0])
            seen[n++] = st->ctx;
    pthread_mutex_unlock(&lock);
    return n;
}

/* The last context this thread found idle, and the work sequence read before
 * it looked: a stream turns busy only through ga_stream_note_work, which moves
 * the sequence, so while it has not moved the context is still idle and the
 * walk under the lock (one a pooled free) is skipped. */
static GA_TLS struct {
    CUcontext ctx;
    uint64_t seq;
} idle_seen;

bool ga_ctx_idle(CUcontext ctx)
{
    if (ga_untracked())
        return false;
    uint64_t seq = ga_work_seq_read();
    if (ctx && idle_seen.ctx == ctx && idle_seen.seq == seq)
        return true;
    bool idle = true;
    pthread_mutex_lock(&lock);
    for (ga_stream_t *st = table; st && idle; st = st->hh.next)
        if (st->ctx == ctx && ga_stream_busy(st))
            idle = false;
    pthread_mutex_unlock(&lock);
    if (idle)
        idle_seen.ctx = ctx, idle_seen.seq = seq;
    return idle;
}

bool ga_stream_ctx_idle(const ga_rt_t *rt, CUstream h, bool per_thread)
{
    if (h == GA_NOSTREAM) {
        CUcontext cur = ga_current_ctx(rt);
        return cur && ga_ctx_idle(cur);
    }
    ga_stream_t *st = ga_stream_get(rt, h, per_thread);
    return st && st->ctx && ga_ctx_idle(st->ctx);
}

bool ga_ctx_settle(const ga_rt_t *rt, CUcontext ctx)
{
    return ga_ctx_settle_for(rt, ctx, NULL, false);
}

/* Would a copy issued now on `own` run with another stream's work still in
 * flight? Streams whose earlier work it waits for are not asked: its own,
 * and with `legacy` (own is the legacy default stream) every blocking stream
 * of the context, which the legacy stream waits for. */
static bool waited_for(const ga_stream_t *st, const ga_stream_t *own, bool legacy)
{
    return st == own || (legacy && !st->nonblocking);
}

bool ga_ctx_settle_for(const ga_rt_t *rt, CUcontext ctx, const ga_stream_t *own, bool legacy)
{
    /* Querying a stream under capture would invalidate the capture; another
     * context's streams may write this one's memory (peer access) and are not
     * looked at here: with either, nothing is declared settled. */
    if (ga_untracked() || ga_capture_active() ||
        ga_streams_contexts() > 1)
        return false;
    if (!ga_own_calls_enter())
        return false;
    enum { MAX_QUERY = 16 };
    ga_stream_mark_t busy[MAX_QUERY];
    unsigned n = 0;
    bool too_many = false;
    pthread_mutex_lock(&lock);
    for (ga_stream_t *st = table; st; st = st->hh.next)
        if (st->ctx == ctx && ga_stream_busy(st) && !(own && waited_for(st, own, legacy))) {
            /* Another thread's per-thread stream cannot be named from here,
             * nor a destroyed one. */
            bool foreign = st->key.thread && st->key.thread != (uintptr_t)pthread_self();
            if (n == MAX_QUERY || foreign || st->gone) {
                too_many = true;
                break;
            }
            busy[n++] = (ga_stream_mark_t){st, atomic_load(&st->work)};
        }
    pthread_mutex_unlock(&lock);
    if (too_many) {
        ga_own_calls_leave();
        return false;
    }
    __typeof__(&cuStreamQuery) query = GA_REAL(rt, GA_ID_cuStreamQuery, cuStreamQuery);
    bool idle = true;
    pthread_rwlock_rdlock(&use_lock);
    for (unsigned i = 0; i < n; i++) {
        /* The handle to query: a created stream's own, or the default ones. */
        CUstream h = busy[i].st->key.handle;
        if (query && query(h) == CUDA_SUCCESS)
            ga_stream_mark_idle(busy[i]);
        else
            idle = false;
    }
    pthread_rwlock_unlock(&use_lock);
    ga_own_calls_leave();
    return idle;
}

static void retire_locked(ga_stream_t *st)
{
    HASH_DEL(table, st);
    st->next_free = free_list;
    free_list = st;
    atomic_fetch_add_explicit(&generation, 1, memory_order_acq_rel);
}

void ga_stream_use_begin(void)
{
    pthread_rwlock_rdlock(&use_lock);
}

void ga_stream_use_end(void)
{
    pthread_rwlock_unlock(&use_lock);
}

unsigned ga_ctx_nonblocking(CUcontext ctx, CUstream *out, unsigned max)
{
    unsigned n = 0;
    pthread_mutex_lock(&lock);
    for (ga_stream_t *st = table; st; st = st->hh.next)
        if (st->ctx == ctx && st->nonblocking && !st->gone) {
            if (n < max)
                out[n] = st->key.handle;
            n++;
        }
    pthread_mutex_unlock(&lock);
    return n;
}

void ga_stream_destroy_begin(void)
{
    pthread_rwlock_wrlock(&use_lock);
}

void ga_stream_destroy_end(void)
{
    pthread_rwlock_unlock(&use_lock);
}

/* cuStreamDestroy returns with the stream's work still queued, and the
 * tracker forgets the stream: so that fences (which record on the legacy
 * stream) and idleness still cover that work, the legacy stream is made to
 * wait for it, and counts as busy until known idle. Called with use_lock held
 * exclusively, before the destroy. During a capture none of that may be
 * done (the record would join the capture, the wait would put the legacy
 * stream in it): a blocking stream's work precedes later legacy work anyway;
 * a non-blocking one's cannot be chained, and false tells the caller to bury
 * the record instead of forgetting it. */
bool ga_stream_outlive(const ga_rt_t *rt, CUstream h)
{
    ga_stream_t *st = ga_stream_lookup(h);
    if (!st || !ga_stream_busy(st))
        return true;
    if (!ga_own_calls_enter()) {
        if (st->nonblocking)
            return false;
        ga_stream_note_work(rt, CU_STREAM_LEGACY, false);
        return true;
    }
    /* The legacy stream of the stream's own context waits for its last work
     * (an enqueued wait, whatever the stream's flags), and counts as busy, so
     * the next fence covers that work instead of being empty. */
    __typeof__(&cuEventRecord) rec = GA_REAL(rt, GA_ID_cuEventRecord, cuEventRecord);
    __typeof__(&cuStreamWaitEvent) wait = GA_REAL(rt, GA_ID_cuStreamWaitEvent, cuStreamWaitEvent);
    CUcontext ctx = st->ctx;
    ga_ctx_scope_t scope;
    if (ctx && ga_ctx_enter(rt, ctx, &scope)) {
        CUevent ev = event_get(rt, ctx);
        bool waits = ev && rec && wait && rec(ev, h) == CUDA_SUCCESS &&
                     wait(CU_STREAM_LEGACY, ev, 0) == CUDA_SUCCESS;
        if (waits || !st->nonblocking) /* a blocking stream's work precedes legacy work anyway */
            ga_stream_note_work(rt, CU_STREAM_LEGACY, false);
        if (ev)
            event_put(ctx, ev); /* the wait is bound when enqueued: the event may be reused */
        ga_ctx_leave(rt, &scope);
    }
    ga_own_calls_leave();
    return true;
}

void ga_stream_forget(CUstream h)
{
    stream_key_t k = {.handle = h};
    pthread_mutex_lock(&lock);
    ga_stream_t *st;
    HASH_FIND(hh, table, &k, sizeof k, st);
    if (st)
        retire_locked(st);
    pthread_mutex_unlock(&lock);
}

void ga_stream_bury(CUstream h)
{
    stream_key_t k = {.handle = h};
    pthread_mutex_lock(&lock);
    ga_stream_t *st;
    HASH_FIND(hh, table, &k, sizeof k, st);
    if (st) {
        /* Re-keyed by its own address, which no stream handle can equal while
         * the record lives: a new stream may get the old handle. */
        HASH_DEL(table, st);
        st->key.handle = (CUstream)((uintptr_t)st | 1);
        st->key.ctx = st->ctx;
        st->gone = true;
        HASH_ADD(hh, table, key, sizeof st->key, st);
        atomic_fetch_add_explicit(&generation, 1, memory_order_acq_rel);
    }
    pthread_mutex_unlock(&lock);
}

typedef struct event_slot event_slot_t;
static void drop_events_locked(CUcontext ctx);


void ga_ctx_forget(CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    ga_stream_t *st, *tmp;
    HASH_ITER(hh, table, st, tmp)
        if (st->ctx == ctx)
            retire_locked(st);
    drop_events_locked(ctx);
    pthread_mutex_unlock(&lock);
}


/* ---- fences ---------------------------------------------------------------- */

/* Created events are reused through a small free list per context: creating an
 * event costs a driver round trip, recording one ~0.25 us. */
struct event_slot {
    CUcontext ctx;
    CUevent ev;
    struct event_slot *next;
};
static event_slot_t *spare_events; /* guarded by lock */

/* The context is gone and its events with it: forget them. */
static void drop_events_locked(CUcontext ctx)
{
    for (event_slot_t **pp = &spare_events; *pp;) {
        event_slot_t *s = *pp;
        if (s->ctx == ctx) {
            *pp = s->next;
            free(s);
        } else {
            pp = &s->next;
        }
    }
}

static CUevent event_get(const ga_rt_t *rt, CUcontext ctx)
{
    event_slot_t **pp, *hit = NULL;
    pthread_mutex_lock(&lock);
    for (pp = &spare_events; *pp; pp = &(*pp)->next)
        if ((*pp)->ctx == ctx) {
            hit = *pp;
            *pp = hit->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    if (hit) {
        CUevent ev = hit->ev;
        free(hit);
        return ev;
    }
    CUevent ev = NULL;
    __typeof__(&cuEventCreate) create = GA_REAL(rt, GA_ID_cuEventCreate, cuEventCreate);
    if (!create || create(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return NULL;
    return ev;
}

static void event_put(CUcontext ctx, CUevent ev)
{
    event_slot_t *s = malloc(sizeof *s);
    if (!s)
        return; /* leak one event rather than destroy it under a lock */
    s->ctx = ctx;
    s->ev = ev;
    pthread_mutex_lock(&lock);
    s->next = spare_events;
    spare_events = s;
    pthread_mutex_unlock(&lock);
}

static bool record(const ga_rt_t *rt, ga_fence_t *f, CUstream s)
{
    __typeof__(&cuEventRecord) rec = GA_REAL(rt, GA_ID_cuEventRecord, cuEventRecord);
    CUevent ev = event_get(rt, f->ctx);
    if (!ev || !rec || rec(ev, s) != CUDA_SUCCESS) {
        if (ev)
            event_put(f->ctx, ev);
        return false;
    }
    f->ev[f->n++] = ev;
    return true;
}

/* A fence on an idle context is empty: the tracker saw no work since every
 * stream was last known idle, so nothing enqueued before the free can still
 * be running. Otherwise: the legacy stream's event (which follows all earlier
 * work of the blocking and per-thread streams) and one per busy non-blocking
 * stream, each with the marks of the streams it covers, so that its completion
 * declares them idle (and the next fence may be empty). */
/* An empty fence of ctx: what an idle context's fence stays. */
static void fence_start(ga_fence_t *f, CUcontext ctx)
{
    memset(f, 0, sizeof *f);
    f->ctx = ctx;
}

bool ga_fence_idle(CUcontext ctx, ga_fence_t *f)
{
    if (!ctx || !ga_ctx_idle(ctx))
        return false;
    fence_start(f, ctx);
    return true;
}

bool ga_fence_init(const ga_rt_t *rt, CUcontext ctx, ga_fence_t *f)
{
    if (ga_fence_idle(ctx, f)) /* the common case after a sync: no allocation either */
        return true;
    fence_start(f, ctx);
    if (!f->ctx || !ga_own_calls_enter()) /* records would join an open capture */
        return false;
    bool blind = ga_untracked(), buried = false;
    pthread_rwlock_rdlock(&use_lock);
    pthread_mutex_lock(&lock);
    unsigned cap = 1 + HASH_COUNT(table), nt = 0;
    CUstream *targets = malloc(cap * sizeof *targets);
    f->marks = malloc(cap * sizeof *f->marks);
    for (ga_stream_t *st = table; st && targets && f->marks; st = st->hh.next) {
        if (st->ctx != f->ctx || !ga_stream_busy(st))
            continue;
        f->marks[f->nmarks++] = (ga_stream_mark_t){st, atomic_load(&st->work)};
        buried |= st->gone; /* its work cannot be waited for: no fence */
        if (st->nonblocking)
            targets[nt++] = st->key.handle;
    }
    pthread_mutex_unlock(&lock);
    bool ok = targets && f->marks && !buried;
    if (ok && f->nmarks == 0 && !blind) { /* idle: nothing to wait for */
        pthread_rwlock_unlock(&use_lock);
        ga_own_calls_leave();
        free(targets);
        free(f->marks);
        f->marks = NULL;
        return true;
    }
    f->ev = ok ? malloc((nt + 1) * sizeof *f->ev) : NULL;
    ok = f->ev != NULL;
    /* Event 0 is the legacy stream's (pool.c's early hand-out relies on it).
     * Sequentially consistent clock: a record whose tick another fence's
     * rec_begin has seen returned before that fence's record began. */
    f->rec_begin = atomic_load(&fence_clock);
    ok = ok && record(rt, f, CU_STREAM_LEGACY);
    if (ok)
        f->rec_end = atomic_fetch_add(&fence_clock, 1) + 1;
    for (unsigned i = 0; ok && i < nt; i++)
        ok = record(rt, f, targets[i]);
    pthread_rwlock_unlock(&use_lock);
    ga_own_calls_leave();
    free(targets);
    if (!ok)
        ga_fence_release(rt, f);
    return ok;
}

bool ga_fence_done(const ga_rt_t *rt, ga_fence_t *f)
{
    __typeof__(&cuEventQuery) query = GA_REAL(rt, GA_ID_cuEventQuery, cuEventQuery);
    if (f->n > 0 && !ga_own_calls_enter()) /* a query is unsafe during capture */
        return false;
    bool entered = f->n > 0;
    while (f->n > 0) {
        if (!query || query(f->ev[f->n - 1]) != CUDA_SUCCESS)
            break;
        f->n--;
        event_put(f->ctx, f->ev[f->n]);
    }
    if (entered)
        ga_own_calls_leave();
    if (f->n > 0)
        return false;
    /* Everything enqueued before the fence has finished. */
    for (unsigned i = 0; i < f->nmarks; i++)
        ga_stream_mark_idle(f->marks[i]);
    f->nmarks = 0;
    return true;
}

void ga_fence_release(const ga_rt_t *rt, ga_fence_t *f)
{
    (void)rt;
    for (unsigned i = 0; i < f->n; i++)
        event_put(f->ctx, f->ev[i]);
    free(f->ev);
    free(f->marks);
    memset(f, 0, sizeof *f);
}

void ga_fence_drop(ga_fence_t *f)
{
    free(f->ev);
    free(f->marks);
    memset(f, 0, sizeof *f);
}

static void fork_child(void)
{
    /* CUDA state does not survive fork: forget every stream and event (their
     * memory is leaked on purpose; the handles mean nothing in the child). */
    table = NULL;
    free_list = NULL;
    spare_events = NULL;
    atomic_fetch_add(&generation, 1);
    ga_untracked_reset();
}

const ga_fork_ops_t ga_streams_fork = {&use_lock, &lock, fork_child};

CUresult ga_host_alloc_driver(const ga_rt_t *rt, void **pp, size_t bytes, bool legacy,
                              unsigned flags)
{
    CUresult r;
    ga_work_begin(rt, true);
    if (legacy)
        r = GA_REAL(rt, GA_ID_cuMemAllocHost_v2, cuMemAllocHost_v2)(pp, bytes);
    else
        r = GA_REAL(rt, GA_ID_cuMemHostAlloc, cuMemHostAlloc)(pp, bytes, flags);
    ga_work_end(rt, r, GA_NOSTREAM, false, true);
    return r;
}

CUresult ga_host_free_driver(const ga_rt_t *rt, void *p)
{
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, GA_ID_cuMemFreeHost, cuMemFreeHost)(p);
    ga_work_end(rt, r, GA_NOSTREAM, false, true);
    return r;
}

CUresult ga_dev_alloc_driver(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytes)
{
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuMemAlloc_v2)(dptr, bytes);
    ga_work_end(rt, r, GA_NOSTREAM, false, true);
    return r;
}

CUresult ga_dev_free_driver(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dptr)
{
    ga_work_begin(rt, true);
    CUresult r = GA_REAL(rt, id, cuMemFree_v2)(dptr);
    ga_work_end(rt, r, GA_NOSTREAM, false, true);
    return r;
}
