/* advise.c - gpuaccel advise: a search over settings, not features.
 *
 * The program is profiled once (with --phase or --window, only between the
 * lines they name: phase.h's window file); its estimates rank the features
 * (the largest saving first) and say which have nothing to act on. When the
 * profile cannot tell what tune would do, the tuner runs on the busiest
 * kernels if a run fits the budget. Then, alternating with native in rounds
 * of fresh processes (bench.c), come each feature alone, every feature, every
 * feature but one, the defaults, and the defaults plus each feature that paid
 * alone; the close contenders are repeated until the intervals of their
 * median speedups separate or the budget is spent. The pick then gets fresh
 * rounds of its own (check_pick): the best of many medians is biased upward,
 * so the figure the advice gives comes from runs that did not choose it. The
 * winner is printed with that interval, and it is said plainly when the data
 * cannot separate settings.
 *
 * Owns: which settings are tried, the stopping rule, the advice and the file
 * --write makes (GPUACCEL_CONFIG lines that `gpuaccel ab --config` measures
 * again).
 * Must never: advise a setting whose outputs differed from the native run's
 * or whose runs failed; call a setting faster than native when the intervals
 * do not separate them. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "phase.h"
#include "profiles.h"

enum {
    MAX_RUNS = 60,    /* a contender's runs at most: past it the budget goes elsewhere */
    FRESH_MIN = 5,    /* the pick's fresh rounds at least (--runs when more): ab's default runs */
    TUNER_FACTOR = 4, /* a tuner run is taken to cost this many profiled runs */
    BUSIEST = 3,      /* kernels the tuner tries */
};

/* What the profile said of each feature, by the toggled features' order. */
typedef struct estimate {
    bool have;
    pf_verdict_t verdict;
    uint64_t saving_ns, acts_on; /* acts_on UINT64_MAX: not recorded */
} estimate_t;

typedef struct busy {
    char *name;
    uint64_t key; /* GPU time, else launches */
} busy_t;

/* The search's pick, decided once (decide): the intervals of rows with fewer
 * than three runs move with native's spread, so deciding again after the
 * fresh rounds (which add native runs) could pick another setting than the
 * one the fresh rounds measured. Rows are found again by mask: the table is
 * sorted before the advice is printed. */
typedef struct pick {
    bool decided;
    bool none;              /* no setting ran with equal outputs and without failing */
    unsigned mask, fastest; /* the pick's and the fastest median's masks */
    double lo, hi;          /* the pick's interval when it was decided */
} pick_t;

/* No setting to advise: none ran, or the pick did not separate from native. */
static bool native_pick(const pick_t *pk)
{
    return pk->none || pk->lo <= 1.0;
}

typedef struct advise {
    bench_t b;
    estimate_t est[N_FEATURES];
    busy_t busy[BUSIEST];
    bool timed;
    double profile_s; /* the profiled run's wall time, 0: none */
    char table[4200]; /* the tuner's table, or "" */
    bool table_ours;  /* made here, and so removed unless --write keeps it */
    unsigned avail;   /* the features that can act here (tune: with a table) */
    unsigned order[N_FEATURES], n_order; /* the available ones, best estimate first */
    double t0;        /* when measuring began (the budget's start) */
    window_file_t win; /* the profile run's window (--phase, --window), or none */
    pick_t pk;        /* the pick, decided once (decide) */
} advise_t;

static bool bit(unsigned mask, int i)
{
    return (mask >> i) & 1u;
}

static double spent(const advise_t *a)
{
    return now_s() - a->t0;
}

/* Waits for a child of advise's own (the profile, the tuner): an interrupt is
 * passed on to it, and past `cap` seconds (0: none) it gets SIGTERM. Returns
 * whether the cap stopped it. */
static bool wait_capped(pid_t pid, int *status, double cap)
{
    double t0 = now_s();
    bool passed = false, stopped = false;
    *status = 0;
    while (pid > 0) {
        pid_t got = waitpid(pid, status, WNOHANG);
        if (got == pid || (got < 0 && errno != EINTR))
            break;
        if (interrupted && !passed)
            kill(pid, interrupted), passed = true;
        if (cap > 0 && !stopped && now_s() - t0 > cap)
            kill(pid, SIGTERM), stopped = true;
        usleep(10000);
    }
    return stopped;
}

/* ---- the profile ------------------------------------------------------------------- */
static void on_entry(void *ctx, json_slice_t name, uint64_t calls, uint64_t ns)
{
    (void)ctx, (void)name, (void)calls, (void)ns;
}

static void on_copy(void *ctx, unsigned d, unsigned b, uint64_t count, uint64_t bytes, uint64_t ns)
{
    (void)ctx, (void)d, (void)b, (void)count, (void)bytes, (void)ns;
}

static void on_counter(void *ctx, json_slice_t f, json_slice_t name, uint64_t value)
{
    (void)ctx, (void)f, (void)name, (void)value;
}

/* The busiest kernels: by GPU time when it was measured, else by launches. */
static void on_kernel(void *ctx, json_slice_t name, uint64_t launches, uint64_t gpu_ns,
                      uint64_t timed)
{
    advise_t *a = ctx;
    uint64_t key = timed ? gpu_ns : launches;
    a->timed = a->timed || timed;
    unsigned i = BUSIEST;
    while (i > 0 && (!a->busy[i - 1].name || a->busy[i - 1].key < key))
        i--;
    if (i == BUSIEST)
        return;
    char *n = json_strdup(name);
    if (!n || strchr(n, ',') || !strcmp(n, "?")) { /* a name the tuner's list cannot hold */
        free(n);
        return;
    }
    free(a->busy[BUSIEST - 1].name);
    memmove(&a->busy[i + 1], &a->busy[i], (BUSIEST - 1 - i) * sizeof a->busy[0]);
    a->busy[i] = (busy_t){n, key};
}

static void on_opportunity(void *ctx, unsigned f, const pf_opp_t *o)
{
    advise_t *a = ctx;
    int i = feature_index(pf_opp_name[f]);
    if (i >= 0)
        a->est[i] = (estimate_t){true, o->verdict, o->saving_ns, o->acts_on};
}

/* The profile run's window, from --phase's lines or --window's (none: the
 * whole process). EX_OK, or a usage error or failure (printed). */
static int window_of(advise_t *a)
{
    const opts_t *o = a->b.o;
    a->win.path[0] = '\0';
    if (o->window_start)
        return window_create(&a->win, "--window", o->window_start, o->window_end);
    if (o->measure == M_PHASE)
        return window_create(&a->win, "--phase", o->phase_start, o->phase_end);
    return EX_OK;
}

/* Starts the profiled run: every feature off, its output away (through the
 * pipes `pp` to /dev/null when it marks windows). */
static pid_t start_profiled(const advise_t *a, const char *base, pipes_t *pp)
{
    const bench_t *b = &a->b;
    bool windowed = a->win.path[0];
    if (windowed && !pipes_open(pp))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        int null = windowed ? -1 : open("/dev/null", O_WRONLY);
        if (windowed)
            pipes_child(pp);
        else if (null >= 0)
            dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO);
        signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL);
        preload(b->lib);
        setenv("GPUACCEL_PROFILE", base, 1);
        setenv("GPUACCEL_PROFILE_KERNELS", "1", 1); /* rank kernels by GPU time */
        if (windowed)
            setenv("GPUACCEL_PROFILE_WINDOW", a->win.path, 1);
        setenv("GPUACCEL", "0", 1); /* the program as it is */
        for (int i = 0; i < N_FEATURES; i++)
            unsetenv(feature_vars[i]);
        execv(b->path, b->o->cmd);
        _exit(127);
    }
    return pid;
}

/* Runs the program once under the profile (start_profiled); shows the
 * report's opportunities on stderr (advise's progress) and keeps what ranks
 * the features. */
static void profile_once(advise_t *a)
{
    char base[64];
    snprintf(base, sizeof base, "/tmp/gpuaccel-advise.%d", (int)getpid());
    if (a->win.path[0])
        fprintf(stderr, "gpuaccel advise: profiling the command once, between its lines matching "
                        "'%s' and '%s'...\n", a->win.page->start, a->win.page->end);
    else
        fprintf(stderr, "gpuaccel advise: profiling the command once...\n");
    double t0 = now_s();
    pipes_t pp;
    pid_t pid = start_profiled(a, base, &pp);
    int status;
    if (pid < 0)
        return;
    if (a->win.path[0]) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        const int to[2] = {null, null};
        pipes_pump(&pp, to, &a->win.phase);
        if (null >= 0)
            close(null);
        if (!a->win.phase.crossings)
            fprintf(stderr, "gpuaccel advise: no line of the profiled run's output matched '%s': "
                            "its estimates count nothing\n", a->win.page->start);
    }
    wait_capped(pid, &status, 0);
    char **files = NULL;
    int n = pf_find_run(base, &files);
    pf_proc_t proc = {0};
    const pf_sink_t sink = {a, on_entry, on_kernel, on_copy, on_counter, on_opportunity};
    char why[256], *text = n > 0 ? pf_read(files[0], &proc, &sink, why, sizeof why) : NULL;
    if (!text) {
        char how[96];
        describe_status(status, how, sizeof how);
        fprintf(stderr, "gpuaccel advise: no profile came back (the command ended with %s; did it "
                        "use CUDA?): no ranking, every feature is tried\n", how);
    } else {
        a->profile_s = proc.wall_ns ? proc.wall_ns * 1e-9 : now_s() - t0;
        /* the report's opportunities, as the profile printed them */
        char *report = json_strdup(proc.text), *save = NULL;
        bool in = false;
        for (char *l = report ? strtok_r(report, "\n", &save) : NULL; l;
             l = strtok_r(NULL, "\n", &save)) {
            if (!strncmp(l, "Opportunities", 13))
                in = true;
            else if (in && l[0] != ' ')
                break;
            if (in)
                fprintf(stderr, "  %s\n", l);
        }
        free(report);
        free(text);
    }
    for (int i = 0; i < n; i++)
        unlink_profile(files[i]);
    if (n >= 0)
        pf_free_list(files, n);
    char owner[96]; /* left by a program that died before writing */
    snprintf(owner, sizeof owner, "%s.owner", base);
    unlink(owner);
}

/* ---- the tuner --------------------------------------------------------------------- */
/* When the profile cannot tell what tune would do: the tuner on the busiest
 * kernels, if a run fits a quarter of the budget (a tuner run is taken to cost
 * TUNER_FACTOR profiled runs, and is stopped at that quarter). */
static void tune_once(advise_t *a)
{
    const opts_t *o = a->b.o;
    int t = feature_index("tune");
    const char *user = getenv("GPUACCEL_TUNE_TABLE");
    if (t < 0)
        return;
    if (user && *user) {
        snprintf(a->table, sizeof a->table, "%s", user);
        fprintf(stderr, "gpuaccel advise: tune: the table GPUACCEL_TUNE_TABLE names (%s)\n", user);
        return;
    }
    if (o->no_tune || !a->est[t].have || a->est[t].verdict != PF_UNKNOWN || !a->busy[0].name)
        return;
    double cap = o->budget_s / 4, est = a->profile_s * TUNER_FACTOR;
    if (est > cap) {
        fprintf(stderr, "gpuaccel advise: tune: not tried: a tuner run (~%.0f s, taken as %d "
                        "profiled runs) does not fit a quarter of --budget %.0f s\n", est,
                TUNER_FACTOR, o->budget_s);
        return;
    }
    char kernels[1024] = "";
    for (unsigned i = 0; i < BUSIEST && a->busy[i].name; i++)
        snprintf(kernels + strlen(kernels), sizeof kernels - strlen(kernels), "%s%s",
                 i ? "," : "", a->busy[i].name);
    if (o->write)
        snprintf(a->table, sizeof a->table, "%s.tune.table", o->write);
    else
        snprintf(a->table, sizeof a->table, "/tmp/gpuaccel-advise.%d.tune.table", (int)getpid());
    a->table_ours = true;
    unlink(a->table);
    fprintf(stderr, "gpuaccel advise: tune: the tuner on the busiest kernels (%s)...\n", kernels);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO);
        signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL);
        preload(a->b.lib);
        setenv("GPUACCEL", "0", 1);
        for (int i = 0; i < N_FEATURES; i++)
            unsetenv(feature_vars[i]);
        setenv("GPUACCEL_TUNER", a->table, 1);
        setenv("GPUACCEL_TUNER_KERNEL", kernels, 1);
        execv(a->b.path, o->cmd);
        _exit(127);
    }
    int status;
    bool stopped = wait_capped(pid, &status, cap);
    unsigned kept = 0, not_kept, faults;
    table_counts(a->table, &kept, &not_kept, &faults);
    if (kept) {
        char abs[4200];
        if (realpath(a->table, abs))
            snprintf(a->table, sizeof a->table, "%s", abs);
        setenv("GPUACCEL_TUNE_TABLE", a->table, 1); /* every run from here on reads it */
        fprintf(stderr, "gpuaccel advise: tune: %u verified entr%s in %s (%.1f s)\n", kept,
                kept == 1 ? "y" : "ies", a->table, now_s() - t0);
    } else {
        fprintf(stderr, "gpuaccel advise: tune: no faster configuration proved%s (%.1f s)\n",
                stopped ? " before the tuner was stopped at its share of the budget" : "",
                now_s() - t0);
        unlink(a->table);
        a->table[0] = '\0';
    }
}

/* ---- the settings ------------------------------------------------------------------ */
/* The available features, best estimate first: would help (by saving), then
 * those a measurement alone can tell, then the rest; unranked ones keep the
 * list's order among themselves. */
static void rank_features(advise_t *a)
{
    int tune = feature_index("tune");
    for (int i = 0; i < N_FEATURES; i++)
        if (i != tune || a->table[0])
            a->avail |= 1u << i;
    static const unsigned rank[] = {[PF_HELPS] = 0, [PF_UNKNOWN] = 1, [PF_NO] = 2};
    for (int i = 0; i < N_FEATURES; i++) {
        if (!bit(a->avail, i))
            continue;
        unsigned r = a->est[i].have ? rank[a->est[i].verdict] : 1, j = a->n_order++;
        for (; j > 0; j--) {
            const estimate_t *p = &a->est[a->order[j - 1]];
            unsigned pr = p->have ? rank[p->verdict] : 1;
            if (pr < r || (pr == r && (r != 0 || p->saving_ns >= a->est[i].saving_ns)))
                break;
            a->order[j] = a->order[j - 1];
        }
        a->order[j] = (unsigned)i;
    }
}

/* The profile saw nothing the feature would act on. */
static bool idle(const advise_t *a, int i)
{
    return a->est[i].have && a->est[i].acts_on == 0;
}

/* The effective mask of a row (the defaults' is the named set's). */
static unsigned mask_of(const row_t *r)
{
    return r->set && !strcmp(r->set, "safe") ? safe_mask() : r->mask;
}

/* A setting, unless one with the same features is there already. */
static void add_setting(advise_t *a, const char *label, unsigned mask, const char *set)
{
    bench_t *b = &a->b;
    row_t probe = {.mask = mask, .set = set};
    for (unsigned i = 1; i < b->nrows; i++)
        if (mask_of(&b->rows[i]) == mask_of(&probe))
            return;
    if (!bench_add(b, label, false, mask, set))
        die(EX_FAIL, "out of memory");
}

static void first_settings(advise_t *a)
{
    char label[96], skipped[256] = "";
    unsigned all = a->avail;
    for (unsigned k = 0; k < a->n_order; k++) {
        int i = (int)a->order[k];
        if (idle(a, i))
            snprintf(skipped + strlen(skipped), sizeof skipped - strlen(skipped), "%s%s",
                     *skipped ? ", " : "", features[i]);
        else
            add_setting(a, features[i], 1u << i, NULL);
    }
    add_setting(a, "all", all, NULL);
    for (unsigned k = 0; k < a->n_order; k++) {
        int i = (int)a->order[k];
        snprintf(label, sizeof label, "all-%s", features[i]);
        if (!idle(a, i))
            add_setting(a, label, all & ~(1u << i), NULL);
    }
    add_setting(a, "defaults", safe_mask(), "safe");
    if (*skipped)
        fprintf(stderr, "gpuaccel advise: not tried alone or left out alone: %s (the profile saw "
                        "nothing they would act on)\n", skipped);
}

/* The defaults plus each feature that paid alone (beat native in every pair). */
static unsigned paid_settings(advise_t *a)
{
    bench_t *b = &a->b;
    unsigned added = 0, defaults = safe_mask();
    char label[96];
    for (unsigned k = 0; k < a->n_order; k++) {
        int i = (int)a->order[k];
        if (bit(defaults, i))
            continue;
        for (unsigned r = 1; r < b->nrows; r++) {
            const row_t *w = &b->rows[r];
            if (w->set || w->mask != 1u << i || w->failed || !w->agree || !(w->lo > 1.0))
                continue;
            unsigned before = b->nrows;
            snprintf(label, sizeof label, "defaults+%s", features[i]);
            add_setting(a, label, defaults | 1u << i, NULL);
            added += b->nrows > before;
        }
    }
    return added;
}

/* ---- the rounds -------------------------------------------------------------------- */
/* One round: native, then each setting of `which`, the order rotated. A
 * setting whose run fails or whose output differs is left out from then on. */
static bool round_of(advise_t *a, const unsigned *which, unsigned n)
{
    bench_t *b = &a->b;
    unsigned k = b->rounds;
    if (!bench_run(b, &b->rows[0], false)) {
        b->rounds++;
        return false;
    }
    for (unsigned i = 0; i < n && !interrupted; i++) {
        row_t *r = &b->rows[which[(i + k) % n]];
        if (r->failed || !r->agree)
            continue;
        if (!bench_run(b, r, false) && !interrupted) {
            r->failed = true;
            fprintf(stderr, "gpuaccel advise: %s is left out: its run failed\n", r->label);
        } else if (!r->agree) {
            fprintf(stderr, "gpuaccel advise: %s is left out: its output differs\n", r->label);
        }
    }
    b->rounds++;
    b->done = b->rows[0].n;
    return !interrupted;
}

/* Warm-up runs of each setting, not counted (native's first sets the
 * reference output). */
static bool warm(advise_t *a, unsigned from)
{
    bench_t *b = &a->b;
    for (unsigned w = 0; w < b->o->warmup; w++)
        for (unsigned i = from; i < b->nrows && !interrupted; i++) {
            row_t *r = &b->rows[i];
            if (!r->failed && !bench_run(b, r, true) && !interrupted) {
                if (r->native)
                    return false;
                r->failed = true;
                fprintf(stderr, "gpuaccel advise: %s is left out: its run failed\n", r->label);
            }
        }
    return !interrupted;
}

/* A row's interval of the median speedup; with fewer than 3 runs, its ratio
 * widened by native's own relative spread (at least 2%): too few runs for a
 * bootstrap to say anything. */
static void interval(const bench_t *b, const row_t *r, double *lo, double *hi)
{
    if (r->n >= 3) {
        *lo = r->lo, *hi = r->hi;
        return;
    }
    const row_t *n = &b->rows[0];
    double m = n->n > 1 && n->median > 0 ? (n->max - n->min) / n->median : 0;
    m = m < 0.02 ? 0.02 : m;
    *lo = r->pmed / (1 + m), *hi = r->pmed * (1 + m);
}

static bool usable(const row_t *r)
{
    return !r->native && !r->fresh && !r->failed && r->agree && r->n > 0 && !isnan(r->pmed);
}

/* The best setting (the highest median speedup), and the settings whose
 * intervals reach its own (each index into rows; *n of them). */
static const row_t *standing(const bench_t *b, unsigned *close, unsigned *n)
{
    const row_t *best = NULL;
    for (unsigned i = 1; i < b->nrows; i++)
        if (usable(&b->rows[i]) && (!best || b->rows[i].pmed > best->pmed))
            best = &b->rows[i];
    *n = 0;
    if (!best)
        return NULL;
    double blo, bhi, lo, hi;
    interval(b, best, &blo, &bhi);
    for (unsigned i = 1; i < b->nrows; i++) {
        const row_t *r = &b->rows[i];
        if (r == best || !usable(r))
            continue;
        interval(b, r, &lo, &hi);
        if (hi >= blo)
            close[(*n)++] = i;
    }
    return best;
}

/* The pick: the fastest median (standing), unless the defaults are among the
 * settings the data cannot separate from it and beat native on their own
 * interval. Then the defaults: a faster median that no interval confirms is
 * as likely luck (on stwo-gpu's commitment, whose runs spread 30%, such
 * picks were 13% slower than the best setting in the exhaustive rounds), and
 * the defaults need no file and are the setting every test runs. *fastest
 * gets standing's best. */
static const row_t *pick_of(const bench_t *b, const row_t **fastest)
{
    unsigned *close = malloc(b->nrows * sizeof *close), n = 0;
    const row_t *best = close ? standing(b, close, &n) : NULL, *pick = best;
    *fastest = best;
    for (unsigned i = 0; best && i < n && pick == best; i++) {
        const row_t *r = &b->rows[close[i]];
        double lo, hi;
        interval(b, r, &lo, &hi);
        if (mask_of(r) == safe_mask() && lo > 1.0)
            pick = r;
    }
    free(close);
    return pick;
}

/* Decide the pick from the runs so far (check_pick, or the advice when the
 * search ended before it). */
static void decide(advise_t *a)
{
    const bench_t *b = &a->b;
    const row_t *fastest = NULL, *best = pick_of(b, &fastest);
    pick_t *pk = &a->pk;
    *pk = (pick_t){.decided = true, .none = !best};
    if (!best)
        return;
    interval(b, best, &pk->lo, &pk->hi);
    pk->mask = mask_of(best), pk->fastest = mask_of(fastest);
}

/* The row of the features `mask`: the search's, or with `fresh` the pick's
 * fresh one (check_pick); NULL if none. The settings' masks are unique
 * (add_setting), so the mask names it. */
static const row_t *row_by_mask(const bench_t *b, unsigned mask, bool fresh)
{
    for (unsigned i = 1; i < b->nrows; i++)
        if (!b->rows[i].native && b->rows[i].fresh == fresh && mask_of(&b->rows[i]) == mask)
            return &b->rows[i];
    return NULL;
}

/* The settings whose intervals reach the fastest's, but `pick` and `fastest`,
 * as a list in buf; how many. */
static unsigned rivals_of(const bench_t *b, const row_t *pick, const row_t *fastest, char *buf,
                          size_t cap)
{
    unsigned *close = malloc(b->nrows * sizeof *close), n = 0, k = 0;
    *buf = 0;
    if (close && standing(b, close, &n))
        for (unsigned i = 0; i < n; i++) {
            const row_t *r = &b->rows[close[i]];
            if (r != pick && r != fastest)
                snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", k++ ? ", " : "", r->label);
        }
    free(close);
    return k;
}

static unsigned fresh_rounds(const advise_t *a)
{
    return a->b.o->runs > FRESH_MIN ? a->b.o->runs : FRESH_MIN;
}

/* What the pick's fresh rounds will take (two runs each, as long as the
 * profiled one: an upper bound, the profiler's own cost in it). */
static double fresh_cost(const advise_t *a)
{
    return 2.0 * fresh_rounds(a) * a->profile_s;
}

/* Repeats the best setting and those that reach it until their intervals
 * separate (and the best's from native's 1.0x) or the budget is spent. */
static void refine(advise_t *a)
{
    bench_t *b = &a->b;
    unsigned *close = malloc(b->nrows * sizeof *close), *which = malloc(b->nrows * sizeof *which);
    unsigned last = 0;
    double until = b->o->budget_s - fresh_cost(a); /* the pick's fresh rounds come after */
    while (close && which && !interrupted && spent(a) < until) {
        bench_stats(b);
        unsigned n, m = 0;
        const row_t *best = standing(b, close, &n);
        if (!best)
            break;
        double lo, hi;
        interval(b, best, &lo, &hi);
        bool native_close = lo <= 1.0 && hi >= 1.0;
        if (!n && !native_close)
            break; /* separated from every other, and from native */
        if (best->n < MAX_RUNS)
            which[m++] = (unsigned)(best - b->rows);
        for (unsigned i = 0; i < n; i++)
            if (b->rows[close[i]].n < MAX_RUNS)
                which[m++] = close[i];
        if (!m)
            break;
        if (m != last)
            fprintf(stderr, "gpuaccel advise: repeating %u close setting%s (%.0f s of %.0f s "
                            "spent)\n", m, m == 1 ? "" : "s", spent(a), b->o->budget_s);
        last = m;
        if (!round_of(a, which, m))
            break;
    }
    free(close);
    free(which);
}

/* The search took the highest of many medians, and such a maximum is biased
 * upward: the pick's lucky runs helped make it the pick, so the same runs
 * overstate its speedup (on a prover whose runs spread 30%, by a quarter
 * against `ab --config`). The pick, when there is one, gets fresh rounds
 * with native: a row of its own, "LABEL (fresh)", never a candidate, whose
 * paired ratios the advice reports (as ab would measure the written file). */
static void check_pick(advise_t *a)
{
    bench_t *b = &a->b;
    bench_stats(b);
    decide(a);
    if (native_pick(&a->pk) || interrupted)
        return; /* no pick: the advice is native */
    const row_t *best = row_by_mask(b, a->pk.mask, false);
    char label[96];
    snprintf(label, sizeof label, "%.80s (fresh)", best->label);
    unsigned mask = best->mask;
    const char *set = best->set;
    row_t *r = bench_add(b, label, false, mask, set); /* may move the rows: best is stale */
    if (!r)
        die(EX_FAIL, "out of memory");
    r->fresh = true;
    unsigned idx = b->nrows - 1, k = fresh_rounds(a);
    fprintf(stderr, "gpuaccel advise: %u fresh rounds of the pick, %s, with native\n", k,
            label);
    for (unsigned i = 0; i < k && !b->rows[idx].failed && b->rows[idx].agree; i++)
        if (!round_of(a, &idx, 1))
            break;
}

/* The rounds every setting in [from, nrows) gets: until each has `runs`
 * measured runs, the first always, the others while the budget lasts. */
static bool catch_up(advise_t *a, unsigned from, unsigned runs)
{
    bench_t *b = &a->b;
    unsigned *which = malloc(b->nrows * sizeof *which);
    bool ok = which != NULL;
    for (unsigned k = 0; ok && k < runs; k++) {
        if (k && spent(a) >= b->o->budget_s)
            break;
        unsigned m = 0;
        for (unsigned i = from; i < b->nrows; i++)
            if (!b->rows[i].failed && b->rows[i].agree && b->rows[i].n <= k)
                which[m++] = i;
        if (!m)
            break;
        fprintf(stderr, "gpuaccel advise: round %u: %u settings (%.0f s spent)\n", k + 1, m,
                spent(a));
        ok = round_of(a, which, m);
    }
    free(which);
    return ok;
}

/* ---- the advice -------------------------------------------------------------------- */
/* "pool,coalesce" for the features on (off: the others); "none". */
static void mask_names(unsigned mask, unsigned among, bool on, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_FEATURES; i++)
        if (bit(among, i) && bit(mask, i) == on)
            len += (size_t)snprintf(buf + len, cap > len ? cap - len : 0, "%s%s", len ? "," : "",
                                    features[i]);
    if (!len)
        snprintf(buf, cap, "none");
}

static int write_config(const advise_t *a, const row_t *win, const char *why)
{
    const opts_t *o = a->b.o;
    FILE *f = fopen(o->write, "w");
    if (!f)
        return die(EX_USAGE, "--write %s: %s", o->write, strerror(errno));
    char measure[1200];
    bench_measure_text(&a->b, measure, sizeof measure);
    fprintf(f, "# gpuaccel advise: %s\n# measure: %s\n# check: gpuaccel ab --config %s -- ...\n",
            why, measure, o->write);
    fprintf(f, "GPUACCEL=0\n");
    unsigned mask = win ? mask_of(win) : 0;
    for (int i = 0; win && i < N_FEATURES; i++)
        fprintf(f, "%s=%d\n", feature_vars[i], bit(mask, i));
    int tune = feature_index("tune");
    if (win && tune >= 0 && bit(mask, tune) && a->table[0])
        fprintf(f, "GPUACCEL_TUNE_TABLE=%s\n", a->table);
    return fclose(f) == 0 ? EX_OK : die(EX_FAIL, "--write %s: %s", o->write, strerror(errno));
}

static void print_command(const advise_t *a, const row_t *win)
{
    const opts_t *o = a->b.o;
    char on[256], off[256];
    unsigned mask = win ? mask_of(win) : 0;
    mask_names(mask, (1u << N_FEATURES) - 1, true, on, sizeof on);
    mask_names(mask, (1u << N_FEATURES) - 1, false, off, sizeof off);
    printf("environment: GPUACCEL=0");
    for (int i = 0; win && i < N_FEATURES; i++)
        printf(" %s=%d", feature_vars[i], bit(mask, i));
    int tune = feature_index("tune");
    if (win && tune >= 0 && bit(mask, tune) && a->table[0])
        printf(" GPUACCEL_TUNE_TABLE=%s", a->table);
    printf("\ncommand: gpuaccel run");
    if (o->write)
        printf(" --config %s", o->write);
    else if (!win)
        printf(" --disable all");
    else
        printf(" --disable all --enable %s", on);
    printf(" --");
    for (char **c = o->cmd; *c; c++)
        printf(" %s", *c);
    if (o->write) {
        printf("\ncheck: gpuaccel ab --config %s --", o->write);
        for (char **c = o->cmd; *c; c++)
            printf(" %s", *c);
    }
    printf("\n");
}

/* Did the pick hold on its fresh runs (check_pick)? Its interval in *lo,
 * *hi when it did (or when it has none: interrupted before them). */
static bool held(const bench_t *b, const row_t *pick, double *lo, double *hi)
{
    const row_t *f = row_by_mask(b, mask_of(pick), true);
    if (!f)
        return true;
    if (f->failed || !f->agree || f->n == 0 || isnan(f->pmed))
        return false;
    interval(b, f, lo, hi);
    return *lo > 1.0;
}

/* What the pick's fresh runs showed when it did not hold, in buf. */
static const char *fresh_failure(const row_t *f, double lo, double hi, char *buf, size_t cap)
{
    if (f->failed)
        return "failed";
    if (!f->agree)
        return "printed other outputs";
    snprintf(buf, cap, "do not separate it from native (%.2fx, 95%% interval %.2f-%.2fx, "
             "%u runs)", f->pmed, lo, hi, f->n);
    return buf;
}

/* The advice, in words; the setting (NULL: native) and its one-line reason. */
static const row_t *advise(const advise_t *a, char *why, size_t cap)
{
    const bench_t *b = &a->b;
    const pick_t *pk = &a->pk;
    const row_t *best = pk->none ? NULL : row_by_mask(b, pk->mask, false);
    const row_t *fastest = pk->none ? NULL : row_by_mask(b, pk->fastest, false);
    if (!best || !fastest) {
        printf("advice: no setting ran with outputs equal to the native run's and without "
               "failing; run it natively (GPUACCEL=0)\n");
        snprintf(why, cap, "no setting ran with equal outputs; native");
        return NULL;
    }
    double lo = pk->lo, hi = pk->hi; /* as decided: the fresh rounds moved native's spread */
    char on[256], rivals[512];
    mask_names(mask_of(best), a->avail, true, on, sizeof on);
    unsigned n = rivals_of(b, best, fastest, rivals, sizeof rivals);
    const row_t *win = NULL;
    if (hi < 1.0) {
        printf("advice: every setting ran slower than native (the best, %s, %.2fx, 95%% "
               "interval %.2f-%.2fx); run it natively (GPUACCEL=0)\n", best->label, best->pmed,
               lo, hi);
        snprintf(why, cap, "every setting ran slower than native; native");
    } else if (native_pick(pk)) {
        printf("advice: the data cannot separate any setting from native: the fastest median, "
               "%s (%s on), is %.2fx with a 95%% interval of %.2f-%.2fx after %u runs; run it "
               "natively (GPUACCEL=0), or measure longer (--budget)\n", best->label, on,
               best->pmed, lo, hi, best->n);
        snprintf(why, cap, "nothing separated from native (the fastest median: %s, %.2fx, "
                 "%.2f-%.2fx); native", best->label, best->pmed, lo, hi);
    } else if (!held(b, best, &lo, &hi)) {
        const row_t *f = row_by_mask(b, mask_of(best), true);
        char fb[160];
        printf("advice: %s (%s on) was %s in the search, %.2fx of native, but its fresh runs "
               "%s; run it natively (GPUACCEL=0), or measure longer (--budget)\n", best->label,
               on, best == fastest ? "the fastest" : "the pick (the defaults, not separated from "
               "the fastest)", best->pmed, fresh_failure(f, lo, hi, fb, sizeof fb));
        snprintf(why, cap, "%s did not hold on fresh runs; native", best->label);
    } else {
        win = best;
        const row_t *f = row_by_mask(b, mask_of(best), true);
        printf("advice: %s (%s on): %.2fx of native, 95%% interval %.2f-%.2fx, %u runs", best->label,
               on, f ? f->pmed : best->pmed, lo, hi, f ? f->n : best->n);
        if (f)
            printf(" after the search (which measured %.2fx over %u runs)", best->pmed, best->n);
        if (best != fastest)
            printf("; the data cannot separate them from %s (%.2fx, the fastest median)%s%s "
                   "(their intervals overlap: measure longer with --budget to tell them apart), "
                   "and among settings it cannot tell apart the defaults are advised",
                   fastest->label, fastest->pmed, *rivals ? ", " : "", rivals);
        else if (n)
            printf("; the data cannot separate it from %s (their intervals overlap: measure "
                   "longer with --budget to tell them apart); each of them beats native too",
                   rivals);
        else
            printf("; separated from every other setting");
        printf("\n");
        snprintf(why, cap, "%s, %.2fx of native (95%% interval %.2f-%.2fx, %u runs)%s%s",
                 best->label, f ? f->pmed : best->pmed, lo, hi, f ? f->n : best->n,
                 best != fastest || n ? "; not separated from " : "",
                 best != fastest ? fastest->label : n ? rivals : "");
    }
    return win;
}

/* The rows by median speedup, native first: the table reads best first. */
static int by_speedup(const void *x, const void *y)
{
    const row_t *p = x, *q = y;
    if (p->native != q->native)
        return p->native ? -1 : 1;
    double a = isnan(p->pmed) ? -1 : p->pmed, b = isnan(q->pmed) ? -1 : q->pmed;
    return (a < b) - (a > b);
}

int cmd_advise(int argc, char **argv)
{
    static opts_t opts = {.runs = 3, .warmup = 0, .budget_s = 120, .ab_feature = -1};
    opts_t *o = &opts;
    int rc = parse_opts(argc, argv, o);
    if (rc != EX_OK)
        return rc;
    static advise_t a;
    bench_t *b = &a.b;
    if ((rc = bench_setup(b, o, "advise")) != EX_OK)
        return rc;
    if (!o->check_digest && !o->check_file)
        fprintf(stderr, "gpuaccel advise: no --check-digest or --check-file: outputs are not "
                        "compared\n");
    if ((rc = window_of(&a)) != EX_OK) {
        bench_cleanup(b);
        return rc;
    }
    bench_signals(true);
    profile_once(&a);
    window_remove(&a.win);
    if (!interrupted)
        tune_once(&a);
    rank_features(&a);
    first_settings(&a);
    a.t0 = now_s();
    b->t0 = a.t0;
    unsigned nset = b->nrows - 1;
    if (a.profile_s > 0) {
        char run[32], round[32];
        fmt_time(run, sizeof run, a.profile_s);
        fmt_time(round, sizeof round, a.profile_s * (nset + 1));
        fprintf(stderr, "gpuaccel advise: %u settings; a run takes ~%s (the profiled one), a round "
                        "of all ~%s; --budget %.0f s\n", nset, run, round, o->budget_s);
    }
    bool ok = !interrupted && warm(&a, 0) && catch_up(&a, 1, o->runs);
    if (ok) {
        bench_stats(b);
        unsigned from = b->nrows;
        if (paid_settings(&a)) {
            fprintf(stderr, "gpuaccel advise: the defaults plus each feature that paid alone\n");
            ok = warm(&a, from) && catch_up(&a, from, o->runs);
        }
    }
    if (ok) {
        refine(&a);
        check_pick(&a);
    }
    bench_cleanup(b);
    if (!ok && !interrupted) {
        bench_signals(false);
        if (a.table_ours)
            unlink(a.table);
        return EX_FAIL;
    }
    bench_stats(b);
    if (!a.pk.decided)
        decide(&a);
    qsort(b->rows, b->nrows, sizeof b->rows[0], by_speedup);
    b->done = b->rows[0].n;
    bench_table(stdout, b, true);
    char why[1200];
    const row_t *win = NULL;
    if (interrupted) {
        printf("advice: none: interrupted after %.0f s (the table has the runs completed)\n",
               spent(&a));
    } else {
        win = advise(&a, why, sizeof why);
        print_command(&a, win);
    }
    bool agree = true;
    for (unsigned i = 0; i < b->nrows; i++)
        agree = agree && b->rows[i].agree;
    int erc = bench_exports(b, agree);
    if (o->write && !interrupted && (rc = write_config(&a, win, why)) != EX_OK)
        erc = rc;
    bench_signals(false); /* kept through the exports, as ab does */
    int tune = feature_index("tune");
    bool keep = win && tune >= 0 && bit(mask_of(win), tune);
    if (a.table_ours && !keep)
        unlink(a.table);
    else if (a.table_ours && !o->write)
        printf("note: tune's table is %s (--write FILE keeps it as FILE.tune.table)\n", a.table);
    for (unsigned i = 0; i < BUSIEST; i++)
        free(a.busy[i].name);
    if (interrupted)
        return 128 + interrupted;
    return erc;
}
