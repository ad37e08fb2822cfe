/* admit.c - staging's admission by measurement: for each kind of copy
 * (direction, synchronous or not) and size class (powers of two from 64 KiB),
 * the fastest recent copy each way, staged and the driver's own; a copy is
 * staged where the staged figure beats the driver's by MARGIN, else it goes
 * to the driver (the driver's copy is the baseline a copy must not be slower
 * than, and a staged copy's time varies more: its helpers' wake-up, its
 * ring; on an H200 host 64 KiB uploads whose fastest copies were alike each
 * way ran 0.90x of native staged), and a run of PROBE_RUN copies of every
 * PROBE the other way, to keep that figure current (every PROBE_FAR while
 * one way takes half the other's time or less; the period doubles, up to
 * PROBE_MAX, while the runs leave the choice as it was: probe_locked). A run, not one copy: the
 * way not taken is cold (staging's helper threads asleep, its ring not grown
 * by the copies that went to the driver), and its first copy says what a
 * cold copy costs, not what that way costs once taken. Probed one copy at a
 * time, a loop of 1 MiB uploads on an H200 host stayed with the driver at
 * 95-126 us a copy (median) where staged copies, taken, ran 55-58 us.
 *
 * Why: a staged copy has a fixed cost (its driver calls, the helpers'
 * wake-up) that some hosts' whole native copy undercuts: a 64 KiB upload
 * took 23.9 us natively on one H200 host and 16.9-19 us on others, where staged copies
 * took about the same on all; from 1 MiB staging ran 1.3-7x faster. A
 * threshold cannot be right on every host; a measurement is. (Part of the
 * 64 KiB figures first blamed on that fixed cost was a ring's registration:
 * staging.c's rings no longer grow beyond the copies.) Uploads under
 * GPUACCEL_STAGING_UPLOAD_MIN never reach the admission (staging.c min_of):
 * in loops they lost to the driver on every host tried, whatever the
 * measurement chose, because its probes cost more than staging could win
 * there. The fastest, not the mean: a copy's time may also hold waits for
 * the program's earlier work on its stream (the driver's synchronous copy
 * waits for it first), which only add. A way has a figure
 * once SETTLE copies went that way (one copy, the first, is cold). Before a
 * class has a staged figure, its copies are staged; before it has a driver
 * figure, a copy under 1 MiB goes to the driver to get one (the copies before
 * the first ring give most classes theirs); larger ones are staged but for
 * runs of probes.
 *
 * An upload's figure, either way, ends when its source has been consumed
 * and its last DMA queued: where the driver's pageable upload returns
 * (staging.c waits for a synchronous one's last DMA after that point).
 * The two figures still differ in one part: the driver's synchronous upload
 * first waits for the stream's earlier work, inside its figure, where a
 * staged one queues its DMAs behind that work and meets it in the uncounted
 * wait at its end. A program that launches long work before each
 * synchronous upload therefore sees its staged figure lower than the
 * driver's whatever their own costs. The staged copy overlaps its host copy
 * with that work, which the driver's does not, so it gains there unless its
 * own cost is the higher; the choice then rests on that overlap and on the
 * fastest copies (those with the least work ahead), not on a like-for-like
 * time. (Counting only the part of the final wait
 * beyond the DMA's own time would need that time measured: not done.)
 *
 * A copy right after copies of the other way is not counted, whichever way
 * it goes: it meets what the other way left. A driver's pageable upload
 * returns once its last bytes are in the driver's own staging memory, before
 * their DMA ends; after staged copies (which wait for theirs) it finds that
 * memory idle and returns early, so a probe's first driver copy is faster
 * than the driver's copies back to back, each of which waits for the last
 * one's DMA; and a staged copy queued behind the driver's last DMA waits for
 * it. (On one H200 host 1 MiB uploads, all staged, ran 50-61 us a copy
 * against the driver's 106-125 in a loop, where the admission, counting every
 * copy, had chosen the driver; on another both rules staged them.) Of a run
 * of PROBE_RUN probes the later ones count.
 *
 * Owns: the classes' figures, under `lock` (a copy of 64 KiB takes 10 us
 * or more; the lock costs tens of nanoseconds). */
#include "features/staging/admit.h"

#include <pthread.h>
#include <string.h>

enum {
    N_CLASS = 16,       /* 64 KiB ... 2 GiB and up */
    FIRST_SHIFT = 16,   /* the first class: 64 KiB */
    WINDOW = 32,        /* copies a way's window holds before it turns over */
    PROBE = 16,         /* of every PROBE copies of a class, */
    PROBE_FAR = 64,     /* (or PROBE_FAR, while one way takes half the other's time or less) */
    PROBE_RUN = 2,      /* the last PROBE_RUN go the other way */
    PROBE_MAX = 256,    /* the longest period, once the probes keep agreeing */
    MARGIN = 8,         /* staged only if faster by 1/MARGIN of its time */
    SETTLE = 2,         /* copies a way's first window needs before its figure counts */
};
static const size_t BIG = (size_t)1 << 20; /* staged before any driver figure */

/* One way's figure: the least time per 64 KiB in this window and the last
 * (0: none yet), and the copies in this window. */
typedef struct way {
    uint64_t cur, prev;
    unsigned n;
} way_t;

typedef struct klass {
    way_t way[2]; /* by ga_way_t */
    uint64_t seen;
    uint64_t next;   /* the copy (by seen) that starts the next run of probes */
    unsigned period; /* copies from one run of probes to the next; 0: none yet */
    unsigned base;   /* the period it started from: PROBE, or PROBE_FAR */
    int last;        /* the choice when the last run of probes ended; -1: none */
    int recorded;    /* the way of the last copy recorded, plus one; 0: none */
} klass_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static klass_t classes[2][2][N_CLASS]; /* [dir][sync][class], guarded by lock */

static klass_t *class_of(unsigned dir, bool sync, size_t n)
{
    unsigned c = 0;
    while (c + 1 < N_CLASS && n >> (FIRST_SHIFT + c + 1))
        c++;
    return &classes[dir & 1][sync][c];
}

/* A way's figure: none until its first window has SETTLE copies (a way's
 * first copy is cold: a ring's second copy, its first counted, took 40 us
 * where the ones after it took 28-29 on an H200 host, and lost to the
 * driver's 42 by the margin). */
static uint64_t best(const way_t *w)
{
    if (!w->prev && w->n < SETTLE)
        return 0;
    if (!w->cur)
        return w->prev;
    return w->prev && w->prev < w->cur ? w->prev : w->cur;
}

/* Is this copy a probe? Runs of PROBE_RUN every `period` copies. A run that
 * ends with the choice it began with doubles the period (to PROBE_MAX); a
 * changed choice starts again from `base`. Fixed periods cost a loop of
 * 256 KiB downloads on an H200 host a fifth of its copies sent the slower
 * way (PROBE_RUN of every PROBE, and the cold way's first copies), where the
 * choice never changed. */
static bool probe_locked(klass_t *k, unsigned base, ga_way_t w)
{
    if (!k->period) {
        k->period = k->base = base;
        k->next = (k->seen / base) * base + base - PROBE_RUN;
        if (k->next < k->seen)
            k->next += base;
        k->last = -1;
    } else if (k->base != base) {
        /* Ways that move between near and far keep the period they backed
         * off to: 1 MiB uploads on an H200 host, about 2x apart, reset it
         * each time and sent a probe run every 16 copies (12% of them the
         * slower way). */
        k->base = base;
        if (k->period < base)
            k->period = base;
    }
    while (k->next + PROBE_RUN <= k->seen) /* copies counted while a figure was missing */
        k->next += k->period;
    if (k->seen < k->next)
        return false;
    if (k->seen + 1 == k->next + PROBE_RUN) { /* the run's last probe */
        unsigned twice = k->period * 2 > PROBE_MAX ? PROBE_MAX : k->period * 2;
        k->period = k->last == (int)w ? twice : base;
        k->last = (int)w;
        k->next += k->period;
    }
    return true;
}

ga_way_t ga_admit_choose(unsigned dir, bool sync, size_t n)
{
    pthread_mutex_lock(&lock);
    klass_t *k = class_of(dir, sync, n);
    k->seen++;
    uint64_t d = best(&k->way[GA_WAY_DRIVER]), s = best(&k->way[GA_WAY_STAGED]);
    if (!s || !d) {
        pthread_mutex_unlock(&lock);
        if (!s)
            return GA_WAY_STAGED;
        return n < BIG || k->seen % PROBE >= PROBE - PROBE_RUN ? GA_WAY_DRIVER : GA_WAY_STAGED;
    }
    /* Far apart, a probe costs the most and tells the least: fewer of them
     * (1 MiB downloads on an H200 host: 80 us staged, 154-230 by the driver,
     * where two probes in 16 cost a tenth of the staged time). */
    unsigned base = 2 * s <= d || 2 * d <= s ? PROBE_FAR : PROBE;
    ga_way_t w = s + s / MARGIN <= d ? GA_WAY_STAGED : GA_WAY_DRIVER;
    bool probe = probe_locked(k, base, w);
    pthread_mutex_unlock(&lock);
    return probe ? (ga_way_t)!w : w;
}

void ga_admit_record(unsigned dir, bool sync, size_t n, ga_way_t way, uint64_t ns)
{
    if (!n)
        return;
    uint64_t per = ns * 65536 / n;
    if (!per)
        per = 1;
    pthread_mutex_lock(&lock);
    klass_t *k = class_of(dir, sync, n);
    bool switched = k->recorded && k->recorded != (int)way + 1;
    k->recorded = (int)way + 1;
    way_t *w = &k->way[way];
    if (!switched) { /* a copy right after the other way's is not counted: see above */
        if (!w->cur || per < w->cur)
            w->cur = per;
        if (++w->n >= WINDOW)
            w->prev = w->cur, w->cur = 0, w->n = 0;
    }
    pthread_mutex_unlock(&lock);
}

void ga_admit_reset(void)
{
    pthread_mutex_init(&lock, NULL);
    memset(classes, 0, sizeof classes);
}
