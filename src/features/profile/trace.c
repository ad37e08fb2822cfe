/* trace.c - the driver-call trace: each timed driver call (a span, from
 * ga_span_record in core/stats.c) becomes an event in a block only its thread
 * writes; write_trace.c reads the blocks at exit.
 *
 * Owns: the push-only list of blocks and the count of events they reserve;
 * the thread's current block.
 * Must never: take ga_prof_lock or call the driver (a span is recorded on
 * every timed driver call), allocate but a whole block at a time, keep more
 * than SPAN_LIMIT events (later ones are only counted in stats), or free a
 * block (a signal handler may be reading it). */
#define _GNU_SOURCE
#include "features/profile/internal.h"

#include <stdlib.h>

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

void ga_profile_span(ga_id_t id, uint64_t t0, uint64_t t1)
{
    if (!ga_profiling)
        return;
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
