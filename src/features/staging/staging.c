/* staging.c - large copies between pageable host memory and the device, staged
 * through page-locked buffers the library owns (GPUACCEL_STAGING).
 *
 * Why: the driver copies pageable memory through pinned staging buffers of its
 * own, with one CPU thread: 6.1-6.3 GB/s host to device and 9.1-9.8 GB/s back
 * on an H100, where a DMA from pinned memory runs at 52-55 GB/s. Here each
 * copy is cut into chunks; the host side of a chunk is copied by several
 * threads (crew.h) into one of a ring of pinned slots, and the DMA of each
 * chunk runs while the next one is being copied:
 *   host to device: copy chunk k into a slot, then cuMemcpyHtoDAsync from the
 *     slot and an event on the program's stream; a slot is reused only after
 *     cuEventSynchronize on its event;
 *   device to host: DMAs of up to one ring of chunks ahead into the slots, and
 *     as each chunk's event completes, its slot is copied out and refilled.
 * The chunks ramp up, doubling to the full chunk, so the first DMA (or the
 * first copy out) starts after a small copy rather than a whole chunk: host to
 * device from 1/8 of GPUACCEL_STAGING_CHUNK; device to host from an eighth of
 * the copy, 64 KiB at least and 1/8 of the chunk at most.
 *
 * A download of up to 2 MiB that one slot holds is one DMA, then one copy out
 * split over the crew: its chunks' fixed costs (a DMA, an event and a wait
 * each) outweighed what overlapping them saved (first_out). Other mid-size
 * copies are served as large ones are: their fixed cost is a few driver
 * calls, the helpers' wake-up and the wait for the last DMA. An upload up to
 * 1 MiB is one chunk: its copy into the slot, then one DMA. Overlapping the
 * two did not pay on an H200 host: chunks a quarter, a half and a quarter of
 * it, each with a slot, an event and a DMA, took 55 us against 47; two halves
 * in one slot, the helpers copying the second while this thread queued the
 * first's DMA, were faster in one run and slower in the next (46-52 us a
 * copy either way, against 47-51 as one).
 *
 * When it acts: cuMemcpyHtoD_v2[_ptds], cuMemcpyHtoDAsync_v2[_ptsz],
 * cuMemcpyDtoH_v2[_ptds] and cuMemcpyDtoHAsync_v2[_ptsz] (never the
 * unified-address cuMemcpy*, whose direction is the driver's to decide) of
 * GPUACCEL_STAGING_MIN bytes or more, while no stream captures and no sticky
 * error was seen, when
 *   - the device range lies within one allocation (cuMemGetAddressRange): a
 *     bad pointer or a copy running past the end goes to the driver, which
 *     refuses it before copying anything, as it does natively;
 *   - the host range is pageable memory: the driver knows neither its first
 *     nor its last byte (memory type 0, not managed); page-locked, registered,
 *     mapped, device and managed memory goes to the driver untouched (it is
 *     fast there already, or not host memory at all);
 *   - every page of the host range is mapped (msync(MS_ASYNC) fails with
 *     ENOMEM otherwise), so a bad host pointer meets the driver's own
 *     behaviour, not a fault in one of our threads;
 *   - an explicit stream belongs to the current context;
 *   - with GPUACCEL_STAGING_ADAPT (the default): the admission (admit.c)
 *     has measured staged copies of that kind and size faster, and an
 *     upload is GPUACCEL_STAGING_UPLOAD_MIN bytes or more (min_of);
 *   - an engine is free: a few engines (each a ring of slots and a crew) are
 *     taken with a trylock, and when all are in use, or tied to other
 *     contexts, or have slots still in flight on another stream, the copy
 *     goes to the driver: never slower than native because of contention.
 *
 * Semantics kept (the driver's own, for pageable memory):
 *   - host to device returns once the source has been consumed (copied into
 *     slots); the DMAs may still run, in stream order. The synchronous forms
 *     also return only after every earlier piece of work of the stream has
 *     finished ("a stream sync is performed before the copy is initiated"):
 *     they wait for the last chunk's DMA, so the whole copy has landed
 *     (more than the driver promises, whose last DMA may still run: a read
 *     on a stream not ordered after this one sees the bytes, as it does in
 *     practice natively).
 *   - device to host returns only when the destination is filled, for the
 *     asynchronous forms too.
 *   - stream order: every DMA goes on the program's stream: the legacy default
 *     stream for the synchronous forms, CU_STREAM_PER_THREAD for _ptds, the
 *     named stream (NULL taken as the entry point's default) for the rest.
 *   - errors: a failure before the first chunk is issued (pinned memory or
 *     events not to be had, the first DMA refused) hands the call to the
 *     driver, whose own copy answers; after that, the driver's code returns.
 *
 * Capture and fork: every driver call of a staged copy (pinned allocation,
 * event waits) runs inside one ga_own_calls_enter/leave stretch, so none
 * overlaps a capture; a capture another thread begins meanwhile waits for the
 * copy to end (the stretch holds event waits, so it may last as long as the
 * stream's earlier work: natively such a copy would have invalidated a global
 * capture instead). A fork child starts with no engines (pinned memory and
 * events belong to the parent's CUDA, helpers to the parent's threads).
 *
 * Owns: the engines: binding to contexts under `lock`, everything else under
 * each engine's `use`, held (by trylock) for a whole staged copy.
 * Must never: call the driver holding `lock`; let a helper call the driver or
 * the program; reuse a slot before its event has completed; write a host byte
 * the driver has not said is pageable memory. */
#define _GNU_SOURCE
#include "features/staging/staging.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "features/feature.h"
#include "tracking/memkind.h"
#include "features/staging/admit.h"
#include "features/staging/crew.h"
#include "tracking/capture.h"
#include "tracking/device.h"
#include "tracking/streams.h"

/* Four engines: enough for a few threads or devices copying at once (more
 * would share the same PCIe links and memory bandwidth); four slots each: the
 * DMA of up to three chunks queued behind the one being copied.
 *
 * A ring's size follows the program's pageable traffic (RING_SHARE, GROW):
 * page-locking memory costs more than copying it once through the driver's
 * own path, so a program that copies little never pays for a large ring.
 * Measured on an H200 host (driver 580): cuMemHostAlloc of 32 MiB 16-20 ms,
 * of 4 MiB 1.6-2.0 ms, where the driver's pageable copy of 32 MiB takes
 * 3.3 ms; a RISC Zero proof (80 MiB of uploads in one process) ran 12% slower
 * than native with a 32 MiB ring made at its first upload, and 5-13% faster
 * with a 4 MiB one. The rings of all engines together stay within 1/16 of
 * the bytes the program has copied from or to pageable memory (staged or
 * not), so ring-making costs at most a few percent of what the driver would
 * have spent on that traffic; until the first ring fits (4 slots of 64 KiB:
 * 4 MiB of traffic) copies go to the driver. A ring is made again, larger,
 * when four times its chunk fits, or the largest chunk does: its pages are
 * made ready by a thread of its own (prep_t) while the copies go on through
 * the ring there, so a larger ring costs the copies only its registration,
 * and may take an eighth of the traffic (PREP_SHARE). Populating the pages
 * (the kernel zeroing them) is most of a ring's cost: 9.6-10 ms of 11.4-13.4
 * ms for 32 MiB on that host, registering them 1.8-3.4 ms (cuMemHostAlloc:
 * 15-19 ms). Made in the copy's own thread instead, the growth of the rings
 * cost sppark's NTTs (600 MiB of copies after a small warm-up) 13 ms of a
 * 37 ms phase.
 *
 * A ring grows no further than its copies use (ring_want): slots of the
 * largest copy staging was offered. Larger slots cost their registration: on
 * an H200 host a loop of 64 KiB uploads, as fast staged as by the driver copy
 * by copy (p50 17.7-21 us against 19-27), ran slower on average because a
 * 1.3-1.9 ms registration of a ring it never needed landed in it. Slots of
 * half the largest copy (a copy in two chunks, one's memcpy beside the
 * other's DMA) were measured against them on one H200 host, 5 alternating
 * rounds, medians: stwo-style decommitment (256 KiB whole-column reads)
 * 10.2 ms a round against 9.2 (native 9.2), 256 KiB downloads 43.0 us
 * against 40.9, 1 MiB downloads 106.5 against 112.4; 1 MiB uploads ran at
 * 0.88x of native with either. */
enum { N_ENGINES = 4, N_SLOTS = GA_STAGING_SLOTS, MIN_CHUNK = GA_STAGING_MIN_CHUNK };
enum { ONE_OUT_MAX = 2 << 20 }; /* downloads up to this size: one DMA, one crew copy */
enum { MAX_THREADS = 64, RING_SHARE = GA_STAGING_RING_SHARE, PREP_SHARE = 8, GROW = 4 };

/* A larger ring's pages, made by a thread of their own: populated, never
 * inherited by a child, not yet registered (no driver call is made off the
 * program's threads). The thread owns `mem` until it publishes `state`. */
enum { PREP_IDLE, PREP_RUNNING, PREP_READY, PREP_OFF };
typedef struct prep {
    _Atomic int state;
    size_t chunk;        /* the slot size the pages are for (set before RUNNING) */
    void *mem;           /* READY: N_SLOTS * chunk bytes */
} prep_t;

typedef struct slot {
    char *host;       /* in the engine's pinned ring */
    CUevent ev;
    bool pending;     /* its event was recorded and not yet seen complete */
    CUstream stream;  /* where its last DMA went (a translated handle) */
    pthread_t thread; /* whose CU_STREAM_PER_THREAD that was */
} slot_t;

typedef struct engine {
    pthread_mutex_t use; /* held for a whole staged copy; only ever trylocked */
    /* under `lock`: */
    CUcontext ctx;       /* the context its ring and events live in; NULL: none */
    bool gone;           /* ctx destroyed while in use: forget the ring on release */
    /* under `use`: */
    bool ready;          /* ring and events exist */
    bool broken;         /* a slot's state is unknown (an event record failed) */
    bool registered;     /* ring: our pages, registered (else cuMemHostAlloc's) */
    bool fresh;          /* ring just put in place: its first copy not yet made */
    void *ring;
    size_t chunk;        /* each slot's size: the ring is N_SLOTS of them */
    slot_t slot[N_SLOTS];
    unsigned next;       /* the slot the next chunk takes */
    prep_t prep;         /* a larger ring's pages, on the way (state: atomic) */
    ga_crew_t crew;
} engine_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Initialized statically (a pthread_once could be caught mid-way by a fork). */
#define ENGINE_INIT                                                                      \
    {                                                                                    \
        .use = PTHREAD_MUTEX_INITIALIZER, /* the crew: all zero, as ga_crew_init makes it */ \
    }
static engine_t engines[N_ENGINES] = {ENGINE_INIT, ENGINE_INIT, ENGINE_INIT, ENGINE_INIT};
_Static_assert(N_ENGINES == 4, "one ENGINE_INIT per engine");
static unsigned helpers_wanted; /* copy threads but the caller: set at init */
/* Bytes of pageable copies staging could serve, staged or not: rings grow with it. */
static _Atomic uint64_t traffic;
static _Atomic uint64_t n_htod, n_dtoh, n_bytes, n_declined, n_busy, n_fallbacks, n_early;
static _Atomic uint64_t n_grown;  /* rings made again, larger */
static _Atomic uint64_t n_driver; /* copies sent to the driver by measurement */
static _Atomic size_t largest;    /* the largest copy staging was offered */

/* ---- the settings --------------------------------------------------------------- */

/* The largest chunk (core/config.c, shared with the profile's estimate). */
static size_t chunk_size(const ga_rt_t *rt)
{
    return ga_config_staging_chunk(&rt->cfg);
}

/* Threads that copy, the caller included: the setting, or min(12, three
 * quarters of the CPUs this process may run on). The rest keeps the program,
 * the driver's threads and the memory system going. Measured on an H100
 * host with 16 CPUs (device-to-host, 8 MiB chunks, GB/s): 8 threads 47 at
 * 64 MiB and 43 at 256 MiB, 12 threads 47 and 51, 16 threads 47 and 51 but
 * 36-39 in other runs; 4 threads 30-34. */
static unsigned copy_threads(const ga_rt_t *rt)
{
    unsigned t = ga_config_staging_threads(&rt->cfg);
    return t > MAX_THREADS ? MAX_THREADS : t; /* the setting's range ends there too */
}

static void staging_init(const ga_rt_t *rt)
{
    helpers_wanted = copy_threads(rt) - 1;
}

/* ---- is this copy one to stage? (driver queries, no lock) ------------------------ */

static bool is_htod(ga_id_t id)
{
    return id == GA_ID_cuMemcpyHtoD_v2 || id == GA_ID_cuMemcpyHtoD_v2_ptds ||
           id == GA_ID_cuMemcpyHtoDAsync_v2 || id == GA_ID_cuMemcpyHtoDAsync_v2_ptsz;
}

static bool is_dtoh(ga_id_t id)
{
    return id == GA_ID_cuMemcpyDtoH_v2 || id == GA_ID_cuMemcpyDtoH_v2_ptds ||
           id == GA_ID_cuMemcpyDtoHAsync_v2 || id == GA_ID_cuMemcpyDtoHAsync_v2_ptsz;
}

static bool is_sync(ga_id_t id)
{
    return id == GA_ID_cuMemcpyHtoD_v2 || id == GA_ID_cuMemcpyHtoD_v2_ptds ||
           id == GA_ID_cuMemcpyDtoH_v2 || id == GA_ID_cuMemcpyDtoH_v2_ptds;
}

/* The stream the program's copy runs on, as a handle that means the same in
 * any entry point: the synchronous forms run on the default stream, and NULL
 * is the legacy stream, or the per-thread one for _ptds/_ptsz entry points. */
static CUstream stream_of(ga_id_t id, CUstream s)
{
    bool pt = ga_entries[id].per_thread;
    if (is_sync(id) || s == NULL)
        return pt ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    return s;
}

/* [d, d+n) within one allocation: otherwise the driver refuses the copy (and
 * must be the one to say so, before anything is copied). */
static bool device_range_ok(const ga_rt_t *rt, CUdeviceptr d, size_t n)
{
    __typeof__(&cuMemGetAddressRange_v2) range =
        GA_REAL(rt, GA_ID_cuMemGetAddressRange_v2, cuMemGetAddressRange_v2);
    CUdeviceptr base = 0;
    size_t size = 0;
    if (!range || range(&base, &size, d) != CUDA_SUCCESS || d < base)
        return false;
    return n <= size && d - base <= size - n;
}

/* [p, p+n) pageable host memory, every page of it mapped. */
static bool pageable(const ga_rt_t *rt, const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p, last = a + n - 1;
    if (!ga_pageable_ends(rt, p, n))
        return false;
    /* msync with MS_ASYNC does nothing to anonymous or private memory and
     * fails with ENOMEM when a page of the range is not mapped. */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo = a & ~(page - 1);
    return msync((void *)lo, last + 1 - lo, MS_ASYNC) == 0;
}

/* A stream the program named belongs to the current context (the library's
 * events and pinned ring are that context's). */
static bool stream_in(const ga_rt_t *rt, CUstream s, CUcontext ctx)
{
    if (s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return true;
    __typeof__(&cuStreamGetCtx) get = GA_REAL(rt, GA_ID_cuStreamGetCtx, cuStreamGetCtx);
    CUcontext sc = NULL;
    return get && get(s, &sc) == CUDA_SUCCESS && sc == ctx;
}

/* ---- engines -------------------------------------------------------------------- */

/* An engine of ctx (or a free one, bound to it now) that no one is using and
 * that is not in `tried`; NULL if none. */
static engine_t *acquire(CUcontext ctx, unsigned tried)
{
    engine_t *got = NULL;
    pthread_mutex_lock(&lock);
    for (int pass = 0; pass < 2 && !got; pass++)
        for (unsigned i = 0; i < N_ENGINES && !got; i++) {
            engine_t *e = &engines[i];
            if ((tried >> i) & 1 || e->ctx != (pass == 0 ? ctx : NULL) || e->gone)
                continue;
            if (pthread_mutex_trylock(&e->use) == 0) {
                e->ctx = ctx;
                got = e;
            }
        }
    pthread_mutex_unlock(&lock);
    return got;
}

/* Forget the ring without driver calls: its context is gone (and took it
 * along, or our pages' registration: `unmap` gives those pages back), or a
 * slot's state is unknown (the ring is left as it is rather than freed under
 * a DMA that may still use it). */
static void forget_ring(engine_t *e, bool unmap)
{
    if (unmap && e->ring && e->registered)
        munmap(e->ring, (size_t)N_SLOTS * e->chunk);
    e->ready = e->broken = e->registered = false;
    e->ring = NULL;
    e->next = 0;
    memset(e->slot, 0, sizeof e->slot);
}

static void release(engine_t *e)
{
    pthread_mutex_lock(&lock);
    if (e->gone || e->broken)
        forget_ring(e, e->gone && !e->broken);
    if (!e->ready) { /* nothing of the context's in it: free for any context */
        e->ctx = NULL;
        e->gone = false;
    }
    pthread_mutex_unlock(&e->use);
    pthread_mutex_unlock(&lock);
}

/* Pages for a ring: anonymous, populated (so registering them only pins
 * them), never inherited by a child process (MADV_DONTFORK: a child's
 * copy-on-write must not move pages a DMA of ours may use). NULL if none. */
static void *pages_new(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, bytes, MADV_DONTFORK);
    return p;
}

/* Page-locked memory for a ring of `bytes`, portable (pinned for every
 * context): our own pages registered with the driver (cuMemHostRegister),
 * else cuMemHostAlloc (a driver or platform that does not register). */
static void *ring_alloc(const ga_rt_t *rt, size_t bytes, bool *registered)
{
    __typeof__(&cuMemHostRegister_v2) reg =
        GA_REAL(rt, GA_ID_cuMemHostRegister_v2, cuMemHostRegister_v2);
    __typeof__(&cuMemHostAlloc) halloc = GA_REAL(rt, GA_ID_cuMemHostAlloc, cuMemHostAlloc);
    void *p = reg ? pages_new(bytes) : NULL;
    if (p) {
        if (reg(p, bytes, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS)
            return *registered = true, p;
        munmap(p, bytes);
    }
    p = NULL;
    if (!halloc || halloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS)
        return NULL;
    *registered = false;
    return p;
}

static void ring_mem_free(const ga_rt_t *rt, void *p, size_t bytes, bool registered)
{
    if (!p)
        return;
    if (registered) {
        __typeof__(&cuMemHostUnregister) unreg =
            GA_REAL(rt, GA_ID_cuMemHostUnregister, cuMemHostUnregister);
        if (!unreg || unreg(p) != CUDA_SUCCESS)
            return; /* still known to the driver: left mapped rather than reused */
        munmap(p, bytes);
        return;
    }
    __typeof__(&cuMemFreeHost) hfree = GA_REAL(rt, GA_ID_cuMemFreeHost, cuMemFreeHost);
    if (hfree)
        hfree(p);
}

static void free_ring(const ga_rt_t *rt, engine_t *e, unsigned nev)
{
    __typeof__(&cuEventDestroy_v2) destroy =
        GA_REAL(rt, GA_ID_cuEventDestroy_v2, cuEventDestroy_v2);
    for (unsigned i = 0; i < nev && destroy; i++)
        destroy(e->slot[i].ev);
    ring_mem_free(rt, e->ring, (size_t)N_SLOTS * e->chunk, e->registered);
    forget_ring(e, false);
}

/* Every slot's last DMA done (the slots of other streams were seen done by
 * usable(); this stream's are waited for in its order anyway). */
static bool ring_idle(const ga_rt_t *rt, engine_t *e)
{
    __typeof__(&cuEventSynchronize) wait = GA_REAL(rt, GA_ID_cuEventSynchronize, cuEventSynchronize);
    for (unsigned i = 0; i < N_SLOTS; i++) {
        if (!e->slot[i].pending)
            continue;
        if (wait(e->slot[i].ev) != CUDA_SUCCESS)
            return false;
        e->slot[i].pending = false;
    }
    return true;
}

/* Is a ring of `want`-byte slots worth making in place of one of `have`? */
static bool worth_growing(size_t have, size_t want, size_t max)
{
    return want >= GROW * have || (want == max && have < max);
}

/* The ring's slots in `mem`, of `chunk` bytes each. */
static void ring_install(engine_t *e, void *mem, size_t chunk, bool registered)
{
    for (unsigned i = 0; i < N_SLOTS; i++)
        e->slot[i].host = (char *)mem + (size_t)i * chunk;
    e->ring = mem, e->chunk = chunk, e->registered = registered, e->fresh = true;
}

/* A larger ring in place of the engine's, once the old one's DMAs are done;
 * else (a DMA's state unknown) the new one goes and the old one stays. */
static void ring_replace(const ga_rt_t *rt, engine_t *e, void *mem, size_t chunk, bool registered)
{
    if (!ring_idle(rt, e)) {
        ring_mem_free(rt, mem, (size_t)N_SLOTS * chunk, registered);
        return;
    }
    ring_mem_free(rt, e->ring, (size_t)N_SLOTS * e->chunk, e->registered);
    ring_install(e, mem, chunk, registered);
    atomic_fetch_add_explicit(&n_grown, 1, memory_order_relaxed);
}

/* The pages are touched one at a time rather than populated by mmap: a
 * populating mmap holds the process's memory map for the whole range (ms),
 * stalling the program's own mmap and munmap calls meanwhile. */
static void *prep_main(void *arg)
{
    prep_t *p = arg;
    size_t bytes = (size_t)N_SLOTS * p->chunk, page = (size_t)sysconf(_SC_PAGESIZE);
    char *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        mem = NULL;
    } else {
        (void)madvise(mem, bytes, MADV_DONTFORK);
        for (size_t o = 0; o < bytes; o += page)
            ((volatile char *)mem)[o] = 0;
    }
    p->mem = mem;
    atomic_store_explicit(&p->state, mem ? PREP_READY : PREP_OFF, memory_order_release);
    return NULL;
}

/* Start making pages for a ring of `chunk`-byte slots (state IDLE: no other
 * thread touches the prep). A thread that cannot start leaves it IDLE. */
static void prep_start(engine_t *e, size_t chunk)
{
    prep_t *p = &e->prep;
    p->chunk = chunk, p->mem = NULL;
    atomic_store_explicit(&p->state, PREP_RUNNING, memory_order_relaxed);
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_t attr;
    pthread_t t;
    bool started = false;
    if (pthread_attr_init(&attr) == 0) {
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_sigmask(SIG_SETMASK, &all, &old); /* no handler of the program runs on it */
        started = pthread_create(&t, &attr, prep_main, p) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
    }
    if (!started)
        atomic_store_explicit(&p->state, PREP_IDLE, memory_order_relaxed);
}

/* Made ready: register the pages and put them in place of the ring, once its
 * DMAs are done. Pages the driver will not register end the preparations
 * (the ring then grows as it is first made). */
static void prep_adopt(const ga_rt_t *rt, engine_t *e)
{
    prep_t *p = &e->prep;
    if (atomic_load_explicit(&p->state, memory_order_acquire) != PREP_READY)
        return;
    size_t bytes = (size_t)N_SLOTS * p->chunk;
    __typeof__(&cuMemHostRegister_v2) reg =
        GA_REAL(rt, GA_ID_cuMemHostRegister_v2, cuMemHostRegister_v2);
    int next = PREP_IDLE;
    if (p->chunk <= e->chunk) { /* the ring was made again meanwhile */
        munmap(p->mem, bytes);
    } else if (!reg || reg(p->mem, bytes, CU_MEMHOSTREGISTER_PORTABLE) != CUDA_SUCCESS) {
        munmap(p->mem, bytes);
        next = PREP_OFF;
    } else {
        ring_replace(rt, e, p->mem, p->chunk, true);
    }
    p->mem = NULL;
    atomic_store_explicit(&p->state, next, memory_order_relaxed);
}

/* A ring of `want`-byte slots in place of the one there (or the first),
 * made now: false if there is none to use. */
static bool ring_make(const ga_rt_t *rt, engine_t *e, size_t want)
{
    __typeof__(&cuEventCreate) create = GA_REAL(rt, GA_ID_cuEventCreate, cuEventCreate);
    bool registered = false;
    void *ring = create ? ring_alloc(rt, (size_t)N_SLOTS * want, &registered) : NULL;
    if (!ring)
        return e->ready; /* a larger ring failed: the one there serves */
    if (e->ready) {
        ring_replace(rt, e, ring, want, registered);
        return true;
    }
    for (unsigned i = 0; i < N_SLOTS; i++)
        if (create(&e->slot[i].ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) {
            e->ring = ring, e->chunk = want, e->registered = registered;
            free_ring(rt, e, i);
            return false;
        }
    ring_install(e, ring, want, registered);
    e->ready = true;
    return true;
}

/* The slot size wanted after t bytes of traffic, within what the copies so
 * far use: slots of the largest copy's, rounded up to a power of two (see the
 * ring's comment above; core/config.c, shared with the profile's estimate). */
static size_t ring_want(size_t max, uint64_t t)
{
    return ga_config_staging_slot(max, t, atomic_load_explicit(&largest, memory_order_relaxed));
}

static void note_largest(size_t n)
{
    size_t was = atomic_load_explicit(&largest, memory_order_relaxed);
    while (n > was &&
           !atomic_compare_exchange_weak_explicit(&largest, &was, n, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

/* The ring of pinned slots and their events, in the current context (the
 * engine's), after `t` bytes of traffic: the first made here, with slots of
 * ring_want(max, t); larger ones prepared by their own thread and put in
 * place here (the events stay), or, where the driver does not register
 * pages, made here as the first. False when there is none to use. */
static bool ensure_ring(const ga_rt_t *rt, engine_t *e, uint64_t t, size_t max)
{
    size_t want = ring_want(max, t);
    if (!e->ready)
        return want && ring_make(rt, e, want);
    int state = atomic_load_explicit(&e->prep.state, memory_order_acquire);
    bool can_prep = e->registered && state != PREP_OFF &&
                    GA_REAL(rt, GA_ID_cuMemHostRegister_v2, cuMemHostRegister_v2);
    if (!can_prep)
        return !worth_growing(e->chunk, want, max) || ring_make(rt, e, want);
    prep_adopt(rt, e);
    size_t ahead = ring_want(max, t * (RING_SHARE / PREP_SHARE));
    if (worth_growing(e->chunk, ahead, max) &&
        atomic_load_explicit(&e->prep.state, memory_order_acquire) == PREP_IDLE)
        prep_start(e, ahead);
    return true;
}

/* Is a slot's last DMA on the stream this copy runs on? */
static bool same_stream(const slot_t *sl, CUstream s)
{
    return sl->stream == s &&
           (s != CU_STREAM_PER_THREAD || pthread_equal(sl->thread, pthread_self()));
}

/* Can this engine stage a copy on stream s now? Slots still in flight on s are
 * waited for in stream order anyway; one in flight on another stream would tie
 * this copy to that stream's progress (which may wait on the host: a stream
 * memory wait, a host function), which the driver's own copy is not. */
static bool usable(const ga_rt_t *rt, engine_t *e, CUstream s)
{
    __typeof__(&cuEventQuery) query = GA_REAL(rt, GA_ID_cuEventQuery, cuEventQuery);
    for (unsigned i = 0; i < N_SLOTS; i++) {
        slot_t *sl = &e->slot[i];
        if (!sl->pending || same_stream(sl, s))
            continue;
        if (!query || query(sl->ev) != CUDA_SUCCESS)
            return false;
        sl->pending = false;
    }
    return true;
}

/* ---- the staged copies (under the engine's `use`) ---------------------------------- */

typedef struct stage {
    const ga_rt_t *rt;
    engine_t *e;
    CUstream s;      /* translated (stream_of) */
    size_t ramp;     /* where a copy's chunks start at most: the largest chunk / 8 */
    bool issued;     /* a DMA of this copy reached the driver */
    uint64_t queued; /* an upload: when its source was consumed, its last DMA queued */
} stage_t;

/* Chunk k of a copy with `left` bytes to go: first, doubling up to chunk. */
static size_t chunk_len(size_t first, size_t chunk, unsigned k, size_t left)
{
    size_t c = k < 16 && (first << k) < chunk ? first << k : chunk;
    return c < left ? c : left;
}

/* Where a copy's chunks start: at most `ramp` (an eighth of the largest
 * chunk: where a large copy's ramp starts) and the slot. A small ring's
 * slots do not shorten it: a 64 KiB upload through 64 KiB slots is one DMA,
 * not four of 8, 16, 32 and 8 KiB (which ran 64 KiB uploads at 0.82x of
 * native on an H200, 1.19x as one). */
static size_t first_in(size_t chunk, size_t ramp)
{
    return ramp < chunk ? ramp : chunk;
}

/* A device-to-host copy's first chunk: the whole copy up to ONE_OUT_MAX
 * when a slot holds it (one DMA, then one copy split over the crew: 42-59 us
 * for 1 MiB on an H200, where chunks of 128, 256, 512 and 128 KiB, each a
 * DMA, an event and a wait, took 120-137 us); else an eighth of it, 64 KiB
 * at least, within first_in. */
static size_t first_out(size_t chunk, size_t ramp, size_t n)
{
    if (n <= ONE_OUT_MAX && n <= chunk)
        return n;
    size_t f = (n / 8 + 4095) & ~(size_t)4095, most = first_in(chunk, ramp);
    if (f < MIN_CHUNK)
        f = MIN_CHUNK;
    return f < most ? f : most;
}

/* Wait until the slot's last DMA has completed. */
static CUresult slot_wait(stage_t *st, slot_t *sl)
{
    if (!sl->pending)
        return CUDA_SUCCESS;
    CUresult r = GA_REAL(st->rt, GA_ID_cuEventSynchronize, cuEventSynchronize)(sl->ev);
    if (r == CUDA_SUCCESS)
        sl->pending = false;
    return r;
}

/* After a DMA from or into the slot was enqueued: its event. */
static CUresult slot_record(stage_t *st, slot_t *sl)
{
    st->issued = true;
    CUresult r = GA_REAL(st->rt, GA_ID_cuEventRecord, cuEventRecord)(sl->ev, st->s);
    if (r != CUDA_SUCCESS) {
        st->e->broken = true; /* a DMA without an event: the ring is given up */
        return r;
    }
    sl->pending = true;
    sl->stream = st->s;
    sl->thread = pthread_self();
    return CUDA_SUCCESS;
}

/* The bytes go into the ring around the caches (GA_CREW_AROUND): the DMA that
 * reads them next finds no dirty line to snoop, and the stores read no line
 * first. (stageprobe's nt ways measure it against plain stores.) */
static CUresult stage_htod(stage_t *st, CUdeviceptr dst, const char *src, size_t n, bool sync)
{
    engine_t *e = st->e;
    __typeof__(&cuMemcpyHtoDAsync_v2) dma =
        GA_REAL(st->rt, GA_ID_cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2);
    CUresult r;
    slot_t *sl = NULL;
    size_t off = 0;
    for (unsigned k = 0; off < n; k++) {
        size_t len = chunk_len(first_in(e->chunk, st->ramp), e->chunk, k, n - off);
        sl = &e->slot[e->next++ % N_SLOTS];
        if ((r = slot_wait(st, sl)) != CUDA_SUCCESS)
            return r;
        ga_crew_copy(&e->crew, sl->host, src + off, len, GA_CREW_AROUND);
        if ((r = dma(dst + off, sl->host, len, st->s)) != CUDA_SUCCESS ||
            (r = slot_record(st, sl)) != CUDA_SUCCESS)
            return r;
        off += len;
    }
    st->queued = ga_now_ns();
    /* Synchronous: the stream's earlier work and the whole copy have finished
     * when it returns (the driver promises the earlier work; its own last
     * DMA may still run, for microseconds: a program that reads the bytes
     * on a stream not ordered after this one must not meet a longer window
     * here). */
    return sync && sl ? slot_wait(st, sl) : CUDA_SUCCESS;
}

static CUresult stage_dtoh(stage_t *st, char *dst, CUdeviceptr src, size_t n)
{
    engine_t *e = st->e;
    __typeof__(&cuMemcpyDtoHAsync_v2) dma =
        GA_REAL(st->rt, GA_ID_cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2);
    unsigned base = e->next, issued = 0, drained = 0;
    size_t issue_off = 0, drain_off = 0, first = first_out(e->chunk, st->ramp, n);
    CUresult r = CUDA_SUCCESS;
    while (drain_off < n) {
        /* Keep the ring full: DMAs of up to N_SLOTS chunks ahead. */
        while (issue_off < n && issued < drained + N_SLOTS) {
            size_t len = chunk_len(first, e->chunk, issued, n - issue_off);
            slot_t *sl = &e->slot[(base + issued) % N_SLOTS];
            if ((r = slot_wait(st, sl)) != CUDA_SUCCESS ||
                (r = dma(sl->host, src + issue_off, len, st->s)) != CUDA_SUCCESS ||
                (r = slot_record(st, sl)) != CUDA_SUCCESS)
                goto out;
            issue_off += len;
            issued++;
        }
        size_t len = chunk_len(first, e->chunk, drained, n - drain_off);
        slot_t *sl = &e->slot[(base + drained) % N_SLOTS];
        if ((r = slot_wait(st, sl)) != CUDA_SUCCESS)
            goto out;
        ga_crew_copy(&e->crew, dst + drain_off, sl->host, len, GA_CREW_CACHED);
        drain_off += len;
        drained++;
    }
out:
    e->next = base + issued;
    return r;
}

/* ---- serving a copy ------------------------------------------------------------------ */

typedef enum { HTOD, DTOH } dir_t;

/* The first LOG_COPIES copies considered (past stage()'s checks that leave a
 * copy untouched), at debug level: where each went, the
 * ring's slot size then, and its time (the first copies' costs: the ring's
 * growth, the admission's first figures). */
enum { LOG_COPIES = 64 };
static _Atomic unsigned n_logged;

static uint64_t log_start(void)
{
    return atomic_load_explicit(&n_logged, memory_order_relaxed) < LOG_COPIES &&
                   ga_log_enabled(GA_LOG_DEBUG)
               ? ga_now_ns()
               : 0;
}

static void log_copy(uint64_t t0, dir_t dir, size_t n, const char *way, size_t slot)
{
    if (!t0 || atomic_fetch_add_explicit(&n_logged, 1, memory_order_relaxed) >= LOG_COPIES)
        return;
    char slots[48] = "";
    if (slot)
        snprintf(slots, sizeof slots, " (slots of %zu bytes)", slot);
    ga_log(GA_LOG_DEBUG, "staging: %s of %zu bytes: %s%s in %llu us",
           dir == HTOD ? "upload" : "download", n, way, slots,
           (unsigned long long)((ga_now_ns() - t0) / 1000));
}

/* With an engine of the current context: true if the copy was answered (*r),
 * false to hand it to the driver. */
static bool stage_with(const ga_rt_t *rt, engine_t *e, ga_id_t id, dir_t dir, void *host,
                       CUdeviceptr dev, size_t n, CUstream s, CUresult *r, bool *first)
{
    size_t max = chunk_size(rt);
    uint64_t t = atomic_load_explicit(&traffic, memory_order_relaxed);
    if (!ensure_ring(rt, e, t, max)) {
        atomic_fetch_add_explicit(&n_fallbacks, 1, memory_order_relaxed);
        return false;
    }
    ga_crew_start(&e->crew, helpers_wanted);
    uint64_t t0 = ga_now_ns(); /* the copy's own time: not its ring's making */
    ga_crew_wake(&e->crew);
    stage_t st = {rt, e, s, max / 8, false, 0};
    *r = dir == HTOD ? stage_htod(&st, dev, host, n, is_sync(id)) : stage_dtoh(&st, host, dev, n);
    if (*r != CUDA_SUCCESS && !st.issued) {
        /* Nothing reached the device: the driver's own copy answers. */
        atomic_fetch_add_explicit(&n_fallbacks, 1, memory_order_relaxed);
        return false;
    }
    /* A new ring's first copy pays for its first use (the helpers' first
     * wake, the slots' first DMAs): 1.1 ms for a 256 KiB download on an H200
     * host, against 30 us for the next ones. Counted as the way's figure, it
     * sent the next 60 copies to the driver (64 us each there) until a probe
     * measured again; uncounted, the next copy is staged and measured. */
    *first = e->fresh;
    if (*r == CUDA_SUCCESS) {
        e->fresh = false;
        /* An upload's figure ends where the driver's pageable upload returns:
         * its source consumed, its last DMA queued. A synchronous one here
         * then waits for that DMA, which the driver's leaves to the next
         * wait: counted, the wait made 256 KiB uploads staged (23-30 us a
         * copy on an H200 host, the wait included, against the driver's
         * 28-33) look no faster than the driver's copies, which returned
         * before their last DMA, and the admission sent them to the driver. */
        uint64_t end = dir == HTOD ? st.queued : ga_now_ns();
        if (!*first)
            ga_admit_record(dir, is_sync(id), n, GA_WAY_STAGED, end - t0);
        atomic_fetch_add_explicit(dir == HTOD ? &n_htod : &n_dtoh, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&n_bytes, n, memory_order_relaxed);
    }
    return true;
}

/* The program's copy as it made it, timed for admit.c: s is its own stream
 * argument (the synchronous forms take none). */
static CUresult driver_copy(const ga_rt_t *rt, ga_id_t id, dir_t dir, void *host,
                            CUdeviceptr dev, size_t n, CUstream s)
{
    uint64_t t0 = ga_now_ns();
    CUresult r;
    if (dir == HTOD)
        r = is_sync(id) ? GA_REAL(rt, id, cuMemcpyHtoD_v2)(dev, host, n)
                        : GA_REAL(rt, id, cuMemcpyHtoDAsync_v2)(dev, host, n, s);
    else
        r = is_sync(id) ? GA_REAL(rt, id, cuMemcpyDtoH_v2)(host, dev, n)
                        : GA_REAL(rt, id, cuMemcpyDtoHAsync_v2)(host, dev, n, s);
    if (r == CUDA_SUCCESS)
        ga_admit_record(dir, is_sync(id), n, GA_WAY_DRIVER, ga_now_ns() - t0);
    return r;
}

/* The smallest copy staged in direction dir: GPUACCEL_STAGING_MIN, and for
 * uploads while the admission is on GPUACCEL_STAGING_UPLOAD_MIN (in loops on
 * H200 hosts uploads ran at 0.83-0.94x of native staged at 64 and 256 KiB in
 * every run of three sessions, and at 0.87-0.88x at 1 MiB in the last two,
 * where single staged copies were faster: the probes and a cold way cost
 * more than the win; from 4 MiB uploads gained 1.4-1.8x, and downloads
 * 1.3-1.8x from 64 KiB; with the admission's probes backing off, 256 KiB
 * uploads admitted from 64 KiB still ran 34-35 us a copy against 29-31 by the
 * driver, and 1 MiB ones 93-94 against 88-93; on two H200s later, 1 MiB
 * uploads admitted ran 49-56 us against the driver's 88-104, with the
 * admission's counting of admit.c and without it, where 256 KiB ones still
 * ran 34-38 against 32-36. Those figures counted a synchronous staged upload's
 * wait for its last DMA, which the driver's copy leaves to the program
 * (stage_with): without it, on one H200 host, 256 KiB uploads admitted from
 * 64 KiB ran 22-27 us a copy against the driver's 30-32, 1,886 of 2,019
 * staged, and asynchronous ones 21-22 against 27-28: the floor is 256 KiB;
 * 64 KiB uploads, whose driver copy is nearly as fast as a page-locked one,
 * stay under it). Smaller copies go to the driver untouched, before any of
 * the checks below. */
static size_t min_of(const ga_rt_t *rt, dir_t dir)
{
    uint64_t up = rt->cfg.staging_upload_min, min = rt->cfg.staging_min;
    return dir == HTOD && rt->cfg.staging_adapt && up > min ? up : min;
}

/* How stage() ended, for its debug line. */
static const char *way_of(bool done, bool first, bool tried_one, CUresult r)
{
    if (done && r != CUDA_SUCCESS)
        return "staged, the driver's error";
    if (done)
        return first ? "staged, a new ring's first, not counted" : "staged";
    return tried_one ? "the driver's, no ring or nothing issued" : "the driver's, engines busy";
}

static bool stage(const ga_rt_t *rt, ga_id_t id, dir_t dir, void *host, CUdeviceptr dev,
                  size_t n, CUstream s, CUresult *r)
{
    if (n == 0 || n < min_of(rt, dir) || !host || ga_serving_off())
        return false;
    uint64_t t0 = log_start();
    CUcontext ctx = ga_current_ctx(rt);
    CUstream on = stream_of(id, s);
    if (!ctx || !device_range_ok(rt, dev, n) || !pageable(rt, host, n) ||
        !stream_in(rt, on, ctx)) {
        atomic_fetch_add_explicit(&n_declined, 1, memory_order_relaxed);
        return false;
    }
    uint64_t t = atomic_fetch_add_explicit(&traffic, n, memory_order_relaxed) + n;
    note_largest(n);
    /* Before the traffic pays for a ring, and where the driver has been the
     * faster way for this kind and size of copy: the driver's copy, timed. */
    bool early = !ga_config_staging_ring_chunk(chunk_size(rt), t);
    if (early || (rt->cfg.staging_adapt && ga_admit_choose(dir, is_sync(id), n) == GA_WAY_DRIVER)) {
        atomic_fetch_add_explicit(early ? &n_early : &n_driver, 1, memory_order_relaxed);
        *r = driver_copy(rt, id, dir, host, dev, n, s);
        log_copy(t0, dir, n, early ? "the driver's, no ring yet" : "the driver's, measured faster", 0);
        return true;
    }
    if (!ga_own_calls_enter()) /* a capture is opening: the copy must reach it */
        return false;
    bool done = false, tried_one = false, first = false;
    unsigned tried = 0;
    size_t slot = 0;
    for (engine_t *e; !tried_one && (e = acquire(ctx, tried)) != NULL;) {
        tried |= 1u << (unsigned)(e - engines);
        if ((tried_one = usable(rt, e, on)))
            done = stage_with(rt, e, id, dir, host, dev, n, on, r, &first);
        slot = done ? e->chunk : 0;
        release(e);
    }
    ga_own_calls_leave();
    log_copy(t0, dir, n, way_of(done, first, tried_one, done ? *r : CUDA_SUCCESS), slot);
    if (!tried_one)
        atomic_fetch_add_explicit(&n_busy, 1, memory_order_relaxed);
    return done;
}

static bool staging_write(const ga_rt_t *rt, ga_id_t id, CUdeviceptr dst, const void *src,
                          size_t n, CUstream s, CUresult *r)
{
    return is_htod(id) && stage(rt, id, HTOD, (void *)(uintptr_t)src, dst, n, s, r);
}

static bool staging_read(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                         CUstream s, CUresult *r)
{
    return is_dtoh(id) && stage(rt, id, DTOH, dst, src, n, s, r);
}

/* ---- lifecycle ----------------------------------------------------------------------- */

/* The context's pinned memory and events went with it: forget them (an engine
 * in use forgets them when its copy ends). */
static void staging_ctx_gone(const ga_rt_t *rt, CUcontext ctx)
{
    (void)rt;
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < N_ENGINES; i++) {
        engine_t *e = &engines[i];
        if (e->ctx != ctx)
            continue;
        if (pthread_mutex_trylock(&e->use) == 0) {
            forget_ring(e, true);
            e->ctx = NULL;
            pthread_mutex_unlock(&e->use);
        } else {
            e->gone = true;
        }
    }
    pthread_mutex_unlock(&lock);
}

/* Out of page-locked memory (the program's own allocation failed): the rings of engines
 * no copy is using go back, once their last DMAs are done; a later staged
 * copy makes its ring again. True if any went. */
static bool staging_reclaim(const ga_rt_t *rt, bool host)
{
    __typeof__(&cuEventSynchronize) wait = GA_REAL(rt, GA_ID_cuEventSynchronize, cuEventSynchronize);
    bool gave = false;
    if (!host || ga_serving_off() || !ga_own_calls_enter())
        return false;
    for (unsigned i = 0; i < N_ENGINES; i++) {
        engine_t *e = &engines[i];
        if (pthread_mutex_trylock(&e->use) != 0)
            continue; /* a copy is using it */
        pthread_mutex_lock(&lock);
        CUcontext ctx = e->gone ? NULL : e->ctx;
        pthread_mutex_unlock(&lock);
        ga_ctx_scope_t scope;
        if (e->ready && !e->broken && ctx && ga_ctx_enter(rt, ctx, &scope)) {
            bool done = true;
            for (unsigned k = 0; k < N_SLOTS; k++)
                done &= !e->slot[k].pending || wait(e->slot[k].ev) == CUDA_SUCCESS;
            if (done) { /* else a DMA's state is unknown: the ring stays */
                free_ring(rt, e, N_SLOTS);
                gave = true;
            }
            ga_ctx_leave(rt, &scope);
        }
        release(e);
    }
    ga_own_calls_leave();
    return gave;
}

void ga_staging_stats(ga_staging_stats_t *s)
{
    s->htod = atomic_load(&n_htod);
    s->dtoh = atomic_load(&n_dtoh);
    s->bytes = atomic_load(&n_bytes);
    s->declined = atomic_load(&n_declined);
    s->busy = atomic_load(&n_busy);
    s->fallbacks = atomic_load(&n_fallbacks);
    s->early = atomic_load(&n_early);
    s->traffic = atomic_load(&traffic);
    s->grown = atomic_load(&n_grown);
    s->driver = atomic_load(&n_driver);
}

static void staging_report(void)
{
    ga_staging_stats_t s;
    ga_staging_stats(&s);
    if (s.htod + s.dtoh + s.declined + s.busy + s.fallbacks + s.early + s.driver)
        ga_info("staging: htod=%llu dtoh=%llu bytes=%llu declined=%llu busy=%llu fallbacks=%llu "
                "early=%llu grown=%llu driver=%llu",
                (unsigned long long)s.htod, (unsigned long long)s.dtoh,
                (unsigned long long)s.bytes, (unsigned long long)s.declined,
                (unsigned long long)s.busy, (unsigned long long)s.fallbacks,
                (unsigned long long)s.early, (unsigned long long)s.grown,
                (unsigned long long)s.driver);
}

/* The child of a fork: no helper threads, and no CUDA of its own yet. */
static void fork_child(void)
{
    for (unsigned i = 0; i < N_ENGINES; i++) {
        memset(&engines[i], 0, sizeof engines[i]);
        pthread_mutex_init(&engines[i].use, NULL);
        ga_crew_init(&engines[i].crew);
    }
    atomic_store(&n_htod, 0);
    atomic_store(&n_dtoh, 0);
    atomic_store(&n_bytes, 0);
    atomic_store(&n_declined, 0);
    atomic_store(&n_busy, 0);
    atomic_store(&n_fallbacks, 0);
    atomic_store(&n_early, 0);
    atomic_store(&n_grown, 0);
    atomic_store(&n_driver, 0);
    ga_admit_reset();
    atomic_store(&traffic, 0);
    atomic_store(&largest, 0);
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

GA_SWITCH(staging)

const ga_feature_t ga_feature_staging = {
    .summary = "large pageable host copies staged through pinned buffers by several threads",
    .on = switch_on,
    .off = switch_off,
    GA_NEEDS(GA_ID_cuPointerGetAttributes, GA_ID_cuMemGetAddressRange_v2, GA_ID_cuMemHostAlloc,
             GA_ID_cuEventCreate, GA_ID_cuEventRecord, GA_ID_cuEventSynchronize,
             GA_ID_cuMemcpyHtoDAsync_v2, GA_ID_cuMemcpyDtoHAsync_v2),
    .init = staging_init,
    .report = staging_report,
    .fork = &fork_ops,
    .read = staging_read,
    .write = staging_write,
    .ctx_gone = staging_ctx_gone,
    .reclaim = staging_reclaim,
};
