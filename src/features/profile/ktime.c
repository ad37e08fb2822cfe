/* ktime.c - kernel timing with events (GPUACCEL_PROFILE_KERNELS=1): each
 * launch is bracketed by two events on its stream; a ring holds the pairs not
 * yet collected, and a collector harvests finished ones into each kernel's GPU
 * time and the GPU track of the trace.
 *
 * Owns: the event functions, the pool of free events, the ring and the
 * collector's flag; the thread's pending start event.
 * Must never: record an event on a capturing stream (it would become a node of
 * the program's graph); query, synchronize or time an event outside
 * ga_own_calls_enter/leave (tracking/capture.h: unsafe during a capture); call
 * the driver while holding ga_prof_lock. */
#define _GNU_SOURCE
#include "features/profile/internal.h"

#include "tracking/capture.h"

static struct {
    __typeof__(&cuEventCreate) create;
    __typeof__(&cuEventRecord) record;
    __typeof__(&cuEventQuery) query;
    __typeof__(&cuEventSynchronize) sync;
    __typeof__(&cuEventElapsedTime) elapsed;
} ev;

static _Atomic bool collecting;

static GA_TLS CUevent tl_start;
static GA_TLS CUstream tl_start_stream;
static GA_TLS unsigned tl_start_gen;

void ga_prof_resolve_timing(prof_t *p, const ga_rt_t *rt)
{
    p->knote = "off: GPUACCEL_PROFILE_KERNELS=1 times every kernel with events";
    if (!rt->cfg.profile_kernels)
        return;
    ev.create = GA_REAL(rt, GA_ID_cuEventCreate, cuEventCreate);
    ev.record = GA_REAL(rt, GA_ID_cuEventRecord, cuEventRecord);
    ev.query = GA_REAL(rt, GA_ID_cuEventQuery, cuEventQuery);
    ev.sync = GA_REAL(rt, GA_ID_cuEventSynchronize, cuEventSynchronize);
    ev.elapsed = ga_real_elapsed(rt);
    if (!ev.create || !ev.record || !ev.query || !ev.sync || !ev.elapsed) {
        p->knote = "unavailable: this driver lacks the event functions kernel timing needs";
        return;
    }
    p->ktiming = true;
    p->knote = "on: each launch is bracketed by two events on its stream";
}

static CUevent take_event(void)
{
    CUevent e = NULL;
    pthread_mutex_lock(&ga_prof_lock);
    if (ga_prof->nevfree)
        e = ga_prof->evfree[--ga_prof->nevfree];
    bool create = !e && ga_prof->nevents < MAX_EVENTS;
    if (create)
        ga_prof->nevents++; /* reserve before creating outside the lock */
    pthread_mutex_unlock(&ga_prof_lock);
    if (create && ev.create(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
        e = NULL;
        pthread_mutex_lock(&ga_prof_lock);
        ga_prof->nevents--;
        pthread_mutex_unlock(&ga_prof_lock);
    }
    return e;
}

static void give_event(CUevent e) /* under lock */
{
    if (e && ga_prof->nevfree < MAX_EVENTS)
        ga_prof->evfree[ga_prof->nevfree++] = e;
}

/* A launch timed: its GPU time counts when it was launched inside the
 * window (internal.h's in_window); the trace's GPU track shows it either way. */
static void account_kernel(const pending_t *pd, uint64_t ns) /* under lock */
{
    kern_t *k = &ga_prof->kern[pd->kern];
    if (pd->in)
        k->gpu_ns += ns, k->timed++, ga_prof->timed++;
    track_t *g = &ga_prof->track[pd->track];
    /* A kernel starts no earlier than its launch, nor before the previous
     * kernel on its stream ended: the GPU track is placed from that. */
    uint64_t ts = pd->host_ns > g->gpu_end ? pd->host_ns : g->gpu_end;
    g->gpu_end = ts + ns;
    if (ga_prof->ngpu < GPU_LIMIT)
        ga_prof->gpu[ga_prof->ngpu++] = (gpu_ev_t){pd->kern, pd->track, ts, ns};
    else
        ga_prof->gpu_dropped++;
}

/* Harvest up to `max` finished launches, oldest first. One collector at a
 * time; the driver is called outside the lock. `wait` (at exit) blocks on
 * each event instead of polling. */
void ga_prof_collect(unsigned max, bool wait)
{
    if (!ga_own_calls_enter()) /* event queries are unsafe during capture: later */
        return;
    if (atomic_exchange(&collecting, true)) {
        ga_own_calls_leave();
        return;
    }
    for (unsigned n = 0; n < max; n++) {
        pthread_mutex_lock(&ga_prof_lock);
        bool empty = ga_prof->ring_head == ga_prof->ring_tail;
        pending_t pd = ga_prof->ring[ga_prof->ring_head % RING];
        pthread_mutex_unlock(&ga_prof_lock);
        if (empty)
            break;
        CUresult r = wait ? ev.sync(pd.end) : ev.query(pd.end);
        if (r == CUDA_ERROR_NOT_READY)
            break;
        float ms = 0;
        bool ok = r == CUDA_SUCCESS && ev.elapsed(&ms, pd.start, pd.end) == CUDA_SUCCESS;
        pthread_mutex_lock(&ga_prof_lock);
        ga_prof->ring_head++;
        if (ok)
            account_kernel(&pd, (uint64_t)((double)ms * 1e6 + 0.5));
        else
            ga_prof->untimed += pd.in;
        give_event(pd.start);
        give_event(pd.end);
        pthread_mutex_unlock(&ga_prof_lock);
    }
    atomic_store(&collecting, false);
    ga_own_calls_leave();
}

static CUstream record_stream(CUstream s, bool per_thread)
{
    return ga_prof_per_thread(s, per_thread) ? CU_STREAM_PER_THREAD : s;
}

void ga_profile_kernel_begin(const ga_rt_t *rt, CUstream s, bool per_thread)
{
    if (!ga_profiling || !ga_prof->ktiming)
        return;
    unsigned g = atomic_load_explicit(&ga_prof_gen, memory_order_relaxed);
    if (tl_start_gen != g) {
        tl_start = NULL;
        tl_start_gen = g;
    }
    CUstream hs = record_stream(s, per_thread);
    /* An event recorded on a capturing stream would become a node of the
     * program's graph: never time a launch that is being captured. */
    if (ga_stream_capturing(rt, hs, per_thread)) {
        tl_start_stream = GA_NOSTREAM;
        return;
    }
    ga_prof_collect(2, false);
    CUevent e = tl_start ? tl_start : take_event();
    tl_start = e;
    tl_start_stream = GA_NOSTREAM;
    if (e && ev.record(e, hs) == CUDA_SUCCESS)
        tl_start_stream = hs;
}

/* After the launch: the end event, and the pair queued for collection. */
void ga_prof_kernel_end(unsigned k, track_t *g, CUstream s, bool per_thread, bool in)
{
    CUstream hs = record_stream(s, per_thread);
    unsigned gen = atomic_load_explicit(&ga_prof_gen, memory_order_relaxed);
    if (tl_start_gen != gen || !tl_start || tl_start_stream != hs) {
        pthread_mutex_lock(&ga_prof_lock);
        ga_prof->untimed += in;
        pthread_mutex_unlock(&ga_prof_lock);
        return;
    }
    uint64_t host = ga_now_ns();
    CUevent end = take_event();
    bool ok = end && ev.record(end, hs) == CUDA_SUCCESS;
    pthread_mutex_lock(&ga_prof_lock);
    if (ok && g && ga_prof->ring_tail - ga_prof->ring_head < RING) {
        ga_prof->ring[ga_prof->ring_tail++ % RING] =
            (pending_t){tl_start, end, k, (uint32_t)(g - ga_prof->track), host, in};
        tl_start = NULL;
    } else {
        give_event(end);
        ga_prof->untimed += in;
    }
    pthread_mutex_unlock(&ga_prof_lock);
    tl_start_stream = GA_NOSTREAM;
}

void ga_prof_ktime_reset(void)
{
    atomic_store(&collecting, false);
}
