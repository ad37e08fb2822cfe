/* query.c - a query phase's reads (RISC Zero's get_at, FRI openings): each
 * small synchronous read is told to the read-pattern learner (pattern.h) with
 * the allocation it lies in; once a query's reads are learned, a miss where a
 * query begins fetches all of them in one round trip, a gather (gather.h), and
 * the query's other reads are served from what it fetched while the epoch and
 * work sequence it was made in hold, like a window.
 *
 * Owns: the learner, the allocations its reads fell in and the gathered reads,
 * under `lock`; one gather's work, under area_lock (taken before `lock`); the
 * switch that turns gathers off when the kernel cannot be had.
 * Must never: call the driver holding `lock` (area_lock is held across a
 * gather: one at a time); gather from allocations not found live, cacheable
 * and on the current device in this epoch (the kernel would fault in the
 * program's context). */
#define _GNU_SOURCE
#include "features/coalesce/internal.h"

#include <string.h>

#include "core/log.h"
#include "features/coalesce/gather.h"
#include "features/coalesce/pattern.h"
#include "tracking/device.h"

/* Gathers (pattern.h, gather.h): the reads one gather fetched, valid while
 * the epoch and work sequence it was made in hold, like a window. */
typedef struct gathered {
    CUdeviceptr src;
    uint32_t n;
    bool used;
    unsigned char bytes[GA_GATHER_CELL];
} gathered_t;
static ga_pattern_t pattern;          /* guarded by lock: the misses, what was learned */
static gathered_t gat[GA_GATHER_MAX]; /* guarded by lock */
static unsigned gat_n;                /* guarded by lock */
static unsigned gat_next;             /* guarded by lock: where the next read is looked for */
/* The gathered reads by address (open addressing, index + 1; 0: empty), for
 * a read that is not where the cursor looks: a read the gather did not fetch
 * (a window's, an unexplained one) costs one probe or a few, not a scan of
 * every gathered read. */
enum { GAT_HASH = 4096, GAT_AHEAD = 8 };
_Static_assert(GAT_HASH >= 2 * GA_GATHER_MAX && !(GAT_HASH & (GAT_HASH - 1)),
               "the gathered reads' hash: a power of two, at most half full");
static uint16_t gat_hash[GAT_HASH];   /* guarded by lock */
static uint64_t gat_epoch, gat_work;  /* guarded by lock */
static bool checked;                  /* guarded by lock: the pattern's allocations were */
static uint64_t checked_epoch;        /* found live, on this device, in this epoch */
static unsigned poor;                 /* guarded by lock: gathers in a row mostly unused */
/* Allocations the missed reads fell in, for the learner (a stale one only
 * misleads it: a prediction is checked live before any gather). */
enum { N_RANGES = 64 };
static struct {
    CUdeviceptr base;
    size_t size;
} ranges[N_RANGES];                   /* guarded by lock */
static unsigned ranges_next;          /* guarded by lock: round-robin replacement */
static unsigned ranges_last;          /* guarded by lock: the last found, looked at first */
static _Atomic bool gathers_off;      /* the kernel cannot be had */
/* One gather's work: up to GA_GATHER_MAX predictions, requests and cells
 * (about 128 KiB: too much for a thread's stack), held from the prediction to
 * the keeping of what was fetched. Lock order: area_lock, then lock. */
static pthread_mutex_t area_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    ga_pat_read_t pred[GA_GATHER_MAX];
    ga_gather_req_t req[GA_GATHER_MAX];
    unsigned char out[GA_GATHER_MAX * GA_GATHER_CELL];
} area;                               /* guarded by area_lock */
enum { POOR_LIMIT = 8 };

/* ---- the gathered reads (under lock) ------------------------------------------- */

static unsigned gat_slot(CUdeviceptr src)
{
    return (unsigned)((src * 0x9e3779b97f4a7c15ull) >> 52) & (GAT_HASH - 1);
}

/* The gathered read at src exactly, or gat_n. */
static unsigned gat_find_locked(CUdeviceptr src)
{
    for (unsigned h = gat_slot(src); gat_hash[h]; h = (h + 1) & (GAT_HASH - 1))
        if (gat[gat_hash[h] - 1].src == src)
            return gat_hash[h] - 1u;
    return gat_n;
}

static void gat_index_locked(void)
{
    memset(gat_hash, 0, sizeof gat_hash);
    for (unsigned k = 0; k < gat_n; k++) {
        unsigned h = gat_slot(gat[k].src);
        while (gat_hash[h]) /* the first of equal addresses stays found */
            h = (h + 1) & (GAT_HASH - 1);
        gat_hash[h] = (uint16_t)(k + 1);
    }
}

static bool gat_holds(unsigned k, CUdeviceptr src, size_t n)
{
    return k < gat_n && src >= gat[k].src && src + n <= gat[k].src + gat[k].n;
}

/* Serve [src, src+n) into dst from the last gather: looked for a few reads
 * on from the one after the last it served (a query's reads come in the
 * learned order), else by its address. */
bool ga_co_serve_gathered_locked(void *dst, CUdeviceptr src, size_t n)
{
    if (!gat_n || gat_epoch != ga_epoch_read() || gat_work != ga_work_seq_read())
        return false;
    unsigned k = gat_n;
    for (unsigned i = 0; i < GAT_AHEAD && k == gat_n; i++) {
        unsigned at = gat_next + i; /* wrapped without a division: once per read */
        while (at >= gat_n)
            at -= gat_n;
        if (gat_holds(at, src, n))
            k = at;
    }
    if (k == gat_n && !gat_holds(k = gat_find_locked(src), src, n))
        return false;
    memcpy(dst, gat[k].bytes + (src - gat[k].src), n);
    gat[k].used = true, gat_next = k + 1;
    atomic_fetch_add_explicit(&ga_co_counts.gather_hits, 1, memory_order_relaxed);
    return true;
}

/* ---- the learner told of reads (under lock) ------------------------------------ */

/* Remember an allocation reads fell in, for the learner. */
static void add_range_locked(CUdeviceptr base, size_t size)
{
    ranges[ranges_next].base = base, ranges[ranges_next].size = size;
    ranges_last = ranges_next;
    ranges_next = (ranges_next + 1) % N_RANGES;
}

/* Tell the learner of a small synchronous read, served or not (the program's
 * own sequence of reads, which repeats query after query; which of them
 * windows serve does not), if its allocation is in the cache of ranges. */
bool ga_co_note_known_locked(CUdeviceptr src, size_t n)
{
    for (unsigned k = 0; k < N_RANGES; k++) {
        unsigned i = (ranges_last + k) % N_RANGES;
        if (ranges[i].size && src >= ranges[i].base && src + n <= ranges[i].base + ranges[i].size) {
            ranges_last = i;
            ga_pat_note(&pattern, &(ga_pat_read_t){ranges[i].base, ranges[i].size,
                                                   src - ranges[i].base, (uint32_t)n});
            return true;
        }
    }
    return false;
}

/* The same for a read not noted yet: its allocation asked of the driver. */
void ga_co_note_new(const ga_rt_t *rt, CUdeviceptr src, size_t n)
{
    range_t rg;
    if (!rt->cfg.coalesce_gather || n > GA_GATHER_CELL || !ga_co_cacheable(rt, src, &rg))
        return;
    pthread_mutex_lock(&ga_co_lock);
    ga_co_note_in_locked(rg.base, rg.size, src, n);
    pthread_mutex_unlock(&ga_co_lock);
}

/* Tell the learner of a read at src in the allocation at base, and remember
 * the allocation. */
void ga_co_note_in_locked(CUdeviceptr base, size_t size, CUdeviceptr src, size_t n)
{
    add_range_locked(base, size);
    ga_pat_note(&pattern, &(ga_pat_read_t){base, size, src - base, (uint32_t)n});
}

/* Was the read noted last the first of a period (where a query begins)? */
bool ga_co_at_anchor_locked(void)
{
    return ga_pat_at_anchor(&pattern);
}

/* ---- gathers: a query's reads in one round trip -------------------------------- */

/* Are the predicted reads' allocations still the ones learned, cacheable and
 * on the current device? Asked once per epoch: every call that can free or
 * unmap memory moves the epoch, so within it they stay. (The gather kernel
 * reads them: an unmapped address would be a fault in the program's context.) */
static bool predictions_live(const ga_rt_t *rt, const ga_pat_read_t *pred, unsigned np)
{
    uint64_t epoch = ga_epoch_read();
    pthread_mutex_lock(&ga_co_lock);
    bool done = checked && checked_epoch == epoch;
    pthread_mutex_unlock(&ga_co_lock);
    if (done)
        return true;
    int dev = ga_current_device(rt);
    CUdeviceptr asked[N_RANGES]; /* allocations asked about already (a query reads tens) */
    unsigned n_asked = 0;
    for (unsigned k = 0; k < np; k++) {
        bool seen = k && pred[k - 1].base == pred[k].base;
        for (unsigned j = 0; j < n_asked && !seen; j++)
            seen = asked[j] == pred[k].base;
        range_t rg;
        if (!seen && (!ga_co_cacheable(rt, pred[k].base, &rg) || rg.base != pred[k].base ||
                      rg.size != pred[k].alloc_size || rg.device != dev || dev < 0))
            return false;
        if (!seen && n_asked < N_RANGES)
            asked[n_asked++] = pred[k].base;
    }
    pthread_mutex_lock(&ga_co_lock);
    checked = true, checked_epoch = epoch;
    pthread_mutex_unlock(&ga_co_lock);
    return true;
}

/* Keep what a gather fetched (if nothing moved meanwhile), judging the gather
 * before it: a pattern whose predictions keep going unread is forgotten. */
static void keep_gathered_locked(const ga_gather_req_t *req, unsigned np,
                                 const unsigned char *out, bool keep, uint64_t epoch,
                                 uint64_t work)
{
    unsigned used = 0;
    for (unsigned k = 1; k < gat_n; k++)
        used += gat[k].used;
    if (gat_n > 1) {
        poor = 2 * used < gat_n - 1 ? poor + 1 : 0;
        if (poor >= POOR_LIMIT) {
            ga_debug("coalesce: a learned read pattern kept missing; forgotten");
            ga_pat_forget(&pattern);
            atomic_fetch_add_explicit(&ga_co_counts.forgotten, 1, memory_order_relaxed);
            poor = 0, checked = false;
        }
    }
    gat_n = 0;
    if (!keep)
        return;
    for (unsigned k = 0; k < np; k++) {
        gat[k].src = req[k].src, gat[k].n = req[k].n, gat[k].used = false;
        memcpy(gat[k].bytes, out + (size_t)k * GA_GATHER_CELL, GA_GATHER_CELL);
    }
    gat_n = np, gat_next = 1, gat_epoch = epoch, gat_work = work; /* read 0 is served */
    gat_index_locked();
}

static bool gather_entered(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src, size_t n,
                           const ga_pat_read_t *pred, unsigned np, CUresult *r)
{
    uint64_t epoch = ga_epoch_read(), work = ga_work_seq_read();
    CUcontext ctx = ga_current_ctx(rt);
    if (!ctx || ga_serving_off())
        return false;
    if (!predictions_live(rt, pred, np)) { /* freed, moved or elsewhere: learn anew */
        atomic_fetch_add_explicit(&ga_co_counts.forgotten, 1, memory_order_relaxed);
        pthread_mutex_lock(&ga_co_lock);
        ga_pat_forget(&pattern);
        gat_n = 0;
        pthread_mutex_unlock(&ga_co_lock);
        return false;
    }
    ga_gather_req_t *req = area.req;
    unsigned char *out = area.out;
    for (unsigned k = 0; k < np; k++)
        req[k].src = pred[k].base + pred[k].off, req[k].n = pred[k].n;
    ga_stream_mark_t m = ga_stream_mark(rt, NULL, ga_entries[id].per_thread);
    bool before = ga_co_idle_before_sync(rt, ctx, id); /* as a window fill's */
    CUresult res = ga_gather_run(rt, id, ctx, req, np, out);
    if (res == CUDA_ERROR_NOT_SUPPORTED)
        atomic_store(&gathers_off, true);
    if (res != CUDA_SUCCESS)
        return false; /* the program's own copy goes, and gets the driver's answer */
    ga_stream_mark_idle(m); /* everything before the gather on that stream finished */
    memcpy(dst, out + (src - req[0].src), n);
    *r = CUDA_SUCCESS;
    atomic_fetch_add_explicit(&ga_co_counts.gathers, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&ga_co_counts.gathered_reads, np, memory_order_relaxed);
    bool keep = before && ga_ctx_settle(rt, ctx);
    pthread_mutex_lock(&ga_co_lock);
    keep = keep && epoch == ga_epoch_read() && work == ga_work_seq_read() && !ga_serving_off();
    keep_gathered_locked(req, np, out, keep, epoch, work);
    pthread_mutex_unlock(&ga_co_lock);
    return true;
}

/* A synchronous read that missed: if it is where a learned query begins,
 * fetch the whole query's reads with one gather and serve this one. */
bool ga_co_gather_and_serve(const ga_rt_t *rt, ga_id_t id, void *dst, CUdeviceptr src,
                            size_t n, bool noted, CUresult *r)
{
    if (!noted || !rt->cfg.coalesce_gather || n > GA_GATHER_CELL ||
        atomic_load_explicit(&gathers_off, memory_order_relaxed))
        return false;
    /* One gather at a time; a read in another thread meanwhile goes its own way. */
    if (pthread_mutex_trylock(&area_lock))
        return false;
    unsigned np = 0;
    pthread_mutex_lock(&ga_co_lock);
    /* Only where a query begins: the learner, told of this read, found it
     * the first of a period (another read in the anchor's allocation, such as
     * a later column of one buffer, would predict the wrong query). */
    const ga_pat_read_t *a = &pattern.slot[0];
    if (ga_pat_at_anchor(&pattern) && src >= a->base && src + n <= a->base + a->alloc_size) {
        ga_pat_read_t probe = {a->base, a->alloc_size, src - a->base, (uint32_t)n};
        np = ga_pat_predict(&pattern, &probe, area.pred, GA_GATHER_MAX);
    }
    pthread_mutex_unlock(&ga_co_lock);
    bool done = false;
    if (np >= 2 && ga_own_calls_enter()) {
        done = gather_entered(rt, id, dst, src, n, area.pred, np, r);
        ga_own_calls_leave();
    }
    pthread_mutex_unlock(&area_lock);
    return done;
}

/* ---- lifecycle ----------------------------------------------------------------- */

/* A context was destroyed: the pattern's allocations are asked again. */
void ga_co_query_ctx_gone_locked(void)
{
    checked = false;
}

/* The learner's counts, under the lock. */
void ga_co_learner_stats(ga_coalesce_stats_t *s)
{
    pthread_mutex_lock(&ga_co_lock);
    s->learn_tries = pattern.attempts, s->learned = pattern.successes, s->fits = pattern.fits_total;
    s->forgotten += pattern.lost;
    pthread_mutex_unlock(&ga_co_lock);
}

void ga_co_query_fork_child(void)
{
    memset(&pattern, 0, sizeof pattern);
    memset(ranges, 0, sizeof ranges);
    gat_n = 0, gat_next = 0, checked = false, poor = 0;
    atomic_store(&gathers_off, false);
    pthread_mutex_init(&area_lock, NULL); /* a gather in another thread at fork held it */
}
