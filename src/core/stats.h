/* stats.h - per-entry-point call counters and driver time, kept per thread.
 *
 * Every intercepted call passes through ga_enter/ga_leave. Counting is always
 * on (it is what proves a door was taken); timing only while profiling. Each
 * thread owns one block of counters that only it writes, so the hot path has
 * no shared cache line; readers sum the blocks. */
#ifndef GA_STATS_H
#define GA_STATS_H

#include <stdatomic.h>

#include "core/clock.h"
#include "core/runtime.h"

typedef struct ga_thread_stats {
    _Atomic uint64_t calls[GA_N_ENTRIES];
    _Atomic uint64_t ns[GA_N_ENTRIES];
    struct ga_thread_stats *next;
} ga_thread_stats_t;

extern GA_TLS ga_thread_stats_t *ga_tl_stats;
ga_thread_stats_t *ga_stats_attach(void);

/* Timing is on while profiling; set once at init. */
extern bool ga_stats_timing;

typedef struct ga_span {
    ga_id_t id;
    uint64_t t0; /* 0: not timed */
} ga_span_t;

/* Single-writer increment: only the owning thread writes its block. */
static inline void ga_bump(_Atomic uint64_t *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

static inline ga_span_t ga_span_begin(ga_id_t id)
{
    ga_thread_stats_t *s = ga_tl_stats;
    if (GA_UNLIKELY(!s))
        s = ga_stats_attach();
    if (GA_LIKELY(s != NULL))
        ga_bump(&s->calls[id], 1);
    return (ga_span_t){id, ga_stats_timing ? ga_now_ns() : 0};
}

void ga_span_record(const ga_span_t *sp, CUresult r);
static inline void ga_span_end(const ga_span_t *sp, CUresult r)
{
    if (GA_UNLIKELY(sp->t0 != 0))
        ga_span_record(sp, r);
}

/* Sums over all threads, for reports and tests. */
uint64_t ga_stats_calls(ga_id_t id);
uint64_t ga_stats_ns(ga_id_t id);

/* At exit, with GPUACCEL_LOG=info or debug: one line per ~900 characters of
 * "name=calls", busiest first. */
void ga_stats_log_summary(void);

extern const ga_fork_ops_t ga_stats_fork;

#endif
