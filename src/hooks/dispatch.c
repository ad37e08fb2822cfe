/* dispatch.c - the features as the hooks see them: the list (features.def),
 * their start (switches checked against the driver, init), the dispatch
 * arrays every hook reads, the exit reports, and the fork lock order.
 *
 * Owns: ga_dispatch, written once by ga_hooks_start before the runtime is
 * published (so every thread that sees the runtime sees it complete),
 * read-only after.
 * Must never: name a feature other than through its descriptor. */
#include "hooks/dispatch.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/hooks.h"
#include "core/log.h"
#include "core/stats.h"
#include "tracking/capture.h"
#include "tracking/registry.h"
#include "tracking/streams.h"

const ga_feature_t *const ga_features[GA_N_FEATURES] = {
#define GA_FEATURE(name, variable, toggled) &ga_feature_##name,
#include "features/features.def"
#undef GA_FEATURE
};

const char *const ga_feature_names[GA_N_FEATURES] = {
#define GA_FEATURE(name, variable, toggled) #name,
#include "features/features.def"
#undef GA_FEATURE
};

const char *const ga_feature_variables[GA_N_FEATURES] = {
#define GA_FEATURE(name, variable, toggled) #variable,
#include "features/features.def"
#undef GA_FEATURE
};

ga_dispatch_t ga_dispatch;

/* The driver's CUDA release as "12.4", for messages ("?" if it does not say). */
static void driver_release(const ga_rt_t *rt, char *buf, size_t cap)
{
    __typeof__(&cuDriverGetVersion) get = GA_REAL(rt, GA_ID_cuDriverGetVersion, cuDriverGetVersion);
    int v = 0;
    if (get && get(&v) == CUDA_SUCCESS && v > 0)
        snprintf(buf, cap, "%d.%d", v / 1000, v % 1000 / 10);
    else
        snprintf(buf, cap, "?");
}

/* A driver too old for what an enabled feature needs switches it off, with
 * one warning, and everything else passes through as before. */
static bool has_needs(const ga_rt_t *rt, unsigned i)
{
    const ga_feature_t *f = ga_features[i];
    for (unsigned k = 0; k < f->n_needs; k++)
        if (!rt->drv.fn[f->needs[k]]) {
            char release[16];
            driver_release(rt, release, sizeof release);
            ga_warn("this driver (CUDA %s) has no %s, which %s needs: the feature is off",
                    release, ga_entries[f->needs[k]].name, ga_feature_variables[i]);
            return false;
        }
    return true;
}

static void build(void)
{
    for (unsigned i = 0; i < GA_N_FEATURES; i++) {
        const ga_feature_t *f = ga_features[i];
        if (!ga_dispatch.on[i])
            continue;
#define GA_DISPATCH_ADD(ev)                                                              \
        if (f->ev) {                                                                     \
            ga_dispatch.ev##_of[ga_dispatch.n_##ev] = f;                                 \
            ga_dispatch.ev[ga_dispatch.n_##ev++] = f->ev;                                \
        }
        GA_EVENTS(GA_DISPATCH_ADD)
#undef GA_DISPATCH_ADD
    }
    ga_dispatch.timed =
        ga_dispatch.n_alloc_done || ga_dispatch.n_free_done || ga_dispatch.n_copy_done;
}

void ga_hooks_enable(ga_rt_t *rt, const bool on[GA_N_FEATURES])
{
    memset(&ga_dispatch, 0, sizeof ga_dispatch);
    unsigned uses = 0;
    bool any = false;
    for (unsigned i = 0; i < GA_N_FEATURES; i++)
        if ((ga_dispatch.on[i] = on[i]))
            uses |= ga_features[i]->uses, any = true;
    /* The tracker and the epoch cost a little on every call: only the
     * features that read them pay for them. */
    rt->track = (uses & GA_USES_STREAMS) != 0;
    rt->epochs = (uses & GA_USES_EPOCH) != 0;
    rt->calls = (uses & GA_USES_CALLS) != 0;
    /* The sequence detector is fed only for features that use it; they
     * subscribe again in their init. */
    ga_dispatch.sequences = (uses & GA_USES_SEQUENCES) != 0;
    ga_seq_reset();
    build();
    for (unsigned id = 0; id < GA_N_ENTRIES; id++) /* every gate sees every call */
        ga_dispatch.gate_sees[id] = (uint16_t)((1u << ga_dispatch.n_gate) - 1);
    rt->gated = ga_dispatch.n_gate > 0;
    rt->gate_owed = NULL; /* ga_hooks_start sets it once the gates have asked */
    /* A gate sees plain calls too: they leave the wrappers' fast path. */
    rt->per_call = rt->track || rt->calls || ga_dispatch.n_flush > 0 || ga_dispatch.sequences ||
                   rt->gated;
    /* Nothing to do with any call: stay out of the way. Programs get the
     * driver's own entry points from the doors, as with GPUACCEL=0, unless the
     * log will list the calls seen (info and above count every call). */
    rt->direct = !any && !ga_log_enabled(GA_LOG_INFO);
    ga_stats_timing = ga_dispatch.n_span > 0;
}

void ga_hooks_check(ga_rt_t *rt, bool on[GA_N_FEATURES])
{
    for (unsigned i = 0; i < GA_N_FEATURES; i++) {
        const ga_feature_t *f = ga_features[i];
        on[i] = rt->active && f->on(&rt->cfg);
        if (on[i] && !has_needs(rt, i)) {
            f->off(&rt->cfg);
            on[i] = false;
        }
    }
}

/* At info level, the features in effect, as `gpuaccel env` computes them. */
static void log_features(const bool on[GA_N_FEATURES])
{
    char line[512] = "";
    size_t n = 0;
    for (unsigned i = 0; i < GA_N_FEATURES && n < sizeof line; i++)
        if (on[i])
            n += (size_t)snprintf(line + n, sizeof line - n, " %s", ga_feature_variables[i]);
    ga_log(GA_LOG_INFO, "features on:%s", n ? line : " none");
}

/* What each gating feature's gate must see while it owes nothing: asked
 * after init, where a feature may learn what entry points are. */
static void gate_ask(void)
{
    _Static_assert(GA_N_FEATURES <= 16, "a gate_sees bit per feature");
    for (unsigned i = 0; i < ga_dispatch.n_gate; i++) {
        bool (*sees)(ga_id_t) = ga_dispatch.gate_of[i]->gate_sees;
        for (unsigned id = 0; sees && id < GA_N_ENTRIES; id++)
            if (!sees((ga_id_t)id))
                ga_dispatch.gate_sees[id] &= (uint16_t)~(1u << i);
    }
}

void ga_hooks_start(ga_rt_t *rt)
{
    bool on[GA_N_FEATURES];
    ga_hooks_check(rt, on);
    log_features(on);
    ga_hooks_enable(rt, on);
    GA_EACH(init, rt);
    gate_ask();
    /* One gate that counts what it owes: the wrappers test it inline. */
    bool inline_gate = ga_dispatch.n_gate == 1 && ga_dispatch.gate_of[0]->owed;
    rt->gate_owed = inline_gate ? ga_dispatch.gate_of[0]->owed : NULL;
    rt->gate_sees = ga_dispatch.gate_sees;
    rt->gate_retired = inline_gate ? ga_dispatch.gate_of[0]->gate_retired : NULL;
}

void ga_hooks_exit(void)
{
    GA_EACH(exit);
    ga_stats_log_summary();
    GA_EACH(report);
}

/* Lock order for fork: features (features.def order; a feature may hold its
 * lock while it calls tracking or core, never another feature), then
 * tracking (streams may call the registry; capture takes no other lock; the
 * sequence detector holds its lock only while a sink subscribes), then
 * core. runtime.c takes them in this order and releases in reverse. */
unsigned ga_hooks_fork_ops(const ga_fork_ops_t **out, unsigned max)
{
    unsigned n = 0;
    for (unsigned i = 0; i < GA_N_FEATURES && n < max; i++)
        if (ga_features[i]->fork)
            out[n++] = ga_features[i]->fork;
    const ga_fork_ops_t *below[] = {&ga_streams_fork, &ga_registry_fork, &ga_capture_fork,
                                    &ga_seq_fork, &ga_stats_fork};
    for (size_t i = 0; i < GA_ARRAY_LEN(below) && n < max; i++)
        out[n++] = below[i];
    return n;
}

void ga_hooks_call_enter(void)
{
    GA_EACH(call_enter);
}

void ga_hooks_call_leave(void)
{
    GA_EACH(call_leave);
}

/* Must the i-th gating feature's gate see a call of entry point id now?
 * While it owes a wait (or does not say whether it does), every call; else
 * the calls it asked for at init (gate_sees), unless it retired its gate. */
static bool gate_sees_now(unsigned i, ga_id_t id)
{
    const ga_feature_t *f = ga_dispatch.gate_of[i];
    if (!f->owed || atomic_load(f->owed))
        return true;
    return (ga_dispatch.gate_sees[id] & (1u << i)) &&
           !(f->gate_retired && atomic_load(f->gate_retired));
}

/* The gate: each gating feature that must see the call says what it needs
 * around it. One that owes a wait gets it (settle) after whatever features
 * hold went out, so the wait covers everything the program issued before;
 * its error answers the call, as the driver's own wait would have returned
 * it. (With one gate the wrappers let most calls by first: ga_gate_skips.) */
bool ga_hooks_gate(const ga_rt_t *rt, ga_id_t id, CUresult *r, unsigned *token)
{
    unsigned after = 0;
    for (unsigned i = 0; i < ga_dispatch.n_gate; i++) {
        const ga_feature_t *f = ga_dispatch.gate_of[i];
        if (!gate_sees_now(i, id))
            continue;
        unsigned w = ga_dispatch.gate[i](rt, id);
        if (w & GA_GATE_AFTER)
            after |= 1u << i;
        if (w & GA_GATE_SETTLE) {
            ga_flush(rt, GA_FLUSH_ALL, NULL);
            CUresult e = f->settle(rt);
            if (e != CUDA_SUCCESS) {
                ga_hooks_gate_done(rt, id, after);
                *r = e;
                return true;
            }
        }
    }
    *token = after;
    return false;
}

/* token: bit i for the i-th gating feature that asked to be told. */
void ga_hooks_gate_done(const ga_rt_t *rt, ga_id_t id, unsigned token)
{
    for (unsigned i = 0; i < ga_dispatch.n_gate && token; i++)
        if (token & (1u << i))
            ga_dispatch.gate_of[i]->gate_done(rt, id);
}

void ga_hooks_span(ga_id_t id, uint64_t t0, uint64_t t1)
{
    GA_EACH(span, id, t0, t1);
}

/* A plain entry point: work on stream s (GA_NOSTREAM: none) that may write
 * device memory, and may map memory (maps: any writer but a copy or a memset).
 * What features hold goes first (the call may observe it), and the tracker
 * sees the work. */
void ga_hooks_plain_before(const ga_rt_t *rt, bool writes, bool maps, CUstream s)
{
    if (writes || s != GA_NOSTREAM)
        ga_flush(rt, s == GA_NOSTREAM ? GA_FLUSH_ALL : GA_FLUSH_STREAM, s);
    ga_writes_bump(rt, writes, maps);
}

void ga_hooks_plain_after(const ga_rt_t *rt, CUresult r, CUstream s, bool pt, bool writes,
                          bool maps)
{
    ga_work_end_as(rt, r, s, pt, writes, maps);
}
