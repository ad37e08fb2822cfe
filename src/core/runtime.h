/* runtime.h - the library's one piece of process state: initialized lazily on
 * the first intercepted call, published once, then read without locks.
 *
 * Initialization never holds a lock while it calls the loader or the driver: a
 * thread that finds initialization under way elsewhere (or recursing on its own
 * stack) gets NULL and passes its call straight through. */
#ifndef GA_RUNTIME_H
#define GA_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>

#include "core/common.h"
#include "core/config.h"
#include "core/real.h"

typedef struct ga_rt {
    ga_driver_t drv;
    ga_config_t cfg;
    bool active; /* false: pure pass-through (GPUACCEL=0, secure execution) */
    bool track;  /* a feature uses the stream tracker: keep it */
    bool epochs; /* coalescing reads the write epoch: bump it */
    bool calls;  /* a feature sees every intercepted call (the tuner's gate) */
    bool per_call; /* plain calls concern a feature: tracked, flushed, seen or gated */
    bool gated;    /* a feature sees every intercepted call by its id first and
                    * may answer it with an error (features/feature.h: gate) */
    bool direct;   /* no feature is on and no call is counted for the log: the
                    * doors hand out the driver's own entry points, and the
                    * exported wrappers only count (hooks/dispatch.c) */
    /* With one gating feature that counts what it owes: that count, bit 0 of
     * gate_sees[id] set when its gate asked at init to see entry point id, and
     * whether it retired its gate (NULL: it never does; hooks/dispatch.c).
     * gate_owed NULL: every gated call goes to ga_hooks_gate. */
    const _Atomic unsigned *gate_owed;
    const uint16_t *gate_sees;
    const _Atomic bool *gate_retired;
} ga_rt_t;

/* What a feature's gate asks of the hooks (features/feature.h). */
enum {
    GA_GATE_SETTLE = 1, /* flush, then the feature's settle, before the call */
    GA_GATE_AFTER = 2,  /* tell the feature when the call returned */
};

extern _Atomic(const ga_rt_t *) ga_rt_published;

const ga_rt_t *ga_rt_init(void);

/* The runtime, or NULL while it cannot be had (no libcuda loaded yet,
 * initialization running elsewhere or on this thread's stack). */
static inline const ga_rt_t *ga_rt(void)
{
    const ga_rt_t *rt = atomic_load_explicit(&ga_rt_published, memory_order_acquire);
    return GA_LIKELY(rt != NULL) ? rt : ga_rt_init();
}

/* True when the one gate need not see this call: nothing is owed, and the
 * gate did not ask for the entry point or retired (the rule of
 * hooks/dispatch.c's gate_sees_now, for one gate). Inline: most gated calls
 * end here, and the call into the hooks cost a served allocation pair ~50
 * instructions. */
static inline bool ga_gate_skips(const ga_rt_t *rt, ga_id_t id)
{
    return rt->gate_owed && !atomic_load(rt->gate_owed) &&
           (!(rt->gate_sees[id] & 1u) || (rt->gate_retired && atomic_load(rt->gate_retired)));
}

static inline bool ga_active(const ga_rt_t *rt)
{
    return rt && rt->active;
}

/* The real function for `id`. Without a runtime it is looked up on the spot
 * (slow, only during initialization). NULL if the driver lacks it. */
void *ga_real_slow(ga_id_t id);
static inline void *ga_real_fn(const ga_rt_t *rt, ga_id_t id)
{
    return GA_LIKELY(rt != NULL) ? rt->drv.fn[id] : ga_real_slow(id);
}

/* Call the real entry `name` with the wrapper's arguments; CUDA_ERROR_NOT_FOUND
 * if this driver lacks it. For hooks, whose entries share one prototype. */
#define GA_REAL(rt, id, proto_name) ((__typeof__(&proto_name))ga_real_fn((rt), (id)))

/* The driver's event timer: cuEventElapsedTime_v2 where the driver has it
 * (CUDA 12.8 on), else cuEventElapsedTime, whose ABI is the same. NULL only on
 * a driver with neither. */
static inline __typeof__(&cuEventElapsedTime) ga_real_elapsed(const ga_rt_t *rt)
{
    void *f = ga_real_fn(rt, GA_ID_cuEventElapsedTime_v2);
    return (__typeof__(&cuEventElapsedTime))(f ? f : ga_real_fn(rt, GA_ID_cuEventElapsedTime));
}

/* What fork must know of one stateful module. runtime.c takes every module's
 * locks before fork (in list order: rwlock, then mutex), releases them in the
 * parent, and in the child re-initializes them and calls `child`, which resets
 * the module: the child starts with no CUDA state. */
typedef struct ga_fork_ops {
    pthread_rwlock_t *rwlock; /* optional */
    pthread_mutex_t *lock;
    void (*child)(void);
} ga_fork_ops_t;

#endif
