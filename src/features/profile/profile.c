/* profile.c - GPUACCEL_PROFILE: record what the program does, and at exit write
 * FILE.txt, FILE.json and FILE.trace.json with an opportunities section.
 *
 * Owns: one prof_t (fixed-size tables allocated at init, never resized, so a
 * reader in a signal handler never follows a pointer into freed memory), the
 * per-thread blocks of driver-call trace events, the kernel-timing events and
 * the SIGINT/SIGTERM handlers it installs when the program has none.
 * Must never: call the driver while holding `lock`, allocate or use stdio while
 * writing (the write may run in a signal handler), or write to stdout.
 *
 * Cost: counters and tables sit behind one mutex that only the hooks of
 * copies, allocations and launches take (uncontended in the common
 * one-thread-drives-the-GPU program); driver-call trace events go to a block
 * only their thread writes. */
#define _GNU_SOURCE
#include "features/profile/profile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h> /* snprintf at init only: the writer does its own formatting */
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracking/capture.h"
#include "core/log.h"
#include "features/feature.h"
#include "tracking/registry.h"
#include "core/stats.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

bool ga_profiling;

/* ---- limits: every table is fixed at init ------------------------------------ */
enum {
    N_DIRS = 4,
    N_BUCKETS = 5,
    MAX_KERNELS = 4096,  /* power of two; one more slot collects the overflow */
    MAX_CONFIGS = 8,     /* distinct (grid, block, shmem) kept per kernel */
    MAX_STREAMS = 256,   /* power of two */
    MAX_SEQS = 4096,     /* power of two */
    SEQ_NAMES = 4,       /* kernels named per sequence in the report */
    MAX_SEG = 4096,      /* a segment this long is closed even without a sync */
    MAX_LIVE = 1 << 16,  /* live allocations whose size is remembered */
    FREED_SLOTS = 256,   /* recently freed sizes, for churn */
    MAX_COUNTERS = 64,
    SPAN_BLOCK = 4096,   /* driver-call events per thread block */
    SPAN_LIMIT = 200000, /* driver-call events kept in the trace */
    GPU_LIMIT = 100000,  /* kernel events kept in the trace */
    RING = 4096,         /* launches whose events are not collected yet */
    MAX_EVENTS = 2 * RING + 64,
    TEXT_CAP = 256 * 1024,
    LIST_JSON = 200,     /* longest list in the JSON */
};

static const uint64_t bucket_max[N_BUCKETS] = {256, 4096, 65536, 1u << 20, 0};
static const char *const bucket_name[N_BUCKETS] = {"<=256 B", "<=4 KiB", "<=64 KiB", "<=1 MiB",
                                                   ">1 MiB"};
static const char *const dir_name[N_DIRS] = {"htod", "dtoh", "dtod", "other"};

/* Estimates, from DESIGN.md's measurements on an H200: what each feature's
 * replacement costs. */
#define COALESCED_READ_NS 500u /* a read served from the library's window */
#define POOLED_PAIR_NS 2000u   /* an allocation and free served from the cache */
#define GRAPH_NODE_NS 2500u    /* most a graph saves per replayed launch */
#define LAUNCH_FLOOR_NS 1000u  /* what a launch costs even in a graph */
#define LONG_KERNEL_NS 20000u  /* kernels this long hide their launch cost */

typedef struct acc {
    uint64_t count, bytes, ns;
} acc_t;

typedef struct kcfg {
    unsigned grid[3], block[3], shmem;
    uint64_t launches;
} kcfg_t;

typedef struct kern {
    _Atomic(const void *) handle; /* the key, published after the rest */
    const char *name;             /* the registry's, readable for the process's life */
    uint64_t launches, gpu_ns, timed;
    unsigned ncfg;
    uint64_t cfg_dropped;
    kcfg_t cfg[MAX_CONFIGS];
} kern_t;

/* A stream's current segment: the launches since its last sync point. */
typedef struct seg {
    bool used;
    CUstream s;
    uint32_t tid;     /* per-thread default streams are one per thread */
    uint64_t hash;
    uint32_t len;
    uint32_t first[SEQ_NAMES];
    uint64_t gpu_end; /* where its last kernel ended on the GPU track */
} seg_t;

typedef struct seq {
    uint64_t hash; /* 0: empty */
    uint32_t len;
    uint64_t repeats;
    uint32_t first[SEQ_NAMES];
} seq_t;

typedef struct live {
    CUdeviceptr p; /* 0: empty */
    uint64_t bytes;
} live_t;

typedef struct freed {
    uint64_t size;
    uint64_t n;
} freed_t;

typedef struct counter {
    const char *feature, *name;
    uint64_t value;
} counter_t;

typedef struct pending {
    CUevent start, end;
    uint32_t kern, seg;
    uint64_t host_ns;
} pending_t;

typedef struct gpu_ev {
    uint32_t kern, seg;
    uint64_t ts, dur;
} gpu_ev_t;

typedef struct prof {
    char path[4096];  /* the files' prefix */
    char claim[4200]; /* PATH.owner while this process owns PATH */
    bool owner;
    char command[1024];
    unsigned graph_min;
    uint64_t t_base;

    acc_t copies[N_DIRS][N_BUCKETS];
    struct {
        uint64_t count, bytes, ns, failed, failed_ns;
        uint64_t frees, free_bytes, free_ns, frees_unknown;
        uint64_t live, peak, churn, untracked;
    } mem;
    live_t live[MAX_LIVE];
    unsigned nlive;
    freed_t freed[FREED_SLOTS];

    kern_t kern[MAX_KERNELS + 1];
    _Atomic unsigned nkern;
    uint64_t launches;

    seg_t seg[MAX_STREAMS];
    uint16_t seg_used[MAX_STREAMS];
    unsigned nseg_used;
    uint64_t seg_dropped;
    seq_t seq[MAX_SEQS];
    unsigned nseq;
    uint64_t segments, singles, seq_dropped;

    counter_t counters[MAX_COUNTERS];
    unsigned ncounters;

    /* kernel timing */
    bool ktiming, kavailable;
    const char *knote;
    pending_t ring[RING];
    uint64_t ring_head, ring_tail; /* guarded by lock; head advanced by the collector */
    CUevent evfree[MAX_EVENTS];
    unsigned nevfree, nevents;
    uint64_t timed, untimed;
    gpu_ev_t gpu[GPU_LIMIT];
    unsigned ngpu;
    uint64_t gpu_dropped;

    /* scratch for the writer: no allocation once writing starts */
    uint32_t idx[MAX_KERNELS + MAX_SEQS + GA_N_ENTRIES];
    uint64_t key[MAX_KERNELS + MAX_SEQS + GA_N_ENTRIES];
    uint64_t calls[GA_N_ENTRIES], ns[GA_N_ENTRIES];
    char text[TEXT_CAP];
    size_t text_len;
} prof_t;

static prof_t *P;
static uint64_t my_pid; /* getpid() once per write, not per trace event */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool written;
static _Atomic bool collecting;
static _Atomic unsigned gen = 1; /* bumped on init and in a fork child: stale TLS */

static struct {
    __typeof__(&cuEventCreate) create;
    __typeof__(&cuEventRecord) record;
    __typeof__(&cuEventQuery) query;
    __typeof__(&cuEventSynchronize) sync;
    __typeof__(&cuEventElapsedTime) elapsed;
} ev;

/* initial-exec: a plain offset from the thread pointer, no __tls_get_addr call
 * on the hot path (the library is loaded at startup by LD_PRELOAD). */
#define GA_TLS __thread __attribute__((tls_model("initial-exec")))
static GA_TLS uint32_t tl_tid;
static GA_TLS unsigned tl_tid_gen;
static GA_TLS CUevent tl_start;
static GA_TLS CUstream tl_start_stream;
static GA_TLS unsigned tl_start_gen;

static uint32_t thread_id(void)
{
    unsigned g = atomic_load_explicit(&gen, memory_order_relaxed);
    if (GA_UNLIKELY(tl_tid_gen != g)) {
        tl_tid = (uint32_t)syscall(SYS_gettid);
        tl_tid_gen = g;
    }
    return tl_tid;
}

static uint64_t mix(uint64_t h, uint64_t x)
{
    h ^= x;
    h *= 0x100000001b3ull;
    return h ^ (h >> 29);
}

static unsigned hash_ptr(const void *p, unsigned mask)
{
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;
    return (unsigned)(x >> 40) & mask;
}

/* ---- copies and allocations ------------------------------------------------------ */
static unsigned bucket_of(size_t bytes)
{
    unsigned b = 0;
    while (b < N_BUCKETS - 1 && bytes > bucket_max[b])
        b++;
    return b;
}

void ga_profile_copy(ga_copy_dir_t dir, size_t bytes, uint64_t ns)
{
    if (!ga_profiling || (unsigned)dir >= N_DIRS)
        return;
    pthread_mutex_lock(&lock);
    acc_t *a = &P->copies[dir][bucket_of(bytes)];
    a->count++;
    a->bytes += bytes;
    a->ns += ns;
    pthread_mutex_unlock(&lock);
}

/* Linear probing with backward-shift deletion: no tombstones, so a program
 * that allocates and frees forever never fills the table. */
static live_t *live_slot(CUdeviceptr p)
{
    unsigned mask = MAX_LIVE - 1, i = hash_ptr((const void *)(uintptr_t)p, mask);
    while (P->live[i].p && P->live[i].p != p)
        i = (i + 1) & mask;
    return &P->live[i];
}

static void live_add(CUdeviceptr p, uint64_t bytes)
{
    if (P->nlive >= MAX_LIVE / 2) {
        P->mem.untracked++;
        return;
    }
    live_t *l = live_slot(p);
    if (!l->p)
        P->nlive++;
    l->p = p;
    l->bytes = bytes;
}

static uint64_t live_remove(CUdeviceptr p)
{
    unsigned mask = MAX_LIVE - 1;
    live_t *l = live_slot(p);
    if (!l->p)
        return 0;
    uint64_t bytes = l->bytes;
    unsigned i = (unsigned)(l - P->live), j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!P->live[j].p)
            break;
        unsigned home = hash_ptr((const void *)(uintptr_t)P->live[j].p, mask);
        /* move j back into the hole at i unless its home lies in (i, j] */
        if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
            P->live[i] = P->live[j];
            i = j;
        }
    }
    P->live[i].p = 0;
    P->nlive--;
    return bytes;
}

static freed_t *freed_slot(uint64_t size)
{
    return &P->freed[hash_ptr((const void *)(uintptr_t)size, FREED_SLOTS - 1)];
}

void ga_profile_alloc(CUdeviceptr p, size_t bytes, uint64_t ns, CUresult r)
{
    if (!ga_profiling)
        return;
    pthread_mutex_lock(&lock);
    if (r != CUDA_SUCCESS) {
        P->mem.failed++;
        P->mem.failed_ns += ns;
    } else {
        P->mem.count++;
        P->mem.bytes += bytes;
        P->mem.ns += ns;
        P->mem.live += bytes;
        if (P->mem.live > P->mem.peak)
            P->mem.peak = P->mem.live;
        freed_t *f = freed_slot(bytes);
        if (f->size == bytes && f->n) { /* freed earlier, asked for again */
            f->n--;
            P->mem.churn++;
        }
        live_add(p, bytes);
    }
    pthread_mutex_unlock(&lock);
}

void ga_profile_free(CUdeviceptr p, size_t bytes, uint64_t ns)
{
    if (!ga_profiling)
        return;
    pthread_mutex_lock(&lock);
    uint64_t known = live_remove(p);
    if (!bytes)
        bytes = known;
    P->mem.frees++;
    P->mem.free_ns += ns;
    P->mem.free_bytes += bytes;
    if (!bytes)
        P->mem.frees_unknown++;
    P->mem.live = P->mem.live > bytes ? P->mem.live - bytes : 0;
    if (bytes) {
        freed_t *f = freed_slot(bytes);
        if (f->size != bytes) { /* evict: churn is an estimate over recent sizes */
            f->size = bytes;
            f->n = 0;
        }
        f->n++;
    }
    pthread_mutex_unlock(&lock);
}

void ga_profile_counter(const char *feature, const char *name, uint64_t delta)
{
    if (!ga_profiling)
        return;
    pthread_mutex_lock(&lock);
    unsigned i = 0;
    while (i < P->ncounters &&
           (strcmp(P->counters[i].feature, feature) || strcmp(P->counters[i].name, name)))
        i++;
    if (i == P->ncounters && i < MAX_COUNTERS)
        P->counters[P->ncounters++] = (counter_t){feature, name, 0};
    if (i < MAX_COUNTERS)
        P->counters[i].value += delta;
    pthread_mutex_unlock(&lock);
}

/* ---- kernels, streams and sequences ---------------------------------------------- */

/* Lock-free when the kernel is known; the first launch of a kernel asks the
 * registry (which may call the driver) before taking the lock to insert it. */
static unsigned kernel_index(const ga_rt_t *rt, CUfunction f)
{
    unsigned mask = MAX_KERNELS - 1, i = hash_ptr(f, mask);
    const void *h;
    while ((h = atomic_load_explicit(&P->kern[i].handle, memory_order_acquire)) != NULL) {
        if (h == f)
            return i;
        i = (i + 1) & mask;
    }
    if (atomic_load_explicit(&P->nkern, memory_order_relaxed) >= MAX_KERNELS * 3 / 4)
        return MAX_KERNELS;
    const ga_kernel_t *k = ga_kernel_info(rt, f);
    const char *name = k && k->name ? k->name : "?";
    pthread_mutex_lock(&lock);
    for (i = hash_ptr(f, mask); (h = atomic_load_explicit(&P->kern[i].handle,
                                                          memory_order_relaxed)) != NULL;
         i = (i + 1) & mask)
        if (h == f)
            break;
    if (!h) {
        P->kern[i].name = name;
        atomic_store_explicit(&P->kern[i].handle, (const void *)f, memory_order_release);
        atomic_fetch_add_explicit(&P->nkern, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&lock);
    return i;
}

static void add_config(kern_t *k, const unsigned grid[3], const unsigned block[3],
                       unsigned shmem)
{
    for (unsigned i = 0; i < k->ncfg; i++) {
        kcfg_t *c = &k->cfg[i];
        if (!memcmp(c->grid, grid, sizeof c->grid) && !memcmp(c->block, block, sizeof c->block) &&
            c->shmem == shmem) {
            c->launches++;
            return;
        }
    }
    if (k->ncfg == MAX_CONFIGS) {
        k->cfg_dropped++;
        return;
    }
    kcfg_t *c = &k->cfg[k->ncfg++];
    memcpy(c->grid, grid, sizeof c->grid);
    memcpy(c->block, block, sizeof c->block);
    c->shmem = shmem;
    c->launches = 1;
}

static bool is_per_thread(CUstream s, bool per_thread)
{
    return s == CU_STREAM_PER_THREAD || (per_thread && s == NULL);
}

/* The segment of stream `s` (under lock), or NULL when the table is full. */
static seg_t *seg_get(CUstream s, bool per_thread)
{
    uint32_t tid = 0;
    if (is_per_thread(s, per_thread)) {
        s = CU_STREAM_PER_THREAD;
        tid = thread_id();
    } else if (s == CU_STREAM_LEGACY) {
        s = NULL;
    }
    unsigned mask = MAX_STREAMS - 1, i = (hash_ptr(s, mask) + tid) & mask;
    for (unsigned n = 0; n < MAX_STREAMS; n++, i = (i + 1) & mask) {
        seg_t *g = &P->seg[i];
        if (g->used && g->s == s && g->tid == tid)
            return g;
        if (!g->used) {
            if (P->nseg_used >= MAX_STREAMS * 3 / 4)
                break;
            *g = (seg_t){.used = true, .s = s, .tid = tid, .hash = 0xcbf29ce484222325ull};
            P->seg_used[P->nseg_used++] = (uint16_t)i;
            return g;
        }
    }
    P->seg_dropped++;
    return NULL;
}

static void seg_close(seg_t *g)
{
    if (!g->len)
        return;
    P->segments++;
    if (g->len == 1) {
        P->singles++;
    } else {
        uint64_t h = mix(g->hash, g->len) | 1; /* never 0: 0 marks an empty slot */
        unsigned mask = MAX_SEQS - 1, i = (unsigned)(h >> 17) & mask;
        while (P->seq[i].hash && P->seq[i].hash != h)
            i = (i + 1) & mask;
        seq_t *q = &P->seq[i];
        if (q->hash) {
            q->repeats++;
        } else if (P->nseq < MAX_SEQS * 3 / 4) {
            q->len = g->len;
            q->repeats = 1;
            memcpy(q->first, g->first, sizeof q->first);
            q->hash = h;
            P->nseq++;
        } else {
            P->seq_dropped++;
        }
    }
    g->hash = 0xcbf29ce484222325ull;
    g->len = 0;
}

static void seg_add(seg_t *g, unsigned k, const unsigned grid[3], const unsigned block[3],
                    unsigned shmem)
{
    uint64_t h = mix(g->hash, k);
    for (int d = 0; d < 3; d++)
        h = mix(mix(h, grid[d]), block[d]);
    g->hash = mix(h, shmem);
    if (g->len < SEQ_NAMES)
        g->first[g->len] = k;
    if (++g->len == MAX_SEG)
        seg_close(g);
}

void ga_profile_sync_point(CUstream s)
{
    if (!ga_profiling)
        return;
    pthread_mutex_lock(&lock);
    if (s == CU_STREAM_LEGACY)
        s = NULL;
    uint32_t tid = thread_id();
    for (unsigned i = 0; i < P->nseg_used; i++) {
        seg_t *g = &P->seg[P->seg_used[i]];
        /* The legacy stream waits for this thread's per-thread stream too. */
        bool hit = s == GA_NOSTREAM || g->s == s ||
                   (s == NULL && g->s == CU_STREAM_PER_THREAD && g->tid == tid);
        if (hit)
            seg_close(g);
    }
    pthread_mutex_unlock(&lock);
}

/* ---- kernel timing (GPUACCEL_PROFILE_KERNELS=1) ---------------------------------- */
static CUevent take_event(void)
{
    CUevent e = NULL;
    pthread_mutex_lock(&lock);
    if (P->nevfree)
        e = P->evfree[--P->nevfree];
    bool create = !e && P->nevents < MAX_EVENTS;
    if (create)
        P->nevents++; /* reserve before creating outside the lock */
    pthread_mutex_unlock(&lock);
    if (create && ev.create(&e, CU_EVENT_DEFAULT) != CUDA_SUCCESS) {
        e = NULL;
        pthread_mutex_lock(&lock);
        P->nevents--;
        pthread_mutex_unlock(&lock);
    }
    return e;
}

static void give_event(CUevent e) /* under lock */
{
    if (e && P->nevfree < MAX_EVENTS)
        P->evfree[P->nevfree++] = e;
}

static void account_kernel(const pending_t *pd, uint64_t ns) /* under lock */
{
    kern_t *k = &P->kern[pd->kern];
    k->gpu_ns += ns;
    k->timed++;
    P->timed++;
    seg_t *g = &P->seg[pd->seg];
    /* A kernel starts no earlier than its launch, nor before the previous
     * kernel on its stream ended: the GPU track is placed from that. */
    uint64_t ts = pd->host_ns > g->gpu_end ? pd->host_ns : g->gpu_end;
    g->gpu_end = ts + ns;
    if (P->ngpu < GPU_LIMIT)
        P->gpu[P->ngpu++] = (gpu_ev_t){pd->kern, pd->seg, ts, ns};
    else
        P->gpu_dropped++;
}

/* Harvest up to `max` finished launches, oldest first. One collector at a
 * time; the driver is called outside the lock. `wait` (at exit) blocks on
 * each event instead of polling. */
static void collect(unsigned max, bool wait)
{
    if (!ga_own_calls_enter()) /* event queries are unsafe during capture: later */
        return;
    if (atomic_exchange(&collecting, true)) {
        ga_own_calls_leave();
        return;
    }
    for (unsigned n = 0; n < max; n++) {
        pthread_mutex_lock(&lock);
        bool empty = P->ring_head == P->ring_tail;
        pending_t pd = P->ring[P->ring_head % RING];
        pthread_mutex_unlock(&lock);
        if (empty)
            break;
        CUresult r = wait ? ev.sync(pd.end) : ev.query(pd.end);
        if (r == CUDA_ERROR_NOT_READY)
            break;
        float ms = 0;
        bool ok = r == CUDA_SUCCESS && ev.elapsed(&ms, pd.start, pd.end) == CUDA_SUCCESS;
        pthread_mutex_lock(&lock);
        P->ring_head++;
        if (ok)
            account_kernel(&pd, (uint64_t)((double)ms * 1e6 + 0.5));
        else
            P->untimed++;
        give_event(pd.start);
        give_event(pd.end);
        pthread_mutex_unlock(&lock);
    }
    atomic_store(&collecting, false);
    ga_own_calls_leave();
}

static CUstream record_stream(CUstream s, bool per_thread)
{
    return is_per_thread(s, per_thread) ? CU_STREAM_PER_THREAD : s;
}

void ga_profile_kernel_begin(const ga_rt_t *rt, CUstream s, bool per_thread)
{
    if (!ga_profiling || !P->ktiming)
        return;
    unsigned g = atomic_load_explicit(&gen, memory_order_relaxed);
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
    collect(2, false);
    CUevent e = tl_start ? tl_start : take_event();
    tl_start = e;
    tl_start_stream = GA_NOSTREAM;
    if (e && ev.record(e, hs) == CUDA_SUCCESS)
        tl_start_stream = hs;
}

/* After the launch: the end event, and the pair queued for collection. */
static void kernel_end(unsigned k, seg_t *g, CUstream s, bool per_thread)
{
    CUstream hs = record_stream(s, per_thread);
    if (tl_start_gen != atomic_load_explicit(&gen, memory_order_relaxed) || !tl_start ||
        tl_start_stream != hs) {
        pthread_mutex_lock(&lock);
        P->untimed++;
        pthread_mutex_unlock(&lock);
        return;
    }
    uint64_t host = ga_now_ns();
    CUevent end = take_event();
    bool ok = end && ev.record(end, hs) == CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    if (ok && g && P->ring_tail - P->ring_head < RING) {
        P->ring[P->ring_tail++ % RING] =
            (pending_t){tl_start, end, k, (uint32_t)(g - P->seg), host};
        tl_start = NULL;
    } else {
        give_event(end);
        P->untimed++;
    }
    pthread_mutex_unlock(&lock);
    tl_start_stream = GA_NOSTREAM;
}

void ga_profile_launch(const ga_rt_t *rt, CUfunction f, const unsigned grid[3],
                       const unsigned block[3], unsigned shmem, CUstream s, bool per_thread)
{
    if (!ga_profiling)
        return;
    unsigned k = kernel_index(rt, f);
    pthread_mutex_lock(&lock);
    P->launches++;
    kern_t *kr = &P->kern[k];
    kr->launches++;
    if (k < MAX_KERNELS)
        add_config(kr, grid, block, shmem);
    seg_t *g = seg_get(s, per_thread);
    if (g)
        seg_add(g, k, grid, block, shmem);
    pthread_mutex_unlock(&lock);
    if (P->ktiming)
        kernel_end(k, g, s, per_thread);
}

/* ---- driver-call trace events ---------------------------------------------------- */
typedef struct span_ev {
    uint64_t t0, t1;
    uint32_t id;
} span_ev_t;

typedef struct span_block {
    struct span_block *next; /* push-only list */
    uint32_t tid;
    unsigned gen;
    _Atomic uint32_t n;
    span_ev_t ev[SPAN_BLOCK];
} span_block_t;

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
    b->tid = thread_id();
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
    unsigned g = atomic_load_explicit(&gen, memory_order_relaxed);
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

/* ---- the writer: buffered, allocation-free, usable from a signal handler --------- */
typedef struct out {
    int fd;       /* >= 0: flushed to fd; < 0: into mem only */
    char *mem;
    size_t cap, len;
    bool failed;  /* a write failed, or mem overflowed */
} out_t;

static char stage[1 << 16];

static void o_flush(out_t *o)
{
    size_t off = 0;
    while (o->fd >= 0 && off < o->len) {
        ssize_t w = write(o->fd, o->mem + off, o->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            o->failed = true;
            break;
        }
        off += (size_t)w;
    }
    if (o->fd >= 0)
        o->len = 0;
}

static void o_put(out_t *o, const char *s, size_t n)
{
    while (n) {
        if (o->len == o->cap) {
            if (o->fd < 0) {
                o->failed = true;
                return;
            }
            o_flush(o);
        }
        size_t k = o->cap - o->len < n ? o->cap - o->len : n;
        memcpy(o->mem + o->len, s, k);
        o->len += k;
        s += k;
        n -= k;
    }
}

static void o_s(out_t *o, const char *s) { o_put(o, s, strlen(s)); }

static void o_u(out_t *o, uint64_t v)
{
    char b[24];
    int i = sizeof b;
    do
        b[--i] = (char)('0' + v % 10);
    while (v /= 10);
    o_put(o, b + i, sizeof b - (size_t)i);
}

static void o_hex(out_t *o, uint64_t v)
{
    char b[18];
    int i = sizeof b;
    do
        b[--i] = "0123456789abcdef"[v & 15];
    while (v >>= 4);
    b[--i] = 'x';
    b[--i] = '0';
    o_put(o, b + i, sizeof b - (size_t)i);
}

/* v / unit with `dec` decimals, rounded. */
static void o_fixed(out_t *o, uint64_t v, uint64_t unit, unsigned dec)
{
    uint64_t p = 1;
    for (unsigned i = 0; i < dec; i++)
        p *= 10;
    uint64_t scaled = v > UINT64_MAX / p ? v / unit * p : (v * p + unit / 2) / unit;
    o_u(o, scaled / p);
    if (!dec)
        return;
    o_s(o, ".");
    char b[20];
    uint64_t f = scaled % p;
    for (unsigned i = dec; i-- > 0; f /= 10)
        b[i] = (char)('0' + f % 10);
    o_put(o, b, dec);
}

/* 412,000 */
static void o_count(out_t *o, uint64_t v)
{
    char b[32];
    int i = sizeof b, digits = 0;
    do {
        if (digits && digits % 3 == 0)
            b[--i] = ',';
        b[--i] = (char)('0' + v % 10);
        digits++;
    } while (v /= 10);
    o_put(o, b + i, sizeof b - (size_t)i);
}

static void o_dur(out_t *o, uint64_t ns)
{
    if (ns < 1000)
        o_u(o, ns), o_s(o, " ns");
    else if (ns < 1000000)
        o_fixed(o, ns, 1000, 1), o_s(o, " us");
    else if (ns < 1000000000)
        o_fixed(o, ns, 1000000, 1), o_s(o, " ms");
    else
        o_fixed(o, ns, 1000000000, 2), o_s(o, " s");
}

static void o_bytes(out_t *o, uint64_t b)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    unsigned u = 0;
    uint64_t div = 1;
    while (u < 4 && b >= div * 1024)
        div *= 1024, u++;
    o_fixed(o, b, div, u && b % div ? 1 : 0);
    o_s(o, " ");
    o_s(o, unit[u]);
}

static void o_js(out_t *o, const char *s)
{
    o_s(o, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            o_put(o, e, 2);
        } else if (c == '\n') {
            o_s(o, "\\n");
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', "0123456789abcdef"[c >> 4],
                         "0123456789abcdef"[c & 15]};
            o_put(o, e, 6);
        } else {
            o_put(o, (const char *)&c, 1);
        }
    }
    o_s(o, "\"");
}

/* Key "name": for JSON objects; `first` omits the comma. */
static void o_key(out_t *o, const char *k, bool first)
{
    if (!first)
        o_s(o, ",");
    o_js(o, k);
    o_s(o, ":");
}

static void o_ku(out_t *o, const char *k, uint64_t v)
{
    o_key(o, k, false);
    o_u(o, v);
}

/* A table cell: what `fill` writes, padded to `width` (right-aligned if `right`). */
typedef struct cell {
    char b[96];
    out_t o;
} cell_t;

static out_t *cell(cell_t *c)
{
    c->o = (out_t){-1, c->b, sizeof c->b, 0, false};
    return &c->o;
}

static void o_cell(out_t *o, cell_t *c, unsigned width, bool right)
{
    unsigned n = (unsigned)c->o.len;
    if (right)
        for (unsigned i = n; i < width; i++)
            o_s(o, " ");
    o_put(o, c->b, n);
    if (!right)
        for (unsigned i = n; i < width; i++)
            o_s(o, " ");
}

/* A kernel name for a person: mangled names can run to hundreds of bytes. */
static void o_name(out_t *o, const char *name, size_t max)
{
    size_t n = strlen(name);
    if (n <= max) {
        o_put(o, name, n);
    } else {
        o_put(o, name, max - 3);
        o_s(o, "...");
    }
}

/* ---- sorting without allocation (shell sort on index arrays) --------------------- */
static void sort_desc(uint32_t *idx, const uint64_t *key, unsigned n)
{
    static const unsigned gaps[] = {701, 301, 132, 57, 23, 10, 4, 1};
    for (unsigned g = 0; g < GA_ARRAY_LEN(gaps); g++)
        for (unsigned i = gaps[g]; i < n; i++) {
            uint32_t t = idx[i];
            unsigned j = i;
            for (; j >= gaps[g] && key[idx[j - gaps[g]]] < key[t]; j -= gaps[g])
                idx[j] = idx[j - gaps[g]];
            idx[j] = t;
        }
}

/* ---- the analysis ---------------------------------------------------------------- */
typedef enum { V_HELPS, V_NO, V_UNKNOWN } verdict_t;
static const char *const verdict_name[] = {"helps", "no", "unknown"};

typedef struct opp {
    const char *feature;
    verdict_t verdict;
    uint64_t saving_ns;
    char why[320];
} opp_t;

enum { N_OPPS = 5 };

typedef struct summary {
    uint64_t wall, small_n, small_ns, pairs, pair_ns, launch_calls, launch_ns;
    uint64_t seq_nodes, seq_count, gpu_ns, timed;
} summary_t;

static bool worth(uint64_t saving, uint64_t wall)
{
    return saving >= 100000 && saving * 200 >= wall; /* 0.1 ms and 0.5% of the run */
}

static uint64_t per(uint64_t total, uint64_t n)
{
    return n ? total / n : 0;
}

static void summarize(summary_t *s)
{
    memset(s, 0, sizeof *s);
    s->wall = ga_now_ns() - P->t_base;
    s->small_n = P->copies[GA_COPY_DTOH][0].count;
    s->small_ns = P->copies[GA_COPY_DTOH][0].ns;
    s->pairs = P->mem.count < P->mem.frees ? P->mem.count : P->mem.frees;
    s->pair_ns = per(P->mem.ns, P->mem.count) + per(P->mem.free_ns, P->mem.frees);
    static const ga_id_t launch_ids[] = {GA_ID_cuLaunchKernel, GA_ID_cuLaunchKernel_ptsz,
                                         GA_ID_cuLaunchKernelEx, GA_ID_cuLaunchKernelEx_ptsz};
    for (size_t i = 0; i < GA_ARRAY_LEN(launch_ids); i++) {
        s->launch_calls += P->calls[launch_ids[i]];
        s->launch_ns += P->ns[launch_ids[i]];
    }
    for (unsigned i = 0; i < MAX_SEQS; i++) {
        const seq_t *q = &P->seq[i];
        /* Graphs replay from a sequence's third sighting (DESIGN.md). */
        if (q->hash && q->len >= P->graph_min && q->repeats >= 3) {
            s->seq_nodes += (uint64_t)q->len * (q->repeats - 2);
            s->seq_count++;
        }
    }
    for (unsigned i = 0; i <= MAX_KERNELS; i++) {
        s->gpu_ns += P->kern[i].gpu_ns;
        s->timed += P->kern[i].timed;
    }
}

/* The tail of a reason: what the feature would save, or why it is not worth it. */
static void o_gain(out_t *w, const opp_t *op, const char *would, bool cheap)
{
    if (op->verdict == V_HELPS)
        o_s(w, ": "), o_s(w, would), o_s(w, " ~"), o_dur(w, op->saving_ns);
    else if (cheap)
        o_s(w, ": already cheap");
    else
        o_s(w, ": too little to gain (~"), o_dur(w, op->saving_ns), o_s(w, ")");
}

static void opp_coalesce(const summary_t *s, opp_t *op, out_t *w)
{
    uint64_t mean = per(s->small_ns, s->small_n);
    op->saving_ns = s->small_n * (mean > COALESCED_READ_NS ? mean - COALESCED_READ_NS : 0);
    if (!s->small_n) {
        op->verdict = V_NO;
        o_s(w, "no device-to-host reads of 256 bytes or less");
        return;
    }
    op->verdict = worth(op->saving_ns, s->wall) ? V_HELPS : V_NO;
    o_count(w, s->small_n), o_s(w, " small D2H reads took ~"), o_dur(w, s->small_ns);
    o_s(w, " (~"), o_dur(w, mean), o_s(w, " each)");
    o_gain(w, op, "coalescing could save", mean <= COALESCED_READ_NS);
}

static void opp_pool(const summary_t *s, opp_t *op, out_t *w)
{
    op->saving_ns = s->pairs * (s->pair_ns > POOLED_PAIR_NS ? s->pair_ns - POOLED_PAIR_NS : 0);
    if (!P->mem.count) {
        op->verdict = V_NO;
        o_s(w, "no cuMemAlloc calls");
        return;
    }
    op->verdict = worth(op->saving_ns, s->wall) ? V_HELPS : V_NO;
    o_count(w, P->mem.count), o_s(w, " allocations, "), o_count(w, P->mem.frees);
    o_s(w, " frees, ~"), o_dur(w, s->pair_ns), o_s(w, " a pair, churn ");
    o_count(w, P->mem.churn);
    if (!P->mem.frees) {
        op->verdict = V_NO;
        o_s(w, ": nothing is freed, so nothing would be reused");
        return;
    }
    o_gain(w, op, "a block cache could save", s->pair_ns <= POOLED_PAIR_NS);
}

static void opp_graphs(const summary_t *s, opp_t *op, out_t *w)
{
    uint64_t mean_launch = per(s->launch_ns, s->launch_calls);
    uint64_t node = s->launch_calls ? (mean_launch > LAUNCH_FLOOR_NS
                                           ? mean_launch - LAUNCH_FLOOR_NS : 0)
                                    : GRAPH_NODE_NS;
    if (node > GRAPH_NODE_NS)
        node = GRAPH_NODE_NS;
    op->saving_ns = s->seq_nodes * node;
    op->verdict = V_NO;
    uint64_t mean_gpu = per(s->gpu_ns, s->timed);
    if (!P->launches) {
        o_s(w, "no kernel launches");
    } else if (!s->seq_nodes) {
        o_s(w, "no launch sequence of "), o_u(w, P->graph_min);
        o_s(w, " or more kernels repeats 3 or more times between syncs");
    } else if (s->timed && mean_gpu > LONG_KERNEL_NS) {
        op->saving_ns = 0;
        o_s(w, "kernels run ~"), o_dur(w, mean_gpu);
        o_s(w, " on average: their launch cost is already hidden");
    } else {
        op->verdict = worth(op->saving_ns, s->wall) ? V_HELPS : V_NO;
        o_count(w, s->seq_nodes), o_s(w, " launches could replay in "), o_count(w, s->seq_count);
        o_s(w, " repeated sequences, ~");
        o_dur(w, s->launch_calls ? mean_launch : GRAPH_NODE_NS);
        o_s(w, s->launch_calls ? " a launch" : " saved a launch (not measured: assumed)");
        o_gain(w, op, "graphs could save", node == 0);
    }
}

static void opp_tune(opp_t *op, out_t *w)
{
    unsigned configs = 0, kernels = 0;
    for (unsigned i = 0; i < MAX_KERNELS; i++)
        if (P->kern[i].launches)
            kernels++, configs += P->kern[i].ncfg;
    op->verdict = P->launches ? V_UNKNOWN : V_NO;
    if (!P->launches) {
        o_s(w, "no kernel launches");
        return;
    }
    o_u(w, kernels), o_s(w, " kernels in "), o_u(w, configs);
    o_s(w, " launch configurations: only the tuner can tell (it proves each rewrite bit-identical)");
}

static void opp_kernels(const summary_t *s, opp_t *op, out_t *w)
{
    op->verdict = P->launches ? V_UNKNOWN : V_NO;
    if (!P->launches) {
        o_s(w, "no kernel launches");
        return;
    }
    unsigned best = 0;
    for (unsigned i = 1; i <= MAX_KERNELS; i++) {
        const kern_t *a = &P->kern[i], *b = &P->kern[best];
        if (s->timed ? a->gpu_ns > b->gpu_ns : a->launches > b->launches)
            best = i;
    }
    o_s(w, "helps only kernels with a replacement; busiest: ");
    o_name(w, P->kern[best].name ? P->kern[best].name : "?", 60);
    if (s->timed)
        o_s(w, " ("), o_dur(w, P->kern[best].gpu_ns), o_s(w, " on the GPU)");
    else
        o_s(w, " ("), o_count(w, P->kern[best].launches), o_s(w, " launches)");
}

static void analyze(const summary_t *s, opp_t ops[N_OPPS])
{
    static const char *const names[N_OPPS] = {"coalesce", "pool", "graphs", "tune", "kernels"};
    for (unsigned i = 0; i < N_OPPS; i++) {
        memset(&ops[i], 0, sizeof ops[i]);
        ops[i].feature = names[i];
        out_t w = {-1, ops[i].why, sizeof ops[i].why - 1, 0, false};
        switch (i) {
        case 0: opp_coalesce(s, &ops[i], &w); break;
        case 1: opp_pool(s, &ops[i], &w); break;
        case 2: opp_graphs(s, &ops[i], &w); break;
        case 3: opp_tune(&ops[i], &w); break;
        default: opp_kernels(s, &ops[i], &w); break;
        }
        ops[i].why[w.len] = '\0';
    }
}

/* ---- FILE.txt -------------------------------------------------------------------- */
static unsigned sorted_entries(void)
{
    unsigned n = 0;
    for (unsigned id = 0; id < GA_N_ENTRIES; id++)
        if (P->calls[id]) {
            P->idx[n++] = id;
            P->key[id] = P->ns[id] * 4096 + (P->calls[id] < 4096 ? P->calls[id] : 4095);
        }
    sort_desc(P->idx, P->key, n);
    return n;
}

static unsigned sorted_kernels(bool by_gpu)
{
    unsigned n = 0;
    for (unsigned i = 0; i <= MAX_KERNELS; i++)
        if (P->kern[i].launches) {
            P->idx[n++] = i;
            P->key[i] = by_gpu ? P->kern[i].gpu_ns : P->kern[i].launches;
        }
    sort_desc(P->idx, P->key, n);
    return n;
}

static unsigned sorted_seqs(void) /* repeated sequences, by launches covered */
{
    unsigned n = 0;
    for (unsigned i = 0; i < MAX_SEQS; i++)
        if (P->seq[i].hash && P->seq[i].repeats >= 2) {
            P->idx[n++] = i;
            P->key[i] = P->seq[i].len * P->seq[i].repeats;
        }
    sort_desc(P->idx, P->key, n);
    return n;
}

static const char *kname(uint32_t k)
{
    return k == MAX_KERNELS ? "(other kernels)" : P->kern[k].name ? P->kern[k].name : "?";
}

static void text_opps(out_t *o, const opp_t ops[N_OPPS])
{
    static const char *const label[] = {"would help", "no", "unknown"};
    o_s(o, "\nOpportunities (estimates from the measured counts)\n");
    for (unsigned i = 0; i < N_OPPS; i++) {
        cell_t c;
        o_s(o, "  ");
        o_s(cell(&c), ops[i].feature), o_cell(o, &c, 10, false);
        o_s(cell(&c), label[ops[i].verdict]), o_cell(o, &c, 12, false);
        out_t *w = cell(&c);
        if (ops[i].verdict == V_HELPS)
            o_s(w, "~"), o_dur(w, ops[i].saving_ns);
        else
            o_s(w, "-");
        o_cell(o, &c, 10, false);
        o_s(o, ops[i].why), o_s(o, "\n");
    }
}

static void text_entries(out_t *o)
{
    unsigned n = sorted_entries();
    o_s(o, "\nDriver calls (time inside the call, busiest first)\n");
    o_s(o, "  entry point                           calls        time        mean\n");
    for (unsigned i = 0; i < n && i < 25; i++) {
        unsigned id = P->idx[i];
        cell_t c;
        o_s(o, "  ");
        o_s(cell(&c), ga_entries[id].name), o_cell(o, &c, 32, false);
        o_count(cell(&c), P->calls[id]), o_cell(o, &c, 11, true);
        o_dur(cell(&c), P->ns[id]), o_cell(o, &c, 12, true);
        o_dur(cell(&c), per(P->ns[id], P->calls[id])), o_cell(o, &c, 12, true);
        o_s(o, "\n");
    }
    if (n > 25)
        o_s(o, "  ... "), o_u(o, n - 25), o_s(o, " more in the JSON\n");
    if (!n)
        o_s(o, "  none\n");
}

static void text_copies(out_t *o)
{
    o_s(o, "\nCopies\n  direction  size            count        bytes        time        mean\n");
    bool any = false;
    for (unsigned d = 0; d < N_DIRS; d++)
        for (unsigned b = 0; b < N_BUCKETS; b++) {
            const acc_t *a = &P->copies[d][b];
            if (!a->count)
                continue;
            any = true;
            cell_t c;
            o_s(o, "  ");
            o_s(cell(&c), dir_name[d]), o_cell(o, &c, 11, false);
            o_s(cell(&c), bucket_name[b]), o_cell(o, &c, 10, false);
            o_count(cell(&c), a->count), o_cell(o, &c, 11, true);
            o_bytes(cell(&c), a->bytes), o_cell(o, &c, 13, true);
            o_dur(cell(&c), a->ns), o_cell(o, &c, 12, true);
            o_dur(cell(&c), per(a->ns, a->count)), o_cell(o, &c, 12, true);
            o_s(o, "\n");
        }
    if (!any)
        o_s(o, "  none\n");
    o_s(o, "  small device-to-host reads (<=256 B): ");
    o_count(o, P->copies[GA_COPY_DTOH][0].count);
    o_s(o, "\n");
}

static void text_mem(out_t *o)
{
    o_s(o, "\nAllocations\n  cuMemAlloc: "), o_count(o, P->mem.count), o_s(o, " (");
    o_bytes(o, P->mem.bytes), o_s(o, ", "), o_dur(o, P->mem.ns), o_s(o, ")");
    if (P->mem.failed)
        o_s(o, ", "), o_count(o, P->mem.failed), o_s(o, " failed");
    o_s(o, "\n  cuMemFree:  "), o_count(o, P->mem.frees), o_s(o, " (");
    o_bytes(o, P->mem.free_bytes), o_s(o, ", "), o_dur(o, P->mem.free_ns), o_s(o, ")");
    if (P->mem.frees_unknown)
        o_s(o, ", "), o_count(o, P->mem.frees_unknown), o_s(o, " of unknown size");
    o_s(o, "\n  peak live "), o_bytes(o, P->mem.peak), o_s(o, ", live at exit ");
    o_bytes(o, P->mem.live), o_s(o, ", churn "), o_count(o, P->mem.churn);
    o_s(o, " (a size freed and asked for again)\n");
}

static void text_kernels(out_t *o, const summary_t *s)
{
    unsigned n = sorted_kernels(s->timed != 0);
    o_s(o, "\nKernels ("), o_count(o, P->launches), o_s(o, " launches, ");
    o_u(o, n), o_s(o, s->timed ? " kernels; by GPU time)\n" : " kernels; by launches)\n");
    for (unsigned i = 0; i < n && i < 20; i++) {
        const kern_t *k = &P->kern[P->idx[i]];
        cell_t c;
        o_s(o, "  ");
        o_count(cell(&c), k->launches), o_cell(o, &c, 10, true);
        o_s(o, " launches");
        if (k->timed)
            o_s(o, "  "), o_dur(o, k->gpu_ns), o_s(o, " GPU, "), o_dur(o, per(k->gpu_ns, k->timed)),
                o_s(o, " mean");
        o_s(o, "  "), o_name(o, kname(P->idx[i]), 80), o_s(o, "\n");
        for (unsigned j = 0; j < k->ncfg && j < 3; j++) {
            const kcfg_t *g = &k->cfg[j];
            o_s(o, "      grid ("), o_u(o, g->grid[0]), o_s(o, ","), o_u(o, g->grid[1]);
            o_s(o, ","), o_u(o, g->grid[2]), o_s(o, ") block ("), o_u(o, g->block[0]);
            o_s(o, ","), o_u(o, g->block[1]), o_s(o, ","), o_u(o, g->block[2]);
            o_s(o, ") shmem "), o_u(o, g->shmem), o_s(o, ": "), o_count(o, g->launches);
            o_s(o, "\n");
        }
        if (k->ncfg > 3 || k->cfg_dropped)
            o_s(o, "      ... "), o_u(o, k->ncfg - (k->ncfg > 3 ? 3 : k->ncfg)),
                o_s(o, k->cfg_dropped ? " more configurations, and others not kept\n"
                                      : " more configurations\n");
    }
    if (n > 20)
        o_s(o, "  ... "), o_u(o, n - 20), o_s(o, " more in the JSON\n");
    if (!P->ktiming)
        o_s(o, "  GPU time: "), o_s(o, P->knote), o_s(o, "\n");
}

static void text_seqs(out_t *o)
{
    unsigned n = sorted_seqs();
    o_s(o, "\nRepeated launch sequences (same kernels and configurations on a stream between "
           "syncs)\n  segments ");
    o_count(o, P->segments), o_s(o, " ("), o_count(o, P->singles);
    o_s(o, " of one launch), distinct sequences "), o_count(o, P->nseq), o_s(o, "\n");
    if (n)
        o_s(o, "  length   repeats   launches  kernels\n");
    for (unsigned i = 0; i < n && i < 10; i++) {
        const seq_t *q = &P->seq[P->idx[i]];
        cell_t c;
        o_s(o, "  ");
        o_u(cell(&c), q->len), o_cell(o, &c, 6, true);
        o_count(cell(&c), q->repeats), o_cell(o, &c, 10, true);
        o_count(cell(&c), (uint64_t)q->len * q->repeats), o_cell(o, &c, 11, true);
        o_s(o, "  ");
        for (unsigned j = 0; j < SEQ_NAMES && j < q->len; j++)
            o_s(o, j ? ", " : ""), o_name(o, kname(q->first[j]), 24);
        o_s(o, q->len > SEQ_NAMES ? ", ...\n" : "\n");
    }
}

static void text_counters(out_t *o)
{
    if (!P->ncounters)
        return;
    o_s(o, "\nFeature counters\n");
    for (unsigned i = 0; i < P->ncounters; i++) {
        o_s(o, "  "), o_s(o, P->counters[i].feature), o_s(o, "."), o_s(o, P->counters[i].name);
        o_s(o, " "), o_count(o, P->counters[i].value), o_s(o, "\n");
    }
}

static void build_text(const summary_t *s, const opp_t ops[N_OPPS], bool from_signal)
{
    out_t o = {-1, P->text, TEXT_CAP - 64, 0, false};
    o_s(&o, "gpuaccel profile: pid "), o_u(&o, my_pid), o_s(&o, ", "), o_dur(&o, s->wall);
    o_s(&o, from_signal ? " profiled, stopped by a signal\n" : " profiled\n");
    o_s(&o, "command: "), o_s(&o, P->command), o_s(&o, "\n");
    text_opps(&o, ops);
    text_entries(&o);
    text_copies(&o);
    text_mem(&o);
    text_kernels(&o, s);
    text_seqs(&o);
    text_counters(&o);
    if (o.failed) {
        o.len = TEXT_CAP - 64;
        o.cap = TEXT_CAP - 1;
        o.failed = false;
        o_s(&o, "\n... report truncated\n");
    }
    P->text_len = o.len;
}

/* ---- FILE.json (doc/profile-schema.json) ----------------------------------------- */
static void json_copies(out_t *o)
{
    o_key(o, "copies", false), o_s(o, "{");
    o_key(o, "small_dtoh_reads", true), o_u(o, P->copies[GA_COPY_DTOH][0].count);
    o_ku(o, "small_dtoh_ns", P->copies[GA_COPY_DTOH][0].ns);
    o_key(o, "buckets", false), o_s(o, "[");
    bool first = true;
    for (unsigned d = 0; d < N_DIRS; d++)
        for (unsigned b = 0; b < N_BUCKETS; b++) {
            const acc_t *a = &P->copies[d][b];
            if (!a->count)
                continue;
            o_s(o, first ? "{" : ",{"), first = false;
            o_key(o, "direction", true), o_js(o, dir_name[d]);
            o_key(o, "bucket", false), o_js(o, bucket_name[b]);
            o_ku(o, "max_bytes", bucket_max[b]);
            o_ku(o, "count", a->count), o_ku(o, "bytes", a->bytes), o_ku(o, "ns", a->ns);
            o_s(o, "}");
        }
    o_s(o, "]}");
}

static void json_mem(out_t *o)
{
    o_key(o, "allocations", false), o_s(o, "{");
    o_key(o, "count", true), o_u(o, P->mem.count);
    o_ku(o, "bytes", P->mem.bytes), o_ku(o, "ns", P->mem.ns);
    o_ku(o, "failed", P->mem.failed), o_ku(o, "frees", P->mem.frees);
    o_ku(o, "free_bytes", P->mem.free_bytes), o_ku(o, "free_ns", P->mem.free_ns);
    o_ku(o, "frees_unknown_size", P->mem.frees_unknown);
    o_ku(o, "live_bytes", P->mem.live), o_ku(o, "peak_live_bytes", P->mem.peak);
    o_ku(o, "churn", P->mem.churn), o_s(o, "}");
}

static void json_dims(out_t *o, const char *k, const unsigned d[3])
{
    o_key(o, k, false), o_s(o, "["), o_u(o, d[0]), o_s(o, ","), o_u(o, d[1]), o_s(o, ",");
    o_u(o, d[2]), o_s(o, "]");
}

static void json_kernels(out_t *o, const summary_t *s)
{
    unsigned n = sorted_kernels(s->timed != 0);
    o_key(o, "kernels", false), o_s(o, "{");
    o_key(o, "distinct", true), o_u(o, n);
    o_ku(o, "launches", P->launches);
    o_ku(o, "overflow_launches", P->kern[MAX_KERNELS].launches);
    o_key(o, "list", false), o_s(o, "[");
    for (unsigned i = 0; i < n && i < LIST_JSON; i++) {
        const kern_t *k = &P->kern[P->idx[i]];
        o_s(o, i ? ",{" : "{");
        o_key(o, "name", true), o_js(o, kname(P->idx[i]));
        o_ku(o, "launches", k->launches), o_ku(o, "gpu_ns", k->gpu_ns);
        o_ku(o, "timed_launches", k->timed);
        o_key(o, "configs", false), o_s(o, "[");
        for (unsigned j = 0; j < k->ncfg; j++) {
            o_s(o, j ? ",{" : "{");
            o_key(o, "shmem", true), o_u(o, k->cfg[j].shmem);
            json_dims(o, "grid", k->cfg[j].grid);
            json_dims(o, "block", k->cfg[j].block);
            o_ku(o, "launches", k->cfg[j].launches), o_s(o, "}");
        }
        o_s(o, "]"), o_ku(o, "configs_dropped", k->cfg_dropped), o_s(o, "}");
    }
    o_s(o, "]}");
}

static void json_seqs(out_t *o)
{
    unsigned n = sorted_seqs();
    o_key(o, "sequences", false), o_s(o, "{");
    o_key(o, "segments", true), o_u(o, P->segments);
    o_ku(o, "single_launch_segments", P->singles);
    o_ku(o, "distinct", P->nseq), o_ku(o, "dropped", P->seq_dropped);
    o_ku(o, "graph_min", P->graph_min);
    o_key(o, "list", false), o_s(o, "[");
    for (unsigned i = 0; i < n && i < LIST_JSON; i++) {
        const seq_t *q = &P->seq[P->idx[i]];
        o_s(o, i ? ",{" : "{");
        o_key(o, "length", true), o_u(o, q->len);
        o_ku(o, "repeats", q->repeats), o_ku(o, "launches", (uint64_t)q->len * q->repeats);
        o_key(o, "kernels", false), o_s(o, "[");
        for (unsigned j = 0; j < SEQ_NAMES && j < q->len; j++)
            o_s(o, j ? "," : ""), o_js(o, kname(q->first[j]));
        o_s(o, "]}");
    }
    o_s(o, "]}");
}

static void json_body(out_t *o, const summary_t *s, const opp_t ops[N_OPPS], bool from_signal)
{
    o_s(o, "{"), o_key(o, "schema", true), o_js(o, "gpuaccel-profile/1");
    o_key(o, "library_version", false), o_js(o, PACKAGE_VERSION);
    o_ku(o, "pid", (uint64_t)getpid());
    o_key(o, "command", false), o_js(o, P->command);
    o_ku(o, "wall_ns", s->wall);
    o_key(o, "written_on", false), o_js(o, from_signal ? "signal" : "exit");
    o_key(o, "kernel_timing", false), o_s(o, "{");
    o_key(o, "enabled", true), o_s(o, P->ktiming ? "true" : "false");
    o_key(o, "note", false), o_js(o, P->knote);
    o_ku(o, "timed_launches", P->timed), o_ku(o, "untimed_launches", P->untimed), o_s(o, "}");
    o_key(o, "opportunities", false), o_s(o, "[");
    for (unsigned i = 0; i < N_OPPS; i++) {
        o_s(o, i ? ",{" : "{");
        o_key(o, "feature", true), o_js(o, ops[i].feature);
        o_key(o, "verdict", false), o_js(o, verdict_name[ops[i].verdict]);
        o_ku(o, "saving_ns", ops[i].saving_ns);
        o_key(o, "reason", false), o_js(o, ops[i].why), o_s(o, "}");
    }
    o_s(o, "]");
    unsigned n = sorted_entries();
    o_key(o, "entry_points", false), o_s(o, "[");
    for (unsigned i = 0; i < n; i++) {
        o_s(o, i ? ",{" : "{");
        o_key(o, "name", true), o_js(o, ga_entries[P->idx[i]].name);
        o_ku(o, "calls", P->calls[P->idx[i]]), o_ku(o, "ns", P->ns[P->idx[i]]), o_s(o, "}");
    }
    o_s(o, "]");
    json_copies(o);
    json_mem(o);
    json_kernels(o, s);
    json_seqs(o);
    o_key(o, "counters", false), o_s(o, "[");
    for (unsigned i = 0; i < P->ncounters; i++) {
        o_s(o, i ? ",{" : "{");
        o_key(o, "feature", true), o_js(o, P->counters[i].feature);
        o_key(o, "name", false), o_js(o, P->counters[i].name);
        o_ku(o, "value", P->counters[i].value), o_s(o, "}");
    }
    o_s(o, "]");
    o_key(o, "text", false), P->text[P->text_len] = '\0', o_js(o, P->text);
    o_s(o, "}\n");
}

/* ---- FILE.trace.json (Chrome trace-event format) --------------------------------- */
enum { GPU_TID_BASE = 1 << 30 };

static void trace_meta(out_t *o, const char *what, uint64_t tid, const char *prefix,
                       uint64_t num, bool hex)
{
    o_s(o, ",\n{\"name\":"), o_js(o, what), o_s(o, ",\"ph\":\"M\",\"ts\":0,\"pid\":");
    o_u(o, my_pid), o_s(o, ",\"tid\":"), o_u(o, tid);
    o_s(o, ",\"args\":{\"name\":\""), o_s(o, prefix);
    if (hex)
        o_hex(o, num);
    else
        o_u(o, num);
    o_s(o, "\"}}");
}

static void trace_x(out_t *o, const char *name, const char *cat, uint64_t tid, uint64_t t0,
                    uint64_t dur)
{
    o_s(o, ",\n{\"name\":"), o_js(o, name), o_s(o, ",\"cat\":\""), o_s(o, cat);
    o_s(o, "\",\"ph\":\"X\",\"ts\":"), o_fixed(o, t0, 1000, 3);
    o_s(o, ",\"dur\":"), o_fixed(o, dur, 1000, 3);
    o_s(o, ",\"pid\":"), o_u(o, my_pid), o_s(o, ",\"tid\":"), o_u(o, tid), o_s(o, "}");
}

static uint64_t since_base(uint64_t t)
{
    return t > P->t_base ? t - P->t_base : 0;
}

static uint64_t trace_host(out_t *o)
{
    unsigned g = atomic_load(&gen);
    uint64_t kept = 0;
    span_block_t *head = atomic_load(&span_head);
    for (span_block_t *b = head; b; b = b->next) {
        if (b->gen != g)
            continue;
        bool named = false; /* one thread_name per thread, not per block */
        for (span_block_t *a = head; a != b && !named; a = a->next)
            named = a->gen == g && a->tid == b->tid;
        if (!named)
            trace_meta(o, "thread_name", b->tid, "host thread ", b->tid, false);
        uint32_t n = atomic_load_explicit(&b->n, memory_order_acquire);
        for (uint32_t i = 0; i < n; i++) {
            const span_ev_t *e = &b->ev[i];
            trace_x(o, ga_entries[e->id].name, "driver", b->tid, since_base(e->t0),
                    e->t1 - e->t0);
        }
        kept += n;
    }
    return kept;
}

static void trace_gpu(out_t *o)
{
    for (unsigned i = 0; i < P->nseg_used && P->ngpu; i++) {
        unsigned si = P->seg_used[i];
        const seg_t *g = &P->seg[si];
        if (g->s == CU_STREAM_PER_THREAD)
            trace_meta(o, "thread_name", GPU_TID_BASE + si, "GPU per-thread stream of thread ",
                       g->tid, false);
        else
            trace_meta(o, "thread_name", GPU_TID_BASE + si, "GPU stream ",
                       (uint64_t)(uintptr_t)g->s, true);
    }
    for (unsigned i = 0; i < P->ngpu; i++) {
        const gpu_ev_t *e = &P->gpu[i];
        trace_x(o, kname(e->kern), "kernel", GPU_TID_BASE + e->seg, since_base(e->ts), e->dur);
    }
}

static void trace_body(out_t *o)
{
    uint64_t total = 0;
    for (unsigned id = 0; id < GA_N_ENTRIES; id++)
        total += P->calls[id];
    o_s(o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    o_s(o, "{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":"), o_u(o, my_pid);
    o_s(o, ",\"tid\":0,\"args\":{\"name\":"), o_js(o, P->command), o_s(o, "}}");
    uint64_t kept = trace_host(o);
    trace_gpu(o);
    o_s(o, "\n],\"otherData\":{");
    o_key(o, "tool", true), o_js(o, "gpuaccel " PACKAGE_VERSION);
    o_ku(o, "driver_calls", total), o_ku(o, "driver_events_kept", kept);
    o_ku(o, "driver_events_dropped", total > kept ? total - kept : 0);
    o_ku(o, "driver_event_limit", SPAN_LIMIT);
    o_ku(o, "kernel_events_kept", P->ngpu), o_ku(o, "kernel_events_dropped", P->gpu_dropped);
    o_ku(o, "kernel_event_limit", GPU_LIMIT);
    o_key(o, "note", false);
    o_js(o, "times in microseconds from the first intercepted call; only the first events up to "
            "each limit are kept. GPU tracks: each kernel starts at the later of its launch and "
            "the end of the previous kernel on its stream; durations are measured with events.");
    o_s(o, "}}\n");
}

/* ---- writing the files ----------------------------------------------------------- */
static bool write_file(const char *suffix, void (*body)(out_t *, const void *), const void *arg)
{
    char path[4200];
    size_t n = strlen(P->path), m = strlen(suffix);
    if (n + m >= sizeof path)
        return false;
    memcpy(path, P->path, n);
    memcpy(path + n, suffix, m + 1);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    out_t o = {fd, stage, sizeof stage, 0, false};
    body(&o, arg);
    o_flush(&o);
    return close(fd) == 0 && !o.failed;
}

typedef struct json_arg {
    const summary_t *s;
    const opp_t *ops;
    bool from_signal;
} json_arg_t;

static void txt_body(out_t *o, const void *arg)
{
    (void)arg;
    o_put(o, P->text, P->text_len);
}

static void json_cb(out_t *o, const void *arg)
{
    const json_arg_t *a = arg;
    json_body(o, a->s, a->ops, a->from_signal);
}

static void trace_cb(out_t *o, const void *arg)
{
    (void)arg;
    trace_body(o);
}

static bool write_all(bool from_signal)
{
    if (!ga_profiling || atomic_exchange(&written, true))
        return true;
    my_pid = (uint64_t)getpid();
    if (!from_signal && P->ktiming)
        collect(RING, true);
    /* A signal may have interrupted a thread holding the lock: never wait for
     * it there. The tables are fixed and published key-last, so reading them
     * mid-update yields at worst a count off by one. */
    bool locked = from_signal ? pthread_mutex_trylock(&lock) == 0
                              : pthread_mutex_lock(&lock) == 0;
    for (unsigned id = 0; id < GA_N_ENTRIES; id++) {
        P->calls[id] = ga_stats_calls((ga_id_t)id);
        P->ns[id] = ga_stats_ns((ga_id_t)id);
    }
    for (unsigned i = 0; i < P->nseg_used; i++) /* the segments still open at exit */
        seg_close(&P->seg[P->seg_used[i]]);
    summary_t s;
    opp_t ops[N_OPPS];
    summarize(&s);
    analyze(&s, ops);
    build_text(&s, ops, from_signal);
    json_arg_t ja = {&s, ops, from_signal};
    bool ok = write_file(".txt", txt_body, NULL) && write_file(".json", json_cb, &ja) &&
              write_file(".trace.json", trace_cb, NULL);
    if (locked)
        pthread_mutex_unlock(&lock);
    if (P->owner)
        unlink(P->claim);
    return ok;
}

void ga_profile_write(void)
{
    int saved = errno;
    if (!write_all(false))
        ga_warn("GPUACCEL_PROFILE: cannot write %s.{txt,json,trace.json}: %s", P->path,
                strerror(errno));
    else if (ga_profiling)
        ga_info("profile written to %s.txt, %s.json and %s.trace.json", P->path, P->path,
                P->path);
    errno = saved;
}

const char *ga_profile_path(void)
{
    return ga_profiling ? P->path : "";
}

/* ---- signals --------------------------------------------------------------------- */
static void on_signal(int sig)
{
    int saved = errno;
    write_all(true);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig); /* pending until the handler returns, then the default action */
    errno = saved;
}

/* Only where the program has not chosen a disposition itself: a program that
 * handles SIGINT keeps its behavior, and then exits through exit() anyway. */
static void install_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < GA_ARRAY_LEN(sigs); i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* ---- init, ownership of the path, fork ------------------------------------------- */
static bool pid_alive(pid_t pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static void set_pid_path(prof_t *p, const char *base)
{
    char *d = p->path;
    size_t n = strlen(base);
    if (n > sizeof p->path - 24)
        n = sizeof p->path - 24;
    memcpy(d, base, n);
    d[n++] = '.';
    out_t o = {-1, d + n, 20, 0, false};
    o_u(&o, (uint64_t)getpid());
    d[n + o.len] = '\0';
}

/* Several processes may share one GPUACCEL_PROFILE (a launcher that execs its
 * workers): the first claims PATH with PATH.owner; while it lives, the others
 * write PATH.<pid>.*. A claim left by a dead process is taken over. */
static void claim_path(prof_t *p, const char *base)
{
    int len = snprintf(p->claim, sizeof p->claim, "%s.owner", base);
    if (len < 0 || (size_t)len >= sizeof p->claim) {
        set_pid_path(p, base);
        return;
    }
    for (int tries = 0; tries < 2; tries++) {
        int fd = open(p->claim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd >= 0) {
            char b[24];
            int m = snprintf(b, sizeof b, "%d\n", (int)getpid());
            ssize_t w = write(fd, b, (size_t)m);
            (void)w;
            close(fd);
            p->owner = true;
            snprintf(p->path, sizeof p->path, "%s", base);
            return;
        }
        char b[24] = {0};
        fd = open(p->claim, O_RDONLY | O_CLOEXEC);
        ssize_t r = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
        if (fd >= 0)
            close(fd);
        pid_t other = r > 0 ? (pid_t)atoi(b) : 0;
        if (other == getpid())
            break; /* ours already (profiling started over) */
        if (fd < 0 && errno != ENOENT) {
            set_pid_path(p, base);
            return;
        }
        if (pid_alive(other)) {
            set_pid_path(p, base);
            return;
        }
        unlink(p->claim); /* stale: its process is gone */
    }
    p->owner = true;
    snprintf(p->path, sizeof p->path, "%s", base);
}

static bool absolute_base(const char *cfg, char *out, size_t cap)
{
    if (cfg[0] == '/')
        return (size_t)snprintf(out, cap, "%s", cfg) < cap;
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        return false;
    return (size_t)snprintf(out, cap, "%s/%s", cwd, cfg) < cap;
}

static void read_command(prof_t *p)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, p->command, sizeof p->command - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0) {
        strcpy(p->command, "?");
        return;
    }
    while (n > 0 && p->command[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (p->command[i] == '\0')
            p->command[i] = ' ';
    p->command[n] = '\0';
}

static void resolve_timing(prof_t *p, const ga_rt_t *rt)
{
    p->knote = "off: GPUACCEL_PROFILE_KERNELS=1 times every kernel with events";
    if (!rt->cfg.profile_kernels)
        return;
    ev.create = GA_REAL(rt, GA_ID_cuEventCreate, cuEventCreate);
    ev.record = GA_REAL(rt, GA_ID_cuEventRecord, cuEventRecord);
    ev.query = GA_REAL(rt, GA_ID_cuEventQuery, cuEventQuery);
    ev.sync = GA_REAL(rt, GA_ID_cuEventSynchronize, cuEventSynchronize);
    ev.elapsed = GA_REAL(rt, GA_ID_cuEventElapsedTime_v2, cuEventElapsedTime);
    if (!ev.elapsed)
        ev.elapsed = GA_REAL(rt, GA_ID_cuEventElapsedTime, cuEventElapsedTime);
    if (!ev.create || !ev.record || !ev.query || !ev.sync || !ev.elapsed) {
        p->knote = "unavailable: this driver lacks the event functions kernel timing needs";
        return;
    }
    p->ktiming = true;
    p->knote = "on: each launch is bracketed by two events on its stream";
}

void ga_profile_init(const ga_rt_t *rt)
{
    const char *cfg = rt->cfg.profile;
    if (!cfg || !*cfg)
        return;
    char base[4096];
    prof_t *p = calloc(1, sizeof *p);
    if (!p || !absolute_base(cfg, base, sizeof base)) {
        ga_warn("GPUACCEL_PROFILE='%s': %s; not profiling", cfg,
                p ? "path too long" : "out of memory");
        free(p);
        return;
    }
    claim_path(p, base);
    p->graph_min = rt->cfg.graph_min ? rt->cfg.graph_min : 5;
    read_command(p);
    resolve_timing(p, rt);
    /* Starting over (tests): the old state goes with the old generation. */
    ga_profiling = false;
    prof_t *old = P;
    atomic_store(&span_head, NULL);
    atomic_store(&span_reserved, 0);
    atomic_fetch_add(&gen, 1);
    atomic_store(&written, false);
    p->t_base = ga_now_ns();
    P = p;
    free(old);
    ga_stats_timing = true;
    ga_profiling = true;
    install_signals();
    ga_debug("profiling to %s.{txt,json,trace.json}; kernel timing %s", p->path, p->knote);
}

/* The child profiles itself into PATH.<pid>: nothing of the parent's carries
 * over (its events belong to the parent's contexts). */
static void fork_child(void)
{
    if (!ga_profiling)
        return;
    char base[sizeof P->claim];
    snprintf(base, sizeof base, "%s", P->owner ? P->path : P->claim);
    if (!P->owner) { /* PATH.<ppid>: strip back to the shared prefix via the claim */
        size_t n = strlen(base);
        if (n > 6)
            base[n - 6] = '\0'; /* drop ".owner" */
    }
    /* A fresh state, not a memset: the parent's pages stay shared, untouched. */
    prof_t *p = calloc(1, sizeof *p);
    if (!p) {
        ga_profiling = false;
        return;
    }
    set_pid_path(p, base);
    memcpy(p->command, P->command, sizeof p->command);
    p->graph_min = P->graph_min;
    p->ktiming = false; /* the parent's events are not the child's */
    p->knote = P->ktiming ? "off in a forked child: its events belong to the parent" : P->knote;
    p->t_base = ga_now_ns();
    P = p; /* the parent's copy is leaked: a signal handler might still read it */
    atomic_store(&span_head, NULL);
    atomic_store(&span_reserved, 0);
    atomic_fetch_add(&gen, 1);
    atomic_store(&written, false);
    atomic_store(&collecting, false);
}

static const ga_fork_ops_t fork_ops = {NULL, &lock, fork_child};

/* ---- the feature's descriptor ------------------------------------------------- */

static void prof_copy_done(ga_copy_dir_t dir, size_t bytes, uint64_t ns, CUresult r)
{
    if (r == CUDA_SUCCESS)
        ga_profile_copy(dir, bytes, ns);
}

static void prof_alloc_done(const ga_rt_t *rt, CUdeviceptr p, size_t bytes, uint64_t ns,
                            CUresult r)
{
    (void)rt;
    ga_profile_alloc(r == CUDA_SUCCESS ? p : 0, bytes, ns, r);
}

static void prof_free_done(const ga_rt_t *rt, CUdeviceptr p, uint64_t ns, CUresult r)
{
    (void)rt;
    if (r == CUDA_SUCCESS)
        ga_profile_free(p, 0, ns);
}

static void prof_launch_begin(const ga_rt_t *rt, const ga_launch_t *l)
{
    ga_profile_kernel_begin(rt, l->stream, l->per_thread);
}

static void prof_launch_done(const ga_rt_t *rt, const ga_launch_t *l, CUresult r)
{
    if (r == CUDA_SUCCESS)
        ga_profile_launch(rt, l->f, l->grid, l->block, l->shmem, l->stream, l->per_thread);
}

static void prof_flush(const ga_rt_t *rt, ga_flush_t what, CUstream s)
{
    (void)rt;
    ga_profile_sync_point(what == GA_FLUSH_ALL ? GA_NOSTREAM : s);
}

static bool prof_on(const ga_config_t *c)
{
    return c->profile && *c->profile;
}

static void prof_off(ga_config_t *c)
{
    c->profile = "";
}

const ga_feature_t ga_feature_profile = {
    .name = "profile",
    .variable = "GPUACCEL_PROFILE",
    .summary = "what the program did on the GPU and which features would help it",
    .on = prof_on,
    .off = prof_off,
    .init = ga_profile_init,
    .exit = ga_profile_write,
    .fork = &fork_ops,
    .flush = prof_flush,
    .alloc_done = prof_alloc_done,
    .free_done = prof_free_done,
    .copy_done = prof_copy_done,
    .launch_begin = prof_launch_begin,
    .launch_done = prof_launch_done,
    .span = ga_profile_span,
};
