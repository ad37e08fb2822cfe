/* trace.c - the driver-call trace: each timed driver call (a span, from
 * ga_span_record in core/stats.c) becomes an event in a block only its thread
 * writes; write_trace.c reads the blocks at exit. The spans also feed the
 * estimates that need a call's own time: page-locked host allocations and
 * frees (pinned), streams created and destroyed (streams), and the
 * synchronizations after which nothing the host could see was pending
 * (lazy_sync), with the host work that followed each until a call looked at
 * the device again. With a window file (window.c) the tallies count only
 * calls made inside a window, and only a quiet synchronization inside one
 * opens an overlap; what the device has pending (work, dirty, tainted) is
 * followed whatever the window. The trace's events are every call's.
 *
 * Owns: the push-only list of blocks and the count of events they reserve;
 * the thread's current block; the classes of the entry points (prof_t.kind).
 * Must never: take ga_prof_lock or call the driver (a span is recorded on
 * every timed driver call), allocate but a whole block at a time, keep more
 * than SPAN_LIMIT events (later ones are only counted in stats), or free a
 * block (a signal handler may be reading it). */
#define _GNU_SOURCE
#include "features/profile/internal.h"

#include <stdlib.h>
#include <string.h>

static _Atomic(span_block_t *) span_head;
static _Atomic uint64_t span_reserved; /* events reserved by blocks, whole blocks at a time */
static GA_TLS span_block_t *tl_span;

static span_block_t *span_new_block(unsigned g)
{
    if (atomic_load_explicit(&span_reserved, memory_order_relaxed) >= SPAN_LIMIT)
        return NULL; /* checked first so a full trace costs a read, not a write */
    uint64_t had = atomic_fetch_add(&span_reserved, SPAN_BLOCK);
    if (had >= SPAN_LIMIT)
        return NULL; /* the trace is full: later events are only counted in stats */
    span_block_t *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->tid = ga_prof_thread_id();
    b->gen = g;
    atomic_init(&b->n, 0);
    b->next = atomic_load(&span_head);
    while (!atomic_compare_exchange_weak(&span_head, &b->next, b))
        ;
    return b;
}

/* ---- the entry points' classes ---------------------------------------------------- */
static bool starts(const char *name, const char *prefix)
{
    return !strncmp(name, prefix, strlen(prefix));
}

/* From the names, so that every version of cuda.h the table was generated
 * from gets the same classes (the _v2, _ptds and _ptsz forms included). */
static uint16_t kind_of(const char *n)
{
    if (starts(n, "cuCtxSynchronize") || starts(n, "cuStreamSynchronize"))
        return K_SYNC | K_OBSERVE;
    if (starts(n, "cuLaunchKernel") || starts(n, "cuLaunchCooperativeKernel") ||
        starts(n, "cuMemcpyDtoD") || starts(n, "cuMemsetD"))
        return K_WORK;
    if (starts(n, "cuMemHostAlloc") || starts(n, "cuMemAllocHost"))
        return K_PIN_ALLOC | K_TAINT;
    if (starts(n, "cuMemFreeHost"))
        return K_PIN_FREE;
    if (starts(n, "cuStreamCreate"))
        return K_STREAM_NEW;
    if (starts(n, "cuStreamDestroy"))
        return K_STREAM_GONE;
    if (starts(n, "cuMemHostRegister") || starts(n, "cuMemAllocManaged") || starts(n, "cuIpc") ||
        starts(n, "cuImportExternal") || starts(n, "cuGraphicsMap") || starts(n, "cuMemCreate"))
        return K_TAINT;
    /* Synchronous copies with host memory wait for the stream's earlier work. */
    if (!strcmp(n, "cuMemcpyHtoD_v2") || !strcmp(n, "cuMemcpyHtoD_v2_ptds") ||
        starts(n, "cuMemcpyDtoH") || !strcmp(n, "cuMemcpy") || !strcmp(n, "cuMemcpy_ptds") ||
        starts(n, "cuEventSynchronize") || starts(n, "cuEventQuery") ||
        starts(n, "cuStreamQuery") || starts(n, "cuCtxDestroy") ||
        starts(n, "cuDevicePrimaryCtxReset") || starts(n, "cuStreamBeginCapture"))
        return K_OBSERVE;
    if (starts(n, "cuMemcpyHtoDAsync") || starts(n, "cuMemcpyAsync") ||
        starts(n, "cuLaunchHostFunc") || starts(n, "cuStreamAddCallback") ||
        starts(n, "cuGraphLaunch") || starts(n, "cuStreamWaitValue") ||
        starts(n, "cuStreamWriteValue") || starts(n, "cuStreamBatchMemOp"))
        return K_DIRTY;
    return 0;
}

void ga_prof_classify(prof_t *p)
{
    for (unsigned id = 0; id < GA_N_ENTRIES; id++)
        p->kind[id] = kind_of(ga_entries[id].name);
}

static void tally(tally_t *t, uint64_t ns)
{
    atomic_fetch_add_explicit(&t->n, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->ns, ns, memory_order_relaxed);
}

/* A quiet synchronization still owed (lazy_sync would have returned at once)
 * is paid when a call observes the device at `t`: the host work since it
 * returned, up to its wait, is what deferring it would have overlapped. */
static void lazy_observe(uint64_t t)
{
    uint64_t end = atomic_exchange_explicit(&ga_prof->lazy.open_end, 0, memory_order_relaxed);
    if (!end)
        return;
    uint64_t wait = atomic_load_explicit(&ga_prof->lazy.open_wait, memory_order_relaxed);
    uint64_t gap = t > end ? t - end : 0;
    atomic_fetch_add_explicit(&ga_prof->lazy.overlap_ns, gap < wait ? gap : wait,
                              memory_order_relaxed);
}

void ga_prof_lazy_close(uint64_t now)
{
    lazy_observe(now);
}

/* What the estimates take from one call (one thread's order of calls; calls
 * of several threads interleave, which an estimate may blur). */
static void estimate_span(ga_id_t id, uint64_t t0, uint64_t t1)
{
    unsigned k = ga_prof->kind[id];
    uint64_t ns = t1 > t0 ? t1 - t0 : 0;
    if (!k)
        return;
    bool in = in_window();
    if (in && (k & K_PIN_ALLOC))
        tally(&ga_prof->pin_alloc, ns);
    if (in && (k & K_PIN_FREE))
        tally(&ga_prof->pin_free, ns);
    if (in && (k & K_STREAM_NEW))
        tally(&ga_prof->stream_new, ns);
    if (in && (k & K_STREAM_GONE))
        tally(&ga_prof->stream_gone, ns);
    if (k & K_TAINT)
        atomic_store_explicit(&ga_prof->lazy.tainted, true, memory_order_relaxed);
    if (k & K_OBSERVE)
        lazy_observe(t0);
    if (k & K_WORK)
        atomic_store_explicit(&ga_prof->lazy.work, true, memory_order_relaxed);
    if (k & K_DIRTY)
        atomic_store_explicit(&ga_prof->lazy.dirty, true, memory_order_relaxed);
    if (k & K_SYNC) {
        if (in)
            tally(&ga_prof->syncs, ns);
        bool work = atomic_exchange_explicit(&ga_prof->lazy.work, false, memory_order_relaxed);
        bool dirty = atomic_exchange_explicit(&ga_prof->lazy.dirty, false, memory_order_relaxed);
        if (in && work && !dirty &&
            !atomic_load_explicit(&ga_prof->lazy.tainted, memory_order_relaxed)) {
            tally(&ga_prof->lazy.quiet, ns);
            atomic_store_explicit(&ga_prof->lazy.open_wait, ns, memory_order_relaxed);
            atomic_store_explicit(&ga_prof->lazy.open_end, t1 ? t1 : 1, memory_order_relaxed);
        }
    }
}

void ga_profile_span(ga_id_t id, uint64_t t0, uint64_t t1)
{
    if (!ga_profiling)
        return;
    if ((unsigned)id < GA_N_ENTRIES)
        estimate_span(id, t0, t1);
    unsigned g = atomic_load_explicit(&ga_prof_gen, memory_order_relaxed);
    span_block_t *b = tl_span;
    if (GA_UNLIKELY(!b || b->gen != g ||
                    atomic_load_explicit(&b->n, memory_order_relaxed) == SPAN_BLOCK)) {
        if (b && b->gen == g && atomic_load(&span_reserved) >= SPAN_LIMIT)
            return;
        b = tl_span = span_new_block(g);
        if (!b)
            return;
    }
    uint32_t n = atomic_load_explicit(&b->n, memory_order_relaxed);
    b->ev[n] = (span_ev_t){t0, t1, (uint32_t)id};
    atomic_store_explicit(&b->n, n + 1, memory_order_release);
}

const span_block_t *ga_prof_spans(void)
{
    return atomic_load(&span_head);
}

void ga_prof_trace_reset(void)
{
    atomic_store(&span_head, NULL);
    atomic_store(&span_reserved, 0);
}
