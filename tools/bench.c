/* bench.c - the measurement ab and advise share (bench.h): each run of a
 * setting in a fresh process with its output captured, the measure taken of
 * it (wall time, the program's own number, or the time between two of its
 * lines), the check of what it printed or wrote against the native run's,
 * the rounds, and the statistics.
 *
 * Owns: the capture files, the signal flag, and forwarding a signal to the
 * run in flight.
 * Must never: let the caller's GPUACCEL_* environment leak into a row (each
 * row sets every switch, or names a set and unsets every switch); count a run
 * an interrupt cut short. */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

volatile sig_atomic_t interrupted;

/* ---- the environment of a run ------------------------------------------------------ */
static void child_env(const bench_t *b, const row_t *r)
{
    if (r->native)
        return;
    preload(b->lib);
    /* A named set leaves every switch to it (a switch set one by one that
     * cannot act, tune without a table, would be warned about); otherwise
     * each is set, over whatever GPUACCEL the user has. */
    bool all = r->mask == (1u << N_FEATURES) - 1 && !r->set;
    const char *set = r->set ? r->set : all ? "all" : "safe";
    if (!strcmp(set, "config")) { /* --config FILE: the file decides */
        char abs[PATH_MAX];
        setenv("GPUACCEL_CONFIG", realpath(b->o->config, abs) ? abs : b->o->config, 1);
        unsetenv("GPUACCEL");
        for (int i = 0; i < N_FEATURES; i++)
            unsetenv(feature_vars[i]);
        return;
    }
    setenv("GPUACCEL", set, 1);
    for (int i = 0; i < N_FEATURES; i++)
        if (r->set || all)
            unsetenv(feature_vars[i]);
        else
            setenv(feature_vars[i], r->mask & (1u << i) ? "1" : "0", 1);
}

/* ---- one run ----------------------------------------------------------------------- */
/* Waits for pid; an interrupt is passed on to it once (a program that the
 * terminal's Ctrl-C reached already gets it twice: it is not counted anyway). */
static void wait_child(pid_t pid, int *status)
{
    bool passed = false;
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR)
            return;
        if (interrupted && !passed)
            kill(pid, interrupted), passed = true;
    }
}

/* Runs the program once. Returns the wall time (the phase's, for --phase),
 * *status set; a negative value when the program could not be started or,
 * for --phase, a line never came (*phase_missing: START or END). */
static double run_once(const bench_t *b, const row_t *r, int *status, const char **phase_missing)
{
    bool piped = b->o->measure == M_PHASE;
    pipes_t pp;
    *phase_missing = NULL;
    if (piped && !pipes_open(&pp))
        return -1;
    fflush(NULL);
    int files[2] = {open(b->outfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
                    open(b->errfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
    if (files[0] < 0 || files[1] < 0)
        return -1;
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (piped ? !pipes_child(&pp) : (dup2(files[0], 1) < 0 || dup2(files[1], 2) < 0))
            _exit(EX_FAIL);
        signal(SIGINT, SIG_DFL), signal(SIGTERM, SIG_DFL);
        child_env(b, r);
        execv(b->path, b->o->cmd);
        _exit(EX_NOEXEC);
    }
    phase_t ph;
    phase_init(&ph, &b->start_re, &b->end_re, NULL);
    if (piped)
        pipes_pump(&pp, files, &ph);
    wait_child(pid, status);
    double t = now_s() - t0;
    close(files[0]), close(files[1]);
    if (!piped)
        return t;
    if (ph.start < 0)
        return *phase_missing = b->o->phase_start, -1;
    if (ph.end < 0)
        return *phase_missing = b->o->phase_end, -1;
    return ph.end - ph.start;
}

/* ---- what a run printed ------------------------------------------------------------ */
/* The first stdout line matching --check-digest, or the --check-file's bytes.
 * NULL with *len 0 when nothing is compared; NULL with *len 1 when the digest
 * pattern matched no line. */
static char *observed(bench_t *b, size_t *len)
{
    *len = 0;
    if (b->o->check_file) {
        char *f = slurp(b->o->check_file);
        *len = f ? strlen(f) : 0;
        struct stat st;
        if (f && stat(b->o->check_file, &st) == 0)
            *len = (size_t)st.st_size; /* binary files: compare every byte */
        return f ? f : strdup("(file missing)");
    }
    if (!b->o->check_digest)
        return NULL;
    char *text = slurp(b->outfile), *line = NULL;
    for (char *save = NULL, *l = text ? strtok_r(text, "\n", &save) : NULL; l && !line;
         l = strtok_r(NULL, "\n", &save))
        if (regexec(&b->digest_re, l, 0, NULL, 0) == 0)
            line = strdup(l);
    free(text);
    *len = line ? strlen(line) : 1;
    return line;
}

/* --metric: the first group of the last stdout line matching the pattern. */
static bool metric_of(bench_t *b, const row_t *r, double *v)
{
    char *text = slurp(b->outfile), *last = NULL;
    regmatch_t m[2], keep[2];
    for (char *save = NULL, *l = text ? strtok_r(text, "\n", &save) : NULL; l;
         l = strtok_r(NULL, "\n", &save))
        if (regexec(&b->metric_re, l, 2, m, 0) == 0 && m[1].rm_so >= 0)
            last = l, keep[0] = m[0], keep[1] = m[1];
    bool ok = false;
    if (!last) {
        die(EX_FAIL, "%s: --metric '%s' matched no line of the %s run's standard output",
            b->tool, b->o->metric, r->label);
    } else {
        char num[128], *end;
        int n = (int)(keep[1].rm_eo - keep[1].rm_so);
        snprintf(num, sizeof num, "%.*s", n, last + keep[1].rm_so);
        *v = strtod(num, &end);
        ok = end != num && *end == '\0' && isfinite(*v);
        if (!ok)
            die(EX_FAIL, "%s: --metric '%s': the %s run's line '%s' gives '%s', not a number",
                b->tool, b->o->metric, r->label, last, num);
    }
    free(text);
    return ok;
}

static void show_stderr_tail(const bench_t *b)
{
    char *e = slurp(b->errfile);
    size_t n = e ? strlen(e) : 0;
    if (n)
        fprintf(stderr, "--- its stderr (last lines) ---\n%s%s", e + (n > 2000 ? n - 2000 : 0),
                e[n - 1] == '\n' ? "" : "\n");
    free(e);
}

static bool record(row_t *r, double v, unsigned round)
{
    if (r->n == r->cap) {
        unsigned cap = r->cap ? r->cap * 2 : 16;
        double *t = realloc(r->t, cap * sizeof *t);
        if (t)
            r->t = t;
        unsigned *k = realloc(r->round, cap * sizeof *k);
        if (k)
            r->round = k;
        if (!t || !k)
            return die(EX_FAIL, "out of memory"), false;
        r->cap = cap;
    }
    r->t[r->n] = v, r->round[r->n] = round, r->n++;
    return true;
}

bool bench_run(bench_t *b, row_t *r, bool warm)
{
    int status = 0;
    const char *missing;
    double t = run_once(b, r, &status, &missing);
    if (interrupted)
        return false;
    char how[96];
    describe_status(status, how, sizeof how);
    bool exited = WIFEXITED(status);
    if (t < 0 && !missing) {
        return die(EX_FAIL, "%s: cannot run '%s': %s", b->tool, b->o->cmd[0], strerror(errno)),
               false;
    }
    if (!exited || (WEXITSTATUS(status) != 0 && !b->o->ignore_failure)) {
        die(EX_FAIL, "%s run of '%s' failed (%s)", r->label, b->o->cmd[0], how);
        show_stderr_tail(b);
        return false;
    }
    if (missing) {
        die(EX_FAIL, "%s: --phase: no line of the %s run's output matched '%s'%s", b->tool,
            r->label, missing, missing == b->o->phase_end ? " after the START line" : "");
        return false;
    }
    if (b->o->measure == M_METRIC && !metric_of(b, r, &t))
        return false;
    size_t len;
    char *got = observed(b, &len);
    if (!got && len) {
        die(EX_FAIL, "%s: --check-digest '%s' matched no line of the %s run's standard output",
            b->tool, b->o->check_digest, r->label);
        return false;
    }
    if (got && !b->reference && r->native) {
        b->reference = got, b->ref_len = len;
    } else if (got && b->reference) {
        r->checked = true;
        if (len != b->ref_len || memcmp(got, b->reference, len)) {
            if (r->agree && b->o->check_digest)
                fprintf(stderr, "gpuaccel: %s output differs:\n  native: %s\n  %s: %s\n",
                        r->label, b->reference, r->label, got);
            else if (r->agree)
                fprintf(stderr, "gpuaccel: %s: %s differs from the native run's\n", r->label,
                        b->o->check_file);
            r->agree = false;
        }
        free(got);
    } else {
        free(got);
    }
    return warm || record(r, t, b->rounds);
}

bool bench_round(bench_t *b, const unsigned *which, unsigned n)
{
    unsigned k = b->rounds;
    bool ok = bench_run(b, &b->rows[0], false);
    for (unsigned i = 0; ok && i < n && !interrupted; i++)
        ok = bench_run(b, &b->rows[which[(i + k) % n]], false);
    b->rounds++;
    return ok && !interrupted;
}

/* ---- rows -------------------------------------------------------------------------- */
row_t *bench_add(bench_t *b, const char *label, bool native, unsigned mask, const char *set)
{
    if (b->nrows == b->cap_rows) {
        unsigned cap = b->cap_rows ? b->cap_rows * 2 : 16;
        row_t *rows = realloc(b->rows, cap * sizeof *rows);
        if (!rows)
            return NULL;
        b->rows = rows, b->cap_rows = cap;
    }
    row_t *r = &b->rows[b->nrows++];
    *r = (row_t){.native = native, .mask = mask, .set = set, .agree = true};
    snprintf(r->label, sizeof r->label, "%s", label);
    return r;
}

/* ---- the statistics ---------------------------------------------------------------- */
static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median_of(double *s, unsigned n) /* sorts s */
{
    qsort(s, n, sizeof *s, cmp_double);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* The 95% percentile interval of the median of v[0..n) (2,000 resamples, a
 * fixed seed: the same data give the same interval). With few values it is
 * their range: the median of 3 or 5 resampled values is often the smallest. */
static void bootstrap(const double *v, unsigned n, double *lo, double *hi)
{
    enum { B = 2000 };
    static double meds[B];
    double *s = malloc(n * sizeof *s);
    if (!s || !n) {
        free(s);
        *lo = *hi = NAN;
        return;
    }
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (unsigned k = 0; k < B; k++) {
        for (unsigned i = 0; i < n; i++) {
            x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
            s[i] = v[(x * 0x2545f4914f6cdd1dull >> 33) % n];
        }
        meds[k] = median_of(s, n);
    }
    free(s);
    qsort(meds, B, sizeof meds[0], cmp_double);
    *lo = meds[B / 40], *hi = meds[B - 1 - B / 40];
}

static void stats_of(row_t *r)
{
    unsigned n = r->n;
    r->median = r->min = r->max = r->mean = r->sd = NAN;
    if (!n)
        return;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return;
    memcpy(s, r->t, n * sizeof *s);
    r->median = median_of(s, n);
    r->min = s[0];
    r->max = s[n - 1];
    double sum = 0, sq = 0;
    for (unsigned i = 0; i < n; i++)
        sum += s[i];
    r->mean = sum / n;
    for (unsigned i = 0; i < n; i++)
        sq += (s[i] - r->mean) * (s[i] - r->mean);
    r->sd = n > 1 ? sqrt(sq / (n - 1)) : 0; /* the sample standard deviation */
    free(s);
}

/* Speedup = native median / this median; its spread is the range of the
 * paired ratios (native's run of the same round over this run: the runs
 * alternate, so pairs share conditions), and the interval is the bootstrap
 * interval of their median. */
static void ratios_of(row_t *r, const row_t *native)
{
    r->ratio = native->median / r->median;
    r->rmin = r->rmax = r->pmed = r->lo = r->hi = NAN;
    double *q = malloc((r->n ? r->n : 1) * sizeof *q);
    unsigned m = 0;
    for (unsigned i = 0; q && i < r->n; i++)
        for (unsigned j = 0; j < native->n; j++)
            if (native->round[j] == r->round[i] && r->t[i] > 0) {
                q[m++] = native->t[j] / r->t[i];
                break;
            }
    for (unsigned i = 0; i < m; i++) {
        r->rmin = i && r->rmin < q[i] ? r->rmin : q[i];
        r->rmax = i && r->rmax > q[i] ? r->rmax : q[i];
    }
    if (m) {
        bootstrap(q, m, &r->lo, &r->hi);
        r->pmed = median_of(q, m);
    }
    free(q);
}

void bench_stats(bench_t *b)
{
    for (unsigned i = 0; i < b->nrows; i++)
        stats_of(&b->rows[i]);
    for (unsigned i = 1; i < b->nrows; i++)
        ratios_of(&b->rows[i], &b->rows[0]);
}

/* ---- ab's rounds --------------------------------------------------------------------- */
static void on_signal(int sig)
{
    interrupted = sig;
}

void bench_signals(bool on)
{
    static struct sigaction old_int, old_term;
    if (on) {
        struct sigaction sa = {.sa_handler = on_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
    } else {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
}

void bench_progress(const bench_t *b, unsigned done, unsigned total)
{
    if (!isatty(STDERR_FILENO))
        return;
    if (done >= total) {
        fprintf(stderr, "\r%60s\r", "");
        return;
    }
    double spent = now_s() - b->t0, left = done ? spent / done * (total - done) : 0;
    char eta[32];
    fmt_time(eta, sizeof eta, left);
    fprintf(stderr, "\rgpuaccel: run %u of %u%s%s   ", done + 1, total,
            done ? ", about " : "", done ? eta : "");
    if (done)
        fputs(" left", stderr);
}

int bench_measure_all(bench_t *b)
{
    const opts_t *o = b->o;
    unsigned total = b->nrows * (o->runs + o->warmup), n = 0;
    bench_signals(true);
    b->t0 = now_s();
    b->done = 0;
    bool ok = true;
    for (unsigned w = 0; w < o->warmup && ok && !interrupted; w++) /* native's sets the reference */
        for (unsigned i = 0; i < b->nrows && ok && !interrupted; i++, n++) {
            bench_progress(b, n, total);
            ok = bench_run(b, &b->rows[i], true);
        }
    for (unsigned k = 0; k < o->runs && ok && !interrupted; k++) {
        /* ab keeps its rows' order in every round: native, then each row */
        for (unsigned i = 0; i < b->nrows && ok && !interrupted; i++, n++) {
            bench_progress(b, n, total);
            ok = bench_run(b, &b->rows[i], false);
        }
        b->rounds++;
        if (ok && !interrupted)
            b->done = k + 1;
    }
    bench_progress(b, total, total); /* the handlers stay: bench.h */
    /* A round cut short is not counted: its runs go. */
    for (unsigned i = 0; i < b->nrows; i++)
        while (b->rows[i].n > b->done)
            b->rows[i].n--;
    if (interrupted) {
        fprintf(stderr, "gpuaccel: interrupted after %u complete round%s\n", b->done,
                b->done == 1 ? "" : "s");
        return 128 + interrupted;
    }
    return ok ? EX_OK : EX_FAIL;
}

/* ---- setting up ---------------------------------------------------------------------- */
static bool have_gpu(void)
{
    return access("/dev/nvidiactl", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0;
}

int bench_setup(bench_t *b, const opts_t *o, const char *tool)
{
    b->o = o;
    b->tool = tool;
    int rc = find_library(o->lib, b->lib, sizeof b->lib);
    if (rc == EX_OK)
        rc = find_command(o->cmd[0], b->path, sizeof b->path);
    if (rc != EX_OK)
        return rc;
    if (o->check_digest && (rc = compile_regex(&b->digest_re, "--check-digest", o->check_digest,
                                         REG_NOSUB)) != EX_OK)
        return rc;
    if (o->metric && (rc = compile_regex(&b->metric_re, "--metric", o->metric, 0)) != EX_OK)
        return rc;
    if (o->metric && b->metric_re.re_nsub < 1)
        return usage_error("--metric '%s' has no group: put the number in parentheses, as in "
                           "'^time_ms: ([0-9.]+)'", o->metric);
    if (o->measure == M_PHASE &&
        ((rc = compile_regex(&b->start_re, "--phase", o->phase_start, REG_NOSUB)) != EX_OK ||
         (rc = compile_regex(&b->end_re, "--phase", o->phase_end, REG_NOSUB)) != EX_OK))
        return rc;
    b->gpu = have_gpu();
    if (!b->gpu && o->require_gpu)
        return die(EX_NOGPU, "no GPU: /dev/nvidiactl is missing (--require-gpu)");
    if (!b->gpu)
        fprintf(stderr, "gpuaccel: note: no NVIDIA GPU here (/dev/nvidiactl is missing): timing "
                        "whatever libcuda.so.1 the command loads\n");
    snprintf(b->outfile, sizeof b->outfile, "/tmp/gpuaccel-%s.%d.out", tool, (int)getpid());
    snprintf(b->errfile, sizeof b->errfile, "/tmp/gpuaccel-%s.%d.err", tool, (int)getpid());
    if (!bench_add(b, "native", true, 0, NULL))
        return die(EX_FAIL, "out of memory");
    return EX_OK;
}

void bench_cleanup(bench_t *b)
{
    unlink(b->outfile);
    unlink(b->errfile);
}
