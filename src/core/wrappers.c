/* wrappers.c - one exported function per entry of entries.def, under its exact
 * ELF name (the third door: programs linked with -lcuda call these directly;
 * the other two doors hand out their addresses).
 *
 * A plain wrapper counts the call, calls the driver and, when a feature needs
 * them, bumps the write epoch (if the entry may write device memory) and notes
 * work on its stream (streams.h: ga_work_begin/ga_work_end). A hooked one
 * hands the call to its feature hook. In pass-through (GPUACCEL=0, secure
 * execution, or before initialization) both call the driver and nothing else;
 * with no feature on (rt->direct) both count the call and call the driver, and
 * the doors hand out the driver's own pointers instead of these. */
#include "core/wrappers.h"

#include "core/fault.h"
#include "core/hooks.h"
#include "core/stats.h"

/* A sticky error turns off serving from the library (streams.h). */
#define GA_NOTE_FAULT(r)                                                                \
    if (GA_UNLIKELY((r) != CUDA_SUCCESS) && ga_sticky_error(r))                         \
        ga_fault_note(r)

#define GA_PASS_THROUGH(name, args)                                                     \
    __typeof__(&name) real_ = (__typeof__(&name))ga_real_fn(rt_, GA_ID_##name);         \
    if (GA_UNLIKELY(!real_))                                                            \
        return CUDA_ERROR_NOT_FOUND;                                                    \
    if (!ga_active(rt_))                                                                \
        return real_ args

/* The gate (rt->gated): a feature may settle what it owes before the call,
 * and answer with that wait's error instead; GA_GATE_DONE after the call. */
#define GA_GATE(name)                                                                   \
    unsigned gate_ = 0;                                                                 \
    if (GA_UNLIKELY(rt_->gated) && !ga_gate_skips(rt_, GA_ID_##name)) {                 \
        CUresult g_;                                                                    \
        if (ga_hooks_gate(rt_, GA_ID_##name, &g_, &gate_)) {                            \
            GA_NOTE_FAULT(g_);                                                          \
            ga_span_end(&span_, g_);                                                    \
            return g_;                                                                  \
        }                                                                               \
    }
#define GA_GATE_DONE(name)                                                              \
    if (GA_UNLIKELY(gate_))                                                             \
        ga_hooks_gate_done(rt_, GA_ID_##name, gate_)

/* No feature acts on this plain call: none acts on plain calls at all
 * (!per_call), or it neither writes nor enqueues (the tracker's brackets do
 * nothing for it), no call hook is armed and the gate, if one is, would let it
 * through (ga_gate_skips). Such calls (a context's device, a stream's capture
 * status: several per PyTorch .item() or CuPy a[k].item()) then go straight to
 * the driver. */
#define GA_QUIET(name, cls, stream, rt)                                   \
    (!GA_WRITES_##cls && (stream) == GA_NOSTREAM && !(rt)->calls &&       \
     (!(rt)->gated || ga_gate_skips((rt), GA_ID_##name)))

#define GA_ENTRY(name, cls, pt, stream, params, args)                                   \
    GA_EXPORT CUresult name params                                                      \
    {                                                                                   \
        const ga_rt_t *rt_ = ga_rt();                                                   \
        GA_PASS_THROUGH(name, args);                                                    \
        ga_span_t span_ = ga_span_begin(GA_ID_##name);                                  \
        if (GA_LIKELY(!rt_->per_call || GA_QUIET(name, cls, stream, rt_))) {            \
            CUresult r0_ = real_ args;                                                  \
            GA_NOTE_FAULT(r0_);                                                         \
            ga_span_end(&span_, r0_);                                                   \
            return r0_;                                                                 \
        }                                                                               \
        GA_GATE(name);                                                                  \
        if (GA_UNLIKELY(rt_->calls))                                                    \
            ga_hooks_call_enter();                                                      \
        ga_hooks_plain_before(rt_, GA_WRITES_##cls, GA_MAPS_##cls, stream);             \
        CUresult r_ = real_ args;                                                       \
        ga_hooks_plain_after(rt_, r_, stream, pt, GA_WRITES_##cls, GA_MAPS_##cls);      \
        GA_GATE_DONE(name);                                                             \
        GA_NOTE_FAULT(r_);                                                              \
        if (GA_UNLIKELY(rt_->calls))                                                    \
            ga_hooks_call_leave();                                                      \
        ga_span_end(&span_, r_);                                                        \
        return r_;                                                                      \
    }

#define GA_HOOKED(name, fam, cls, pt, stream, params, args, hparams)                    \
    GA_EXPORT CUresult name params                                                      \
    {                                                                                   \
        const ga_rt_t *rt_ = ga_rt();                                                   \
        GA_PASS_THROUGH(name, args);                                                    \
        ga_span_t span_ = ga_span_begin(GA_ID_##name);                                  \
        if (GA_UNLIKELY(rt_->direct)) { /* no feature: the driver's answer, counted */   \
            CUresult r0_ = real_ args;                                                  \
            ga_span_end(&span_, r0_);                                                   \
            return r0_;                                                                 \
        }                                                                               \
        GA_GATE(name);                                                                  \
        if (GA_UNLIKELY(rt_->calls))                                                    \
            ga_hooks_call_enter();                                                      \
        CUresult r_ = ga_hook_##fam(rt_, GA_ID_##name GA_TAIL(args));                    \
        GA_GATE_DONE(name);                                                             \
        GA_NOTE_FAULT(r_);                                                              \
        if (GA_UNLIKELY(rt_->calls))                                                    \
            ga_hooks_call_leave();                                                      \
        ga_span_end(&span_, r_);                                                        \
        return r_;                                                                      \
    }

#include "core/entries.def"
#undef GA_ENTRY
#undef GA_HOOKED

/* The wrappers' addresses, for the doors that hand them out. */
void *const ga_wrappers[GA_N_ENTRIES] = {
#define GA_ENTRY(name, cls, pt, stream, params, args) (void *)name,
#define GA_HOOKED(name, fam, cls, pt, stream, params, args, hparams) (void *)name,
#include "core/entries.def"
#undef GA_ENTRY
#undef GA_HOOKED
};
