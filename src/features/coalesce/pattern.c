/* pattern.c - learning a query phase's read pattern (see pattern.h).
 *
 * Owns: nothing global; a ga_pattern_t is its caller's, under its lock.
 * Must never: call the driver (pure computation). */
#include "features/coalesce/pattern.h"

#include <string.h>

enum { MAX_SHIFT = 48, MAX_UP = 8, TRY_EVERY = 8, MAX_BACKOFF = 1024 };

/* The read `back` misses ago (0: the newest). */
static const ga_pat_read_t *ago(const ga_pattern_t *p, unsigned back)
{
    return &p->hist[(p->hpos + GA_PAT_HIST - 1 - back) % GA_PAT_HIST];
}

static bool same_site(const ga_pat_read_t *a, const ga_pat_read_t *b)
{
    return a->base == b->base && a->n == b->n;
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
    return ((((i >> f->s) & ~(uint64_t)f->c) ^ f->x) << f->u) + f->k;
}

/* A transform taking every i[e] to j[e] (e < n): shifts first, each with the
 * offset the first example gives (columns or layers kept in one buffer sit at
 * a fixed distance), then a constant. */
static bool fit(const uint64_t *i, const uint64_t *j, unsigned n, ga_pat_xform_t *out)
{
    for (unsigned s = 0; s < MAX_SHIFT; s++)
        for (unsigned c = 0; c < 2; c++)
            for (unsigned x = 0; x < 2; x++)
                for (unsigned u = 0; u <= MAX_UP; u++) {
                    ga_pat_xform_t f = {true, false, (uint8_t)s, (uint8_t)c, (uint8_t)x,
                                        (uint8_t)u, 0};
                    f.k = j[0] - apply(&f, i[0]); /* modulo 2^64, like apply's sum */
                    unsigned e = 1;
                    while (e < n && apply(&f, i[e]) == j[e])
                        e++;
                    if (e == n)
                        return *out = f, true;
                }
    for (unsigned e = 1; e < n; e++)
        if (j[e] != j[0])
            return false;
    *out = (ga_pat_xform_t){.known = true, .constant = true, .k = j[0]};
    return true;
}

/* The element index of a read, or false if it is not aligned to its length. */
static bool index_of(const ga_pat_read_t *r, uint64_t *i)
{
    if (!r->n || r->off % r->n)
        return false;
    *i = r->off / r->n;
    return true;
}

/* How many reads of the period follow from the one at position `a`
 * (chronological, 0..per-1, in the oldest period watched); the transforms in
 * xf[1..per-1], relative to a, each proven on every period but the last. */
static unsigned explain(const ga_pattern_t *p, unsigned per, unsigned a, ga_pat_xform_t *xf)
{
    enum { EX = GA_PAT_PERIODS - 1 };
    unsigned n = 0, oldest = GA_PAT_PERIODS * per - 1;
    for (unsigned j = 1; j < per; j++) {
        uint64_t from[EX], to[EX];
        bool ok = true;
        for (unsigned e = 0; ok && e < EX; e++)
            ok = index_of(ago(p, oldest - a - e * per), &from[e]) &&
                 index_of(ago(p, oldest - a - j - e * per), &to[e]);
        xf[j].known = ok && fit(from, to, EX, &xf[j]);
        n += xf[j].known;
    }
    return n;
}

/* Learn from the periods watched: the anchor that explains most reads. */
static void learn(ga_pattern_t *p, unsigned per)
{
    ga_pat_xform_t *trial = p->trial; /* large: off the stack */
    unsigned best = 0, best_a = 0;
    for (unsigned a = 0; a < per && best < per - 1; a++) {
        unsigned n = explain(p, per, a, trial);
        if (n > best) {
            best = n, best_a = a;
            memcpy(p->xf, trial, sizeof trial[0] * per);
        }
    }
    if (best < 1 || 2 * best < per - 1)
        return; /* too little of the query follows from any one read */
    unsigned newest_anchor = per - 1 - best_a; /* the anchor in the newest period, ago */
    for (unsigned j = 0; j < per; j++) {
        p->slot[j] = *ago(p, newest_anchor - j + (j > newest_anchor ? per : 0));
        p->slot[j].off = 0;
    }
    p->xf[0] = (ga_pat_xform_t){.known = true};
    p->period = per, p->learned = best, p->phase = GA_PAT_MAX;
}

/* A learned pattern's read at `phase` (the newest read): check its transform
 * against it, and fit it anew on the latest periods when it is contradicted. */
static void verify(ga_pattern_t *p, const ga_pat_read_t *r)
{
    enum { EX = GA_PAT_PERIODS - 1 };
    uint64_t idx;
    unsigned j = p->phase;
    if (j == 0 || j >= p->period || !same_site(r, &p->slot[j]) || !index_of(r, &idx))
        return;
    ga_pat_xform_t *f = &p->xf[j];
    if (f->known && apply(f, p->anchor_index) == idx)
        return;
    uint64_t from[EX], to[EX];
    bool ok = j + EX * p->period <= p->hlen;
    for (unsigned e = 0; ok && e < EX; e++) {
        const ga_pat_read_t *a = ago(p, j + e * p->period), *t = ago(p, e * p->period);
        ok = same_site(a, &p->slot[0]) && same_site(t, r) && index_of(a, &from[e]) &&
             index_of(t, &to[e]);
    }
    bool was = f->known;
    f->known = ok && fit(from, to, EX, f);
    p->learned += (unsigned)f->known - (unsigned)was;
}

void ga_pat_note(ga_pattern_t *p, const ga_pat_read_t *r)
{
    p->same_run = p->hlen && same_site(r, ago(p, 0)) ? p->same_run + 1 : 1;
    p->hist[p->hpos] = *r;
    p->hpos = (p->hpos + 1) % GA_PAT_HIST;
    if (p->hlen < GA_PAT_HIST)
        p->hlen++;
    if (p->period) {
        uint64_t i;
        if (same_site(r, &p->slot[0]) && index_of(r, &i))
            p->phase = 0, p->anchor_index = i;
        else if (p->phase < GA_PAT_MAX)
            p->phase++;
        verify(p, r);
        return;
    }
    /* Looked for every TRY_EVERY reads (each look is up to GA_PAT_MAX short
     * comparisons; a query phase repeats for far longer than that), and
     * learned at most once a period (learning costs up to P^2 fits). */
    if (++p->since_try < TRY_EVERY)
        return;
    unsigned per = find_period(p);
    p->since_try = 0;
    if (!p->backoff)
        p->backoff = 1;
    if (per && ++p->learn_wait * TRY_EVERY >= per * p->backoff) {
        p->learn_wait = 0;
        learn(p, per);
        p->backoff = p->period ? 1 : (p->backoff < MAX_BACKOFF ? 2 * p->backoff : MAX_BACKOFF);
    }
}

unsigned ga_pat_predict(const ga_pattern_t *p, const ga_pat_read_t *r, ga_pat_read_t *out,
                        unsigned max)
{
    uint64_t i;
    if (!p->period || !max || !same_site(r, &p->slot[0]) || !index_of(r, &i))
        return 0;
    unsigned n = 0;
    out[n++] = *r;
    for (unsigned j = 1; j < p->period && n < max; j++) {
        if (!p->xf[j].known)
            continue;
        const ga_pat_read_t *s = &p->slot[j];
        uint64_t idx = apply(&p->xf[j], i);
        if (idx > (UINT64_MAX - s->n) / s->n || idx * s->n + s->n > s->alloc_size)
            continue;
        out[n] = *s;
        out[n++].off = idx * s->n;
    }
    return n;
}

void ga_pat_forget(ga_pattern_t *p)
{
    p->period = p->learned = 0;
    p->since_try = p->learn_wait = 0;
}
