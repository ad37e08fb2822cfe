/* internal.h - what the profile's files share with each other, and nothing the
 * rest of the library sees (profile.h is the feature's face).
 *
 * Exposes: the limits every table is sized by; the state (prof_t, one per
 * process, reached through ga_prof) with the lock that guards its tables and
 * the generation that makes thread-local caches stale; the trace's per-thread
 * blocks; the analysis's summary and verdicts, which both reports print; and,
 * grouped by the file that defines them, the functions one file offers
 * another, and in_window, the gate every accumulation passes (window.c). The
 * formatter the writers share is format.h; the window file's layout, which
 * the gpuaccel command shares, window.h.
 *
 * The state is allocated at init (and afresh in a fork child) with fixed-size
 * tables, never resized, so a reader in a signal handler never follows a
 * pointer into freed memory; a replaced state is leaked, never freed, while a
 * handler might still read it (except when profiling starts over, in tests).
 *
 * Cost: counters and tables sit behind one mutex that only the hooks of
 * copies, allocations and launches take (uncontended in the common
 * one-thread-drives-the-GPU program); driver-call trace events go to a block
 * only their thread writes. Nothing calls the driver while holding the lock. */
#ifndef GA_PROFILE_INTERNAL_H
#define GA_PROFILE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "features/profile/format.h"
#include "features/profile/profile.h"
#include "features/profile/window.h"
#include "tracking/sequence.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif


/* ---- limits: every table is fixed at init ---------------------------------------- */
enum {
    N_DIRS = 4,
    N_BUCKETS = 5,
    MAX_KERNELS = 4096,  /* power of two; one more slot collects the overflow */
    MAX_CONFIGS = 8,     /* distinct (grid, block, shmem) kept per kernel */
    MAX_STREAMS = 256,   /* power of two */
    MAX_SEQS = 4096,     /* power of two */
    SEQ_NAMES = 4,       /* kernels named per sequence in the report */
    MAX_LIVE = 1 << 16,  /* live allocations whose size is remembered */
    FREED_SLOTS = 256,   /* recently freed sizes, for churn */
    WINDOW_BLOCKS = 96,  /* the 64 KiB blocks coalescing's windows hold (its N_SLOTS) */
    MAX_POOLS = 16,      /* memory pools whose reserved peak is remembered */
    MAX_COUNTERS = 64,
    SPAN_BLOCK = 4096,   /* driver-call events per thread block */
    SPAN_LIMIT = 200000, /* driver-call events kept in the trace */
    GPU_LIMIT = 100000,  /* kernel events kept in the trace */
    RING = 4096,         /* launches whose events are not collected yet */
    MAX_EVENTS = 2 * RING + 64,
    TEXT_CAP = 256 * 1024,
    LIST_JSON = 200,     /* longest list in the JSON */
};

/* ---- the state ------------------------------------------------------------------- */
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
    const char *pretty;           /* demangled for the text report, or NULL */
    uint64_t launches, gpu_ns, timed;
    unsigned ncfg;
    uint64_t cfg_dropped;
    kcfg_t cfg[MAX_CONFIGS];
} kern_t;

/* A stream's track on the GPU (kernel timing): one per stream, and one per
 * thread for per-thread default streams. */
typedef struct track {
    bool used;
    CUstream s;
    uint32_t tid;     /* per-thread default streams are one per thread */
    uint64_t gpu_end; /* where its last kernel ended on the GPU track */
} track_t;

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
    uint32_t kern, track;
    uint64_t host_ns;
    bool in; /* launched inside the window: its GPU time counts */
} pending_t;

typedef struct gpu_ev {
    uint32_t kern, track;
    uint64_t ts, dur;
} gpu_ev_t;

/* The process's place in a multi-process job (job.c). */
typedef struct prof_job {
    bool ranked;               /* a launcher's rank variable was set */
    const char *rank_variable; /* which one (RANK, OMPI_COMM_WORLD_RANK, ...) */
    int64_t rank;
    int64_t world_size, local_rank; /* -1: not set */
} prof_job_t;

/* What a driver call is to the estimates the spans feed (trace.c), by entry
 * point, from its name at init. */
enum {
    K_WORK = 1,       /* device work the host cannot see: launches, device copies, memsets */
    K_DIRTY = 2,      /* may leave work the host can see (async copies with host memory,
                       * host functions, graph launches, stream memory operations) */
    K_OBSERVE = 4,    /* waits for or looks at the device: a deferred wait is paid here */
    K_SYNC = 8,       /* cuCtxSynchronize, cuStreamSynchronize: what lazy_sync may defer */
    K_TAINT = 16,     /* memory both sides reach: lazy_sync never defers after one */
    K_PIN_ALLOC = 32, /* cuMemHostAlloc, cuMemAllocHost */
    K_PIN_FREE = 64,  /* cuMemFreeHost */
    K_STREAM_NEW = 128,
    K_STREAM_GONE = 256,
};

/* A tally of calls and their time, written from spans without the lock. */
typedef struct tally {
    _Atomic uint64_t n, ns;
} tally_t;

/* A memory pool's largest reservation seen (async_pool's estimate). */
typedef struct pool_peak {
    CUmemoryPool pool;
    uint64_t peak;
} pool_peak_t;

typedef struct prof {
    char base[4096];  /* GPUACCEL_PROFILE made absolute: every process's prefix */
    char path[4096];  /* this process's files' prefix: base, or base.<pid> ... */
    char claim[4200]; /* PATH.owner while this process owns PATH */
    bool owner;
    prof_job_t job;
    char command[1024];
    unsigned graph_min;
    uint64_t t_base;

    acc_t copies[N_DIRS][N_BUCKETS];
    /* Small device-to-host reads that followed another with no device work
     * (a launch, a copy to or within the device) in between: what coalescing
     * can serve. A read after work waits for it; no window saves that. */
    struct {
        uint64_t n, ns;
        uint64_t work, at_last_read; /* work seen so far, and at the last small read */
        bool seen;
    } follow;
    struct {
        uint64_t count, bytes, ns, failed, failed_ns;
        uint64_t frees, free_bytes, free_ns, frees_unknown;
        uint64_t live, peak, churn, churn_ns, untracked;
    } mem;
    /* Large copies (staging's threshold or more) by the host memory's kind:
     * [htod, dtoh][pageable, page-locked]. */
    acc_t large[2][2];
    uint64_t large_min, large_up_min; /* downloads; uploads (GPUACCEL_STAGING_UPLOAD_MIN) */
    /* Pages of the large pageable downloads' destinations that were not
     * resident before the copy (the copy faulted them in), and a page's first
     * touch on this host (ns, measured at init; 0: unknown), and its size. */
    uint64_t untouched_pages, fault_ns, page;
    unsigned copy_threads; /* staging's (ga_config_staging_threads): faults spread over them */
    /* Staging's rings as they would grow with the large pageable copies (the
     * rule of core/config.h): the whole process's traffic and largest copy
     * so far, and the slot size of the last ring (0: none yet). In the
     * windows: the copies' staged time in the slots the ring had for each
     * ([htod, dtoh]), and the rings made or grown, and what making them costs. */
    struct {
        uint64_t traffic, largest;
        size_t chunk, max; /* max: ga_config_staging_chunk */
        uint64_t est_ns[2], rings, ring_ns;
    } stg;
    /* Small reads with no device work since the one before: in a 64 KiB block
     * read since that work (a window holds it), or not (only a mirror would). */
    struct {
        uint64_t hits, hit_ns, misses, miss_ns;
        uint64_t block[WINDOW_BLOCKS], work;
        unsigned n, next;
    } win;
    /* Stream-ordered allocations; those that mapped memory their pool had
     * released (its reservation below the peak it had reached); those its
     * reservation served (it did not grow). */
    struct {
        uint64_t n, ns, regrown, regrown_ns, reserved, reserved_ns;
        pool_peak_t pools[MAX_POOLS];
        unsigned npools;
    } apool;
    live_t live[MAX_LIVE];
    unsigned nlive;
    freed_t freed[FREED_SLOTS];

    kern_t kern[MAX_KERNELS + 1];
    _Atomic unsigned nkern;
    uint64_t launches;

    track_t track[MAX_STREAMS];
    uint16_t track_used[MAX_STREAMS];
    unsigned ntrack_used;
    uint64_t track_dropped;
    seq_t seq[MAX_SEQS];
    unsigned nseq;
    uint64_t segments, singles, seq_dropped;

    counter_t counters[MAX_COUNTERS];
    unsigned ncounters;

    /* From the spans (trace.c), without the lock: page-locked host memory,
     * streams, and the synchronizations lazy_sync could defer. */
    uint16_t kind[GA_N_ENTRIES]; /* K_* by entry point, set at init */
    tally_t pin_alloc, pin_free, stream_new, stream_gone, syncs;
    struct {
        _Atomic bool work, dirty, tainted; /* since the last wait; tainted: ever */
        _Atomic uint64_t open_end, open_wait; /* a quiet sync not yet observed */
        tally_t quiet;                       /* quiet syncs and their waits */
        _Atomic uint64_t overlap_ns;         /* the host work after them, capped by the wait */
    } lazy;

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
    uint64_t pid; /* getpid() once per write, not per trace event */
} prof_t;

/* ---- driver-call trace events (trace.c) ------------------------------------------ */
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

/* ---- the analysis (analysis.c) --------------------------------------------------- */
typedef enum { V_HELPS, V_NO, V_UNKNOWN } verdict_t;

typedef struct opp {
    const char *feature;
    verdict_t verdict;
    uint64_t saving_ns;
    uint64_t acts_on; /* the events the feature would act on (0: nothing to act on) */
    char why[480];
    char check[160]; /* the command that measures it */
} opp_t;

/* Every feature with an estimate, and coalescing's mirrors, in a fixed order
 * (the JSON's); the text lists them by what they would save. */
#define GA_PROF_OPPS(X)                                                                   \
    X(coalesce) X(coalesce_mirrors) X(pool) X(async_pool) X(pinned) X(staging) X(streams)  \
    X(lazy_sync) X(graphs) X(tune) X(kernels)
enum {
#define GA_PROF_OPP_ENUM(name) OPP_##name,
    GA_PROF_OPPS(GA_PROF_OPP_ENUM)
#undef GA_PROF_OPP_ENUM
    N_OPPS
};

/* What the window file said when the profile was written (window.c). */
typedef struct window_state {
    uint32_t windows;   /* closed windows */
    bool open;          /* a window was still open */
    uint64_t inside_ns; /* time inside them: the closed ones, and the open one so far */
    char start[GA_WINDOW_PATTERN], end[GA_WINDOW_PATTERN];
} window_state_t;

typedef struct summary {
    uint64_t wall, small_n, small_ns, follow_n, follow_ns, launch_calls, launch_ns;
    uint64_t seq_nodes, seq_count, gpu_ns, timed;
    uint64_t basis; /* what a saving is weighed against: the wall time, or the window's */
    bool windowed;  /* counted inside windows only (window) */
    window_state_t window;
} summary_t;

static inline uint64_t per(uint64_t total, uint64_t n)
{
    return n ? total / n : 0;
}

/* ---- profile.c: the state and its lifecycle -------------------------------------- */
extern prof_t *ga_prof;              /* NULL until profiling starts */
extern pthread_mutex_t ga_prof_lock; /* guards the tables; the fork lock too */
extern _Atomic unsigned ga_prof_gen; /* bumped on init and in a fork child: stale TLS */

/* The calling thread's id (gettid), cached per generation. */
uint32_t ga_prof_thread_id(void);

/* ---- window.c: GPUACCEL_PROFILE_WINDOW ------------------------------------------- */
/* The mapped window file, or NULL (unset, or a file that cannot be used):
 * set at init, before profiling starts. */
extern _Atomic(const ga_window_t *) ga_prof_window;

/* Does an accumulation that feeds the totals and the estimates count now?
 * Always without a window file; with one, only while the program is inside a
 * window. Unset, it costs one relaxed load and a predictable branch. What
 * pairs events (live allocations, the work since a read, stream tracks,
 * kernels' records, pools' peaks) is kept whatever it answers. */
static inline bool in_window(void)
{
    const ga_window_t *w = atomic_load_explicit(&ga_prof_window, memory_order_relaxed);
    return GA_LIKELY(!w) || (atomic_load_explicit(&w->crossings, memory_order_relaxed) & 1);
}

/* Map GPUACCEL_PROFILE_WINDOW's file (init; NULL or "": none). A file that
 * cannot be used: one warning, and no window. */
void ga_prof_window_open(const char *path);

/* A window file is used: what it says now, into *out. */
bool ga_prof_window_used(window_state_t *out);

/* ---- recorder.c: the events' tables ---------------------------------------------- */
extern const uint64_t ga_prof_bucket_max[N_BUCKETS]; /* copy sizes; 0: no limit */
extern const char *const ga_prof_bucket_name[N_BUCKETS];
extern const char *const ga_prof_dir_name[N_DIRS];

/* Is `s` (launched through a _ptsz entry point if per_thread) a per-thread stream? */
bool ga_prof_per_thread(CUstream s, bool per_thread);

/* The sequence detector's sink (tracking/sequence.h, subscribed at init): a
 * segment ended; count its sequence. Takes the lock. */
void ga_prof_sequence(const ga_seq_node_t *nodes, unsigned n, CUstream s);

/* ---- ktime.c: kernel timing with events ------------------------------------------ */
/* Find the event functions (GPUACCEL_PROFILE_KERNELS=1): sets p->ktiming, p->knote. */
void ga_prof_resolve_timing(prof_t *p, const ga_rt_t *rt);

/* After launch k (GPU track g, NULL if untracked) succeeded on s: its end
 * event; `in`: launched inside the window (its GPU time counts). */
void ga_prof_kernel_end(unsigned k, track_t *g, CUstream s, bool per_thread, bool in);

/* Harvest up to `max` finished launches; `wait` blocks on each (at exit). */
void ga_prof_collect(unsigned max, bool wait);

/* A fork child: no collector is running in it. */
void ga_prof_ktime_reset(void);

/* ---- trace.c: driver-call spans -------------------------------------------------- */
/* p->kind from the entry points' names (init). */
void ga_prof_classify(prof_t *p);

/* At write: a quiet synchronization still owed is paid at exit. */
void ga_prof_lazy_close(uint64_t now);

/* The blocks, newest first (of every generation: skip those not current). */
const span_block_t *ga_prof_spans(void);

/* Start over with no blocks (init, fork child); the old ones are leaked. */
void ga_prof_trace_reset(void);

/* ---- analysis.c: what the reports say -------------------------------------------- */
/* What staging takes for one pageable copy of `bytes` through a ring with
 * slots of `chunk` bytes (direction d: 0 host to device, 1 device to host),
 * and what making a ring of such slots costs the copy that makes it (first:
 * the process's first ring, whose pages the copy's own thread populates). */
uint64_t ga_prof_staged_ns(unsigned d, uint64_t bytes, uint64_t chunk);
uint64_t ga_prof_ring_ns(uint64_t chunk, bool first);
void ga_prof_summarize(summary_t *s);
void ga_prof_analyze(const summary_t *s, opp_t ops[N_OPPS]);

/* The orders the reports list in, as indices into ga_prof->idx (its scratch). */
unsigned ga_prof_sorted_entries(void);
unsigned ga_prof_sorted_kernels(bool by_gpu);
unsigned ga_prof_sorted_seqs(void);

/* A kernel's name for the reports. */
const char *ga_prof_kname(uint32_t k);
const char *ga_prof_kname_text(uint32_t k); /* demangled where possible */

/* ---- the writers ----------------------------------------------------------------- */
/* write_text.c: FILE.txt into ga_prof->text (FILE.json carries it too). */
void ga_prof_build_text(const summary_t *s, const opp_t ops[N_OPPS], bool from_signal);

/* write_json.c: FILE.json (doc/profile-schema.json). */
void ga_prof_json_body(ga_out_t *o, const summary_t *s, const opp_t ops[N_OPPS],
                       bool from_signal);

/* write_trace.c: FILE.trace.json (Chrome trace-event format). */
void ga_prof_trace_body(ga_out_t *o);

/* ---- job.c: the process's place in a multi-process job --------------------------- */
/* Its rank, world size and local rank from the launchers' variables (init). */
void ga_prof_read_job(prof_job_t *j);

/* p->path = p->base plus this process's own part: .rank<R>.<pid> when p->job
 * has a rank, else .<pid>. */
void ga_prof_own_path(prof_t *p);

/* ---- output.c: where the files go, and when they are written --------------------- */
bool ga_prof_absolute_base(const char *cfg, char *out, size_t cap);
/* p->path from p->base and p->job: a ranked process its own path; otherwise
 * base itself if no live process has claimed it (PATH.owner), else its own. */
void ga_prof_claim_path(prof_t *p);
void ga_prof_install_signals(void);

/* A fresh state may write its files again (init, fork child). */
void ga_prof_output_reset(void);

#endif
