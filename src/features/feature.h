/* feature.h - the one interface every feature implements, and the hooks call.
 *
 * A feature is a folder under src/features/ that defines one descriptor,
 * `const ga_feature_t ga_feature_<name>`, and is named once in features.def.
 * The descriptor says what the feature is (name, switch, the driver entry
 * points it cannot work without, what it needs from tracking) and which events
 * it takes part in. At init the hooks build, for each event, the array of the
 * enabled features that handle it (hooks/dispatch.c): a feature that is off,
 * or that leaves an event NULL, costs that event nothing.
 *
 * Two kinds of events:
 *  - served: the hook asks each handler in features.def order whether it
 *    answers the call itself; the first that returns true has answered (its
 *    result in *r) and the driver is not called. A feature never calls the
 *    driver for the program's own call: when no handler serves, the hook does.
 *  - observed: every handler is told, in features.def order.
 * Rules for handlers: return the driver's own error codes; never call another
 * feature (anything two features share lives in tracking or core); never make
 * a capture-unsafe driver call outside ga_own_calls_enter/leave
 * (tracking/capture.h). Model: nginx's ngx_module_t, Redis's ae.c backends. */
#ifndef GA_FEATURE_H
#define GA_FEATURE_H

#include <stdatomic.h>

#include "core/config.h"
#include "core/log.h"
#include "core/runtime.h"

/* What a feature needs the tracking layer to keep for it. */
enum {
    GA_USES_STREAMS = 1, /* the stream tracker: busy/idle streams, fences */
    GA_USES_EPOCH = 2,   /* the write epoch */
    GA_USES_CALLS = 4,   /* sees every intercepted call (call_enter/call_leave) */
    GA_USES_SEQUENCES = 8, /* the launch-sequence detector (tracking/sequence.h): the
                            * hooks feed it; the feature's init subscribes a sink */
};

typedef enum { GA_FLUSH_STREAM, GA_FLUSH_ALL } ga_flush_t;
#define GA_HOSTALLOC_LEGACY (1u << 31) /* a host_alloc from cuMemAllocHost */
typedef enum { GA_COPY_HTOD, GA_COPY_DTOH, GA_COPY_DTOD, GA_COPY_OTHER } ga_copy_dir_t;

/* A launch as the hooks see it, and as features may rewrite it. */
typedef struct ga_launch {
    CUfunction f;            /* what is launched (kernels may replace it) */
    CUfunction original;     /* what the program named */
    unsigned grid[3], block[3];
    unsigned shmem;
    CUstream stream;
    bool per_thread;         /* through a _ptsz entry point */
    void **params, **extra;
    const void *rewritten_by; /* the descriptor whose rewrite was launched, or NULL */
    CUresult rewrite_result;  /* what the driver said to it (the program's own
                               * launch followed if that failed) */
    bool held;                /* a feature held it (launch_done still sees it) */
    bool attributed;          /* cuLaunchKernelEx: never rewritten, held or learned */
} ga_launch_t;

typedef struct ga_feature {
    const char *summary;  /* one line, for reports (its name and switch: features.def) */
    bool (*on)(const ga_config_t *cfg);
    void (*off)(ga_config_t *cfg);      /* switched off: this driver lacks what it needs */
    ga_id_t needs[12];
    unsigned n_needs;
    unsigned uses;                      /* GA_USES_* */

    void (*init)(const ga_rt_t *rt);
    void (*report)(void);               /* at exit, once, in list order */
    const ga_fork_ops_t *fork;          /* its lock and child reset; NULL: stateless */

    /* ---- served ---- */
    bool (*alloc)(const ga_rt_t *rt, ga_id_t id, CUdeviceptr *dptr, size_t bytes, CUresult *r);
    /* The driver is out of memory (host: page-locked host memory, else device
     * memory): give back what it holds of that kind; true if it did. Every
     * feature is asked; then the hook retries the program's allocation once. */
    bool (*reclaim)(const ga_rt_t *rt, bool host);
    /* s: GA_NOSTREAM for cuMemFree, the stream of cuMemFreeAsync */
    bool (*free)(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dptr, CUstream s, CUresult *r);
    /* A copy that may read device memory into host memory: id is the entry
     * point (cuMemcpyDtoH*: synchronous; cuMemcpyDtoHAsync*: on s; cuMemcpy*
     * and cuMemcpyAsync*: unified addresses, the direction unknown). Nothing
     * is known of dst: it may be device, managed or mapped memory. */
    bool (*read)(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n, CUstream s,
                 CUresult *r);
    /* A copy from host memory to device memory (cuMemcpyHtoD*: synchronous,
     * on the default stream; cuMemcpyHtoDAsync*: on s). Nothing is known of
     * src: it may be pageable, page-locked, device, managed or mapped memory. */
    bool (*write)(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dst, const void *src, size_t n,
                  CUstream s, CUresult *r);
    /* Page-locked host memory: cuMemHostAlloc and cuMemFreeHost; cuMemAllocHost
     * comes with flags GA_HOSTALLOC_LEGACY (the driver decides its flags:
     * cudaMallocHost's memory is portable, for one). */
    bool (*host_alloc)(const ga_rt_t *rt, void **pp, size_t bytes, unsigned flags, CUresult *r);
    bool (*host_free)(const ga_rt_t *rt, void *p, CUresult *r);
    /* cuMemPoolSetAttribute (set) and cuMemPoolGetAttribute: a feature that
     * changed a pool's attribute answers for the program's own view of it. */
    bool (*pool_attr)(const ga_rt_t *rt, bool set, CUmemoryPool pool, CUmemPool_attribute attr,
                      void *value, CUresult *r);
    /* cuStreamCreate (prio 0, with_prio false) and cuStreamCreateWithPriority;
     * cuStreamDestroy: a feature that keeps streams answers for the driver. */
    bool (*stream_create)(const ga_rt_t *rt, CUstream *ph, unsigned flags, int prio,
                          bool with_prio, CUresult *r);
    bool (*stream_destroy)(const ga_rt_t *rt, CUstream h, CUresult *r);
    /* Rewrite the launch (function, configuration): true if it did. */
    bool (*rewrite)(const ga_rt_t *rt, ga_launch_t *l);
    /* Hold the launch (it will be issued later, or replayed): true if held. */
    bool (*hold)(const ga_rt_t *rt, const ga_launch_t *l, CUresult *r);
    /* cuStreamSynchronize (h the stream as named, pt through a _ptsz entry)
     * or, with h GA_NOSTREAM, cuCtxSynchronize of the current context:
     * true if the feature answered without the driver's wait. */
    bool (*sync)(const ga_rt_t *rt, CUstream h, bool pt, CUresult *r);

    /* ---- the gate (rt->gated) ---- */
    /* Before every intercepted call, by entry id: GA_GATE_* flags. With
     * GA_GATE_SETTLE the hooks flush what features hold and call `settle`,
     * whose error (the driver's) the program gets instead of its call; with
     * GA_GATE_AFTER they call `gate_done` once the call returned. */
    unsigned (*gate)(const ga_rt_t *rt, ga_id_t id);
    CUresult (*settle)(const ga_rt_t *rt);
    void (*gate_done)(const ga_rt_t *rt, ga_id_t id);
    /* Asked once per entry point after init: must `gate` see calls of id
     * while the feature owes nothing (*owed 0)? NULL: every call, always.
     * Calls it need not see skip it: the gate costs a served allocation and
     * free most of what the feature adds to them. */
    bool (*gate_sees)(ga_id_t id);
    _Atomic unsigned *owed; /* NULL: the gate sees every call */
    /* Once true, for good: the gate need see no call but while *owed (a
     * feature that will never defer again). NULL: never. */
    _Atomic bool *gate_retired;

    /* ---- observed ---- */
    void (*call_enter)(void); /* around every intercepted call (GA_USES_CALLS) */
    void (*call_leave)(void);
    void (*flush)(const ga_rt_t *rt, ga_flush_t what, CUstream s);
    /* A stream-ordered allocation (cuMemAllocAsync: pool NULL, the device's
     * current pool; cuMemAllocFromPoolAsync: its pool) is about to reach the
     * driver, on stream s. */
    void (*alloc_async_begin)(const ga_rt_t *rt, CUmemoryPool pool, CUstream s, bool per_thread);
    void (*alloc_done)(const ga_rt_t *rt, CUdeviceptr p, size_t bytes, uint64_t ns, CUresult r);
    void (*free_done)(const ga_rt_t *rt, CUdeviceptr p, uint64_t ns, CUresult r);
    /* Page-locked host memory the program got (cuMemHostAlloc, cuMemAllocHost:
     * served or the driver's) or gave back (cuMemFreeHost): told once the call
     * returned r. */
    void (*host_alloc_done)(const ga_rt_t *rt, void *p, size_t bytes, CUresult r);
    void (*host_free_done)(const ga_rt_t *rt, void *p, CUresult r);
    /* A copy between host memory and the device is about to be served or made
     * (before any feature or the driver touches its host side): the
     * synchronous and asynchronous DtoH and HtoD forms, with copy_done's
     * arguments. */
    void (*copy_begin)(const ga_rt_t *rt, ga_copy_dir_t dir, const void *host, CUdeviceptr dev,
                       size_t bytes);
    /* A copy (the program's, or a feature's answer to it) returned: `host` the
     * host side of a copy to or from the device (NULL for the others; nothing
     * is known of it: it may even be device memory), `dev` the device side
     * (dst for cuMemcpy and cuMemcpyAsync, whose direction is the driver's). */
    void (*copy_done)(const ga_rt_t *rt, ga_copy_dir_t dir, const void *host, CUdeviceptr dev,
                      size_t bytes, uint64_t ns, CUresult r);
    /* The program's own copy (one `read` offered and nobody served) went to
     * the driver. */
    void (*read_issued)(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                        CUstream s, CUresult r);
    /* A `read` offered was answered, by a feature or the driver, with r (on
     * the thread that offered it, before the call returns). */
    void (*read_done)(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                      CUstream s, CUresult r);
    /* Memory another process may write or read (IPC exported or imported). */
    void (*shared)(const ga_rt_t *rt, CUdeviceptr base, bool exported);
    /* cuMemGetInfo: bytes the feature holds that the program may count as free. */
    size_t (*held_free)(CUcontext ctx);
    /* cuMemGetAddressRange: the size the program asked for at base, if known. */
    bool (*asked_size)(CUdeviceptr base, CUdeviceptr dptr, size_t *size);
    void (*before_launch)(const ga_rt_t *rt, const ga_launch_t *l); /* the program's own config */
    void (*launch_begin)(const ga_rt_t *rt, const ga_launch_t *l);  /* just before the driver's */
    void (*launch_done)(const ga_rt_t *rt, const ga_launch_t *l, CUresult r);
    /* A wait (stream h, or with h GA_NOSTREAM the whole of ctx) that began at
     * ga_order_now() == began succeeded. */
    void (*synced)(const ga_rt_t *rt, CUstream h, bool pt, CUcontext ctx, uint64_t began);
    void (*stream_created)(const ga_rt_t *rt, CUstream s);
    /* The program destroyed stream s; kept: a feature keeps it (it lives on in
     * the driver, and in the tracker under the same record). */
    void (*stream_gone)(const ga_rt_t *rt, CUstream s, bool kept);
    /* The program gave stream s an attribute or attached memory to it. */
    void (*stream_touched)(const ga_rt_t *rt, CUstream s);
    /* A context was destroyed or its primary context reset: with it, the
     * modules loaded into it (libraries outlive contexts). */
    void (*ctx_gone)(const ga_rt_t *rt, CUcontext ctx);
    /* The CUmodule or CUlibrary `owner` is being unloaded. */
    void (*unload)(const ga_rt_t *rt, const void *owner);
    /* A module (library false) or library was loaded from memory
     * (cuModuleLoadData, cuModuleLoadDataEx, cuModuleLoadFatBinary,
     * cuLibraryLoadData): owner is the handle the driver returned, image what
     * the program passed (PTX text, a cubin, a fatbin, or cudart's wrapper of
     * one), which the driver accepted. Told before the program has the
     * handle, so before any kernel of it is launched. Loads from files
     * (cuModuleLoad, cuLibraryLoadFromFile) are not told: their code is
     * never seen. */
    void (*code_loaded)(const ga_rt_t *rt, const void *owner, bool library, const void *image);
    void (*span)(ga_id_t id, uint64_t t0, uint64_t t1); /* a timed driver call */
    void (*exit)(void);                /* at exit, before the reports (files are written) */
} ga_feature_t;

/* Every feature's descriptor, in features.def order. */
#define GA_FEATURE(name, variable, toggled) extern const ga_feature_t ga_feature_##name;
#include "features/features.def"
#undef GA_FEATURE

enum {
#define GA_FEATURE(name, variable, toggled) GA_FEATURE_ID_##name,
#include "features/features.def"
#undef GA_FEATURE
    GA_N_FEATURES
};

extern const ga_feature_t *const ga_features[GA_N_FEATURES];
/* Each feature's name and switch, from features.def, by feature id. */
extern const char *const ga_feature_names[GA_N_FEATURES];
extern const char *const ga_feature_variables[GA_N_FEATURES];

/* A cache's exit report: "WHAT: H of N CALLS" (H the calls it served, N all
 * it was asked), one info line; nothing when it was never asked. */
static inline void ga_report_served(const char *what, _Atomic uint64_t *hits,
                                    _Atomic uint64_t *misses, const char *calls)
{
    uint64_t h = atomic_load(hits), n = h + atomic_load(misses);
    if (n)
        ga_log(GA_LOG_INFO, "%s: %llu of %llu %s", what, (unsigned long long)h,
               (unsigned long long)n, calls);
}

/* A descriptor's needs and their count, from one list:
 *   GA_NEEDS(GA_ID_cuEventCreate, GA_ID_cuEventRecord), */
#define GA_NEEDS(...)                                                                     \
    .needs = {__VA_ARGS__}, .n_needs = sizeof((ga_id_t[]){__VA_ARGS__}) / sizeof(ga_id_t)

/* Helpers for descriptors whose switch is a bool in ga_config_t. */
#define GA_SWITCH(field)                                                                  \
    static bool switch_on(const ga_config_t *c) { return c->field; }                     \
    static void switch_off(ga_config_t *c) { c->field = false; }

#endif
