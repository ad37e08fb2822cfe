/* dispatch.h - for each event of the feature interface (features/feature.h),
 * the handlers of the enabled features, in features.def order: built once at
 * init by ga_hooks_start (hooks/dispatch.c) before the runtime is published,
 * read without locks after. An event no enabled feature handles has no
 * handlers, and costs its hook one load and one compare. */
#ifndef GA_DISPATCH_H
#define GA_DISPATCH_H

#include "core/clock.h"
#include "features/feature.h"
#include "tracking/sequence.h"

#define GA_EVENTS(X)                                                                     \
    X(alloc) X(reclaim) X(free) X(read) X(write) X(host_alloc) X(host_free) X(pool_attr) \
    X(stream_create) X(stream_destroy) X(stream_touched) X(alloc_async_begin) X(read_issued) X(read_done) X(rewrite) X(hold) X(sync) X(gate) X(call_enter) X(call_leave) X(flush)      \
    X(alloc_done) X(free_done) X(host_alloc_done) X(host_free_done) X(copy_begin) X(copy_done) X(shared) X(held_free) X(asked_size)         \
    X(before_launch) X(launch_begin) X(launch_done) X(synced) X(stream_created)          \
    X(stream_gone) X(ctx_gone) X(unload) X(code_loaded) X(span) X(exit) X(report) X(init)

typedef struct ga_dispatch {
#define GA_DISPATCH_SLOT(ev)                                                             \
    unsigned n_##ev;                                                                     \
    __typeof__(((ga_feature_t *)0)->ev) ev[GA_N_FEATURES];                               \
    const ga_feature_t *ev##_of[GA_N_FEATURES];
    GA_EVENTS(GA_DISPATCH_SLOT)
#undef GA_DISPATCH_SLOT
    bool on[GA_N_FEATURES];
    /* Bit i: the i-th gating feature's gate sees calls of this entry point
     * even while it owes nothing (all of them until ga_hooks_start has asked). */
    uint16_t gate_sees[GA_N_ENTRIES];
    bool timed; /* some handler takes a duration: hooks read the clock */
    bool sequences; /* some feature uses the sequence detector: the hooks feed it */
} ga_dispatch_t;

extern ga_dispatch_t ga_dispatch;

/* Which features rt's configuration switches on, each switched off (with a
 * warning, and in rt->cfg) when this driver lacks an entry point it needs. */
void ga_hooks_check(ga_rt_t *rt, bool on[GA_N_FEATURES]);

/* Build the dispatch for exactly the features marked on, and derive rt's
 * track, epochs, calls and per_call, and whether the hooks feed the sequence
 * detector, from them: no driver check, no init (the detector forgets its
 * subscribers; the features' init subscribes them).
 * ga_hooks_start uses it once; unit tests, whenever they switch features. */
void ga_hooks_enable(ga_rt_t *rt, const bool on[GA_N_FEATURES]);

/* Tell every handler of `ev`. */
#define GA_EACH(ev, ...)                                                                 \
    do {                                                                                 \
        for (unsigned i_ = 0; i_ < ga_dispatch.n_##ev; i_++)                             \
            ga_dispatch.ev[i_](__VA_ARGS__);                                             \
    } while (0)

/* Ask the handlers of a served event in turn; true when one answered. */
#define GA_SERVE(ev, ...)                                                                \
    ({                                                                                   \
        bool served_ = false;                                                            \
        for (unsigned i_ = 0; i_ < ga_dispatch.n_##ev && !served_; i_++)                 \
            served_ = ga_dispatch.ev[i_](__VA_ARGS__);                                   \
        served_;                                                                         \
    })

/* Out of memory: every feature holding memory of that kind gives it back;
 * true if any did (the caller then retries once). Unlike a served event, all
 * are asked: one cache's memory alone may not be enough. A wait a feature
 * deferred is paid first: until it is, a stream-ordered free the program
 * synchronized may not have run, and its memory is neither the driver's nor
 * a cache's to give (the retry then follows whatever was given). */
static inline bool ga_reclaim(const ga_rt_t *rt, bool host)
{
    bool any = false;
    for (unsigned i_ = 0; i_ < ga_dispatch.n_gate; i_++) {
        const ga_feature_t *f_ = ga_dispatch.gate_of[i_];
        if (f_->settle && f_->settle(rt) == CUDA_SUCCESS)
            any = true;
    }
    for (unsigned i_ = 0; i_ < ga_dispatch.n_reclaim; i_++)
        any |= ga_dispatch.reclaim[i_](rt, host);
    return any;
}

static inline bool ga_feature_on(unsigned feature_id)
{
    return ga_dispatch.on[feature_id];
}

/* A monotonic start time when some handler times calls, else 0. */
static inline uint64_t ga_hooks_t0(void)
{
    return ga_dispatch.timed ? ga_now_ns() : 0;
}

/* Flush points: whatever features hold back goes out before a call that may
 * observe or change what it would have done; and this thread's launch
 * sequence ends (tracking/sequence.h), whatever stream was named. */
static inline void ga_flush(const ga_rt_t *rt, ga_flush_t what, CUstream s)
{
    GA_EACH(flush, rt, what, s);
    if (ga_dispatch.sequences)
        ga_seq_flush(rt);
}

#endif
