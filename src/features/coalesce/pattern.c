/* pattern.c - learning a query phase's read pattern (see pattern.h).
 *
 * Owns: nothing global; a ga_pattern_t is its caller's, under its lock.
 * Must never: call the driver (pure computation). */
#include "features/coalesce/pattern.h"

#include <string.h>

enum {
    MAX_SHIFT = 48, MAX_UP = 8, MAX_MASK = 48,
    TRY_EVERY = 8, LOOK_MAX = 1024,
    REPAY = 16,              /* reads that pay for one fit spent learning */
    EX = GA_PAT_PERIODS - 1, /* examples a transform is fitted on */
    RUN_PARENTS = 4,         /* earlier run starts tried as a read's parent */
    ANCHORS = 64,            /* run starts tried as the anchor */
    SCORED = 64,             /* run starts an anchor is scored on */
    REFIT_EVERY = 16,        /* periods between new fits of an unknown transform */
    LOST_LIMIT = 4,          /* periods in a row out of step at one read: relearn */
};
static const uint64_t NONE = UINT64_MAX;

/* The read `back` reads ago (0: the newest). */
static const ga_pat_read_t *ago(const ga_pattern_t *p, unsigned back)
{
    return &p->hist[(p->hpos + GA_PAT_HIST - 1 - back) & (GA_PAT_HIST - 1)];
}

static bool same_site(const ga_pat_read_t *a, const ga_pat_read_t *b)
{
    return a->base == b->base && a->n == b->n;
}

/* The element index of a read; NONE if it is not aligned to its length. */
static uint64_t index_of(const ga_pat_read_t *r)
{
    if (r->n && !(r->n & (r->n - 1))) { /* a power of two (nearly every read): no division */
        unsigned sh = (unsigned)__builtin_ctz(r->n);
        return r->off & (r->n - 1) ? NONE : r->off >> sh;
    }
    return r->n && r->off % r->n == 0 ? r->off / r->n : NONE;
}

/* The smallest period P (2..GA_PAT_MAX) with which the last GA_PAT_PERIODS
 * periods' sites repeat, over at least two distinct sites; 0 if none. A
 * period holds two sites, so it is longer than the newest run at one site: a
 * scan of one buffer, however long, costs one comparison here. */
static unsigned find_period(const ga_pattern_t *p)
{
    unsigned from = p->same_run + 1 > 2 ? p->same_run + 1 : 2;
    for (unsigned per = from; per <= GA_PAT_MAX && GA_PAT_PERIODS * per <= p->hlen; per++) {
        if (!same_site(ago(p, 0), ago(p, per)))
            continue;
        bool ok = true, varied = false;
        for (unsigned k = 0; ok && k < (GA_PAT_PERIODS - 1) * per; k++) {
            ok = same_site(ago(p, k), ago(p, k + per));
            varied = varied || !same_site(ago(p, k), ago(p, 0));
        }
        if (ok && varied)
            return per;
    }
    return 0;
}

static uint64_t apply(const ga_pat_xform_t *f, uint64_t i)
{
    if (f->constant)
        return f->k;
    uint64_t v = f->m ? i & ((1ull << f->m) - 1) : i;
    return ((((v >> f->s) & ~(uint64_t)f->c) ^ f->x) << f->u) + f->k;
}

/* Does f, with the offset the first example gives (modulo 2^64, like apply's
 * sum), take every i[e] to j[e]? */
static bool fits(ga_pat_xform_t *f, const uint64_t *i, const uint64_t *j)
{
    f->k = 0;
    f->k = j[0] - apply(f, i[0]);
    for (unsigned e = 1; e < EX; e++)
        if (apply(f, i[e]) != j[e])
            return false;
    return true;
}

/* A transform taking every i[e] to j[e]: the identity plus an offset first
 * (the cheapest, and a digest's next word or the next column of one buffer),
 * then shifts, then (if masks) a low mask alone, then a constant. */
static bool fit(const uint64_t *i, const uint64_t *j, bool masks, ga_pat_xform_t *out)
{
    /* The second example decides most candidates at a glance: with the
     * offset the first one gives, f takes i[1] to j[1] exactly when
     * (a1 - a0) << u == j[1] - j[0] (modulo 2^64), a0 and a1 being the
     * examples before the shift up. Only candidates passing it are tried on
     * every example; the first to fit all, in this order, is the same. */
    uint64_t dj = j[1] - j[0];
    for (unsigned s = 0; s < MAX_SHIFT; s++)
        for (unsigned c = 0; c < 2; c++)
            for (unsigned x = 0; x < 2; x++) {
                uint64_t d = (((i[1] >> s) & ~(uint64_t)c) ^ x) - (((i[0] >> s) & ~(uint64_t)c) ^ x);
                /* dj != 0: only u = ctz(dj) - ctz(d) can do (no shift of a
                 * nonzero d is zero), so the loop starts and ends there. */
                unsigned u0 = 0, u1 = MAX_UP;
                if (dj && !d)
                    continue;
                if (dj) {
                    int t = __builtin_ctzll(dj) - __builtin_ctzll(d);
                    if (t < 0 || t > MAX_UP)
                        continue;
                    u0 = u1 = (unsigned)t;
                }
                for (unsigned u = u0; u <= u1; u++) {
                    if (d << u != dj)
                        continue;
                    ga_pat_xform_t f = {.known = true, .s = (uint8_t)s, .c = (uint8_t)c,
                                        .x = (uint8_t)x, .u = (uint8_t)u};
                    if (fits(&f, i, j))
                        return *out = f, true;
                }
            }
    for (unsigned m = 1; masks && m < MAX_MASK; m++) {
        uint64_t mask = (1ull << m) - 1;
        if ((i[1] & mask) - (i[0] & mask) != dj)
            continue;
        ga_pat_xform_t f = {.known = true, .m = (uint8_t)m};
        if (fits(&f, i, j))
            return *out = f, true;
    }
    for (unsigned e = 1; e < EX; e++)
        if (j[e] != j[0])
            return false;
    *out = (ga_pat_xform_t){.known = true, .constant = true, .k = j[0]};
    return true;
}

/* Where the examples are: read j of the period (0: the anchor) in example e
 * (0..EX-1) lies `base - j + e * per` reads ago. Learning looks at the oldest
 * periods watched, a check at the newest ones. */
typedef struct view {
    ga_pattern_t *p; /* counts the fits tried */
    unsigned per, base;
    const ga_pat_read_t *site; /* the period's sites by position (NULL: the history's) */
} view_t;

static const ga_pat_read_t *at(const view_t *v, unsigned j, unsigned e)
{
    return ago(v->p, v->base - j + e * v->per);
}

static const ga_pat_read_t *site_of(const view_t *v, unsigned j)
{
    return v->site ? &v->site[j] : at(v, j, 0);
}

/* The examples' indices of read j, each at its site; false if one is not. */
static bool examples(const view_t *v, unsigned j, uint64_t *idx)
{
    for (unsigned e = 0; e < EX; e++) {
        const ga_pat_read_t *r = at(v, j, e);
        if ((v->site && !same_site(r, &v->site[j])) || (idx[e] = index_of(r)) == NONE)
            return false;
    }
    return true;
}

static bool run_start(const view_t *v, unsigned j)
{
    return j == 0 || !same_site(site_of(v, j), site_of(v, j - 1));
}

/* Fit read j from parent q (an earlier read of the period, or the anchor). */
static bool try_parent(const view_t *v, unsigned j, unsigned q, bool offset_only,
                       ga_pat_xform_t *out)
{
    uint64_t from[EX], to[EX];
    if (!examples(v, q, from) || !examples(v, j, to))
        return false;
    ga_pat_xform_t f = {.known = true};
    v->p->fits++, v->p->fits_total++;
    bool ok = offset_only ? fits(&f, from, to) : fit(from, to, q == 0, &f);
    if (ok)
        f.parent = (uint16_t)q, *out = f;
    return ok;
}

/* Explain read j (> 0) of the period from a parent whose own transform is
 * known (xf[q]): the read before it at the same site by an offset (a
 * digest's words, columns of one buffer), else the anchor, else one of the
 * nearest earlier run starts (a Merkle path from its fold position). With
 * starts_only, parents are the anchor and run starts alone (scoring). */
static bool explain(const view_t *v, unsigned j, ga_pat_xform_t *xf, bool starts_only)
{
    if (!starts_only && !run_start(v, j) && (j == 1 || xf[j - 1].known) &&
        try_parent(v, j, j - 1, true, &xf[j]))
        return true;
    if (try_parent(v, j, 0, false, &xf[j]))
        return true;
    unsigned tried = 0;
    for (unsigned q = j - 1; q > 0 && tried < RUN_PARENTS; q--)
        if (run_start(v, q) && xf[q].known) {
            tried++;
            if (try_parent(v, j, q, false, &xf[j]))
                return true;
        }
    xf[j].known = false;
    return false;
}

/* How many of the first SCORED run starts of the period follow from the
 * read at chronological position a of the oldest period watched. The query's
 * first read explains its whole query; a read inside it, not the reads of
 * the next query that precede it in the period. */
static unsigned score(ga_pattern_t *p, unsigned per, unsigned a, ga_pat_xform_t *trial,
                      unsigned best)
{
    view_t v = {p, per, GA_PAT_PERIODS * per - 1 - a - (EX - 1) * per, NULL};
    unsigned n = 0, seen = 0;
    trial[0].known = true;
    for (unsigned j = 1; j < per && seen < SCORED; j++)
        if (best && (n + (SCORED - seen) <= best || n + (per - j) <= best)) {
            break; /* it cannot beat the best anchor any more: the choice stands */
        } else if (run_start(&v, j)) {
            seen++;
            n += explain(&v, j, trial, true);
        } else {
            trial[j].known = false;
        }
    return n;
}

/* Is read j of the oldest period watched a run start: its site differs from
 * the read before it (periodically: the period's last read comes before 0)? */
static bool oldest_run_start(const ga_pattern_t *p, unsigned per, unsigned j)
{
    unsigned oldest = GA_PAT_PERIODS * per - 1;
    return !same_site(ago(p, oldest - j), ago(p, oldest - (j + per - 1) % per));
}

/* Learn from the periods watched: the anchor (tried at the first ANCHORS run
 * starts) that explains most run starts, then every read from it. */
static void learn(ga_pattern_t *p, unsigned per)
{
    unsigned oldest = GA_PAT_PERIODS * per - 1, best = 0, best_a = per, tried = 0, starts = 0;
    for (unsigned j = 0; j < per; j++)
        starts += oldest_run_start(p, per, j);
    /* what an anchor that explains all the others scores (itself not counted) */
    starts = starts > SCORED ? SCORED : starts ? starts - 1 : 0;
    for (unsigned a = 0; a < per && tried < ANCHORS; a++) {
        if (!oldest_run_start(p, per, a))
            continue;
        tried++;
        unsigned n = score(p, per, a, p->trial, best_a == per ? 0 : best);
        if (n > best || best_a == per)
            best = n, best_a = a;
        if (best >= starts)
            break; /* every run start scored follows from it: none can do better */
    }
    if (best_a == per)
        return;
    view_t v = {p, per, oldest - best_a - (EX - 1) * per, NULL};
    unsigned learned = 0;
    p->xf[0] = (ga_pat_xform_t){.known = true};
    for (unsigned j = 1; j < per; j++)
        learned += explain(&v, j, p->xf, false);
    if (learned < 1 || 2 * learned < per - 1)
        return; /* too little of the query follows from any one read */
    for (unsigned j = 0; j < per; j++) {
        p->slot[j] = *at(&v, j, EX - 1);
        p->slot[j].off = 0;
        p->cur[j] = NONE;
    }
    p->period = per, p->learned = learned, p->phase = GA_PAT_MAX, p->periods = 0;
}

/* A learned pattern's read j (the newest read): check its transform, and fit
 * it anew on the latest periods when contradicted (or, if unknown, now and
 * then). */
static void verify(ga_pattern_t *p, unsigned j, uint64_t idx)
{
    ga_pat_xform_t *f = &p->xf[j];
    uint64_t from = f->known ? p->cur[f->parent] : NONE;
    if (f->known && from != NONE && apply(f, from) == idx)
        return;
    if (f->known && from == NONE)
        return; /* its parent was not read in step this period */
    if (!f->known && (p->debt || p->periods % REFIT_EVERY))
        return; /* an unknown one is tried again now and then, paid for like learning */
    view_t v = {p, p->period, j, p->slot};
    bool was = f->known;
    unsigned spent = p->fits;
    if (EX * p->period + j > p->hlen)
        f->known = false;
    else
        explain(&v, j, p->xf, false);
    if (!was)
        p->debt += (uint64_t)(p->fits - spent) * REPAY;
    p->learned += (unsigned)f->known - (unsigned)was;
}

/* Step the phase with a read at a learned pattern: the anchor's site starts a
 * period when the period is done or the read is not the one expected next. */
static void step(ga_pattern_t *p, const ga_pat_read_t *r)
{
    unsigned next = p->phase < GA_PAT_MAX ? p->phase + 1 : GA_PAT_MAX;
    uint64_t idx = index_of(r);
    if (same_site(r, &p->slot[0]) && (next >= p->period || !same_site(r, &p->slot[next]))) {
        if (next == p->period)
            p->lost_count = 0; /* the period before went through in step */
        p->phase = 0, p->cur[0] = idx;
        p->periods++;
        return;
    }
    if (next >= p->period || !same_site(r, &p->slot[next])) {
        /* Out of step until the anchor's site comes again. At the same read
         * period after period, the program reads another buffer there now (a
         * buffer freed and another allocated in its place): learn again. */
        if (next < p->period) {
            p->lost_count = p->lost_at == next ? p->lost_count + 1 : 1;
            p->lost_at = next;
            if (p->lost_count >= LOST_LIMIT) {
                p->lost++;
                ga_pat_forget(p);
                return;
            }
        }
        p->phase = GA_PAT_MAX;
        return;
    }
    p->phase = next, p->cur[next] = idx;
    if (idx != NONE)
        verify(p, next, idx);
}

void ga_pat_note(ga_pattern_t *p, const ga_pat_read_t *r)
{
    p->same_run = p->hlen && same_site(r, ago(p, 0)) ? p->same_run + 1 : 1;
    p->hist[p->hpos] = *r;
    p->hpos = (p->hpos + 1) & (GA_PAT_HIST - 1);
    if (p->hlen < GA_PAT_HIST)
        p->hlen++;
    if (p->debt)
        p->debt--;
    if (p->period) {
        step(p, r);
        return;
    }
    /* Looked for every look_every reads (TRY_EVERY; once the history is
     * full, doubling to LOOK_MAX while no period shows: each look costs up to
     * GA_PAT_MAX comparisons; a query phase repeats for far longer than that). */
    if (p->look_every < TRY_EVERY)
        p->look_every = TRY_EVERY;
    if (++p->since_try < p->look_every)
        return;
    unsigned per = find_period(p);
    p->since_try = 0;
    if (per)
        p->look_every = TRY_EVERY;
    else if (p->hlen == GA_PAT_HIST && p->look_every < LOOK_MAX)
        p->look_every *= 2; /* (until the history is full, a look costs at most hlen / 6) */
    /* Learning costs up to ANCHORS * SCORED fits; after a failure the reads
     * pay for them (REPAY reads a fit) before it is tried again, so a period
     * that no function explains costs a bounded share of each read, however
     * often it shows, while a new query phase after a failure is learned soon. */
    if (per && !p->debt) {
        p->fits = 0;
        p->attempts++;
        learn(p, per);
        p->successes += p->period != 0;
        p->debt = p->period ? 0 : (uint64_t)p->fits * REPAY; /* a failure is paid for */
    }
}

bool ga_pat_at_anchor(const ga_pattern_t *p)
{
    return p->period && p->phase == 0;
}

unsigned ga_pat_predict(ga_pattern_t *p, const ga_pat_read_t *r, ga_pat_read_t *out,
                        unsigned max)
{
    uint64_t i = index_of(r);
    if (!p->period || !max || !same_site(r, &p->slot[0]) || i == NONE)
        return 0;
    unsigned n = 0;
    out[n++] = *r;
    p->pidx[0] = i;
    for (unsigned j = 1; j < p->period; j++) {
        const ga_pat_xform_t *f = &p->xf[j];
        const ga_pat_read_t *s = &p->slot[j];
        uint64_t idx = f->known && p->pidx[f->parent] != NONE ? apply(f, p->pidx[f->parent]) : NONE;
        uint64_t end; /* (a product checked for overflow, not a division: per read) */
        if (idx != NONE && (__builtin_mul_overflow(idx + 1, (uint64_t)s->n, &end) ||
                            end > s->alloc_size))
            idx = NONE; /* outside its allocation: not read, and no parent */
        p->pidx[j] = idx;
        if (idx != NONE && n < max) {
            out[n] = *s;
            out[n++].off = idx * s->n;
        }
    }
    return n;
}

void ga_pat_forget(ga_pattern_t *p)
{
    p->period = p->learned = 0;
    p->lost_at = p->lost_count = 0;
    p->since_try = 0;
    p->look_every = TRY_EVERY;
}
