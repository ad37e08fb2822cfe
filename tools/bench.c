/* bench.c - the measurement ab and advise share (bench.h): each run of a
 * setting in a fresh process with its output captured, the check of what it
 * printed or wrote against the native run's, the statistics, and the rounds
 * (native and every setting alternating, after a warm-up of each).
 *
 * Owns: the capture files (removed by the caller), the SIGINT flag.
 * Must never: let the caller's GPUACCEL_* environment leak into a row (each
 * row sets every switch, or names a set and unsets every switch). */
#define _GNU_SOURCE
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

volatile sig_atomic_t interrupted;

static void child_env(const ab_t *a, const row_t *r)
{
    if (r->native)
        return;
    preload(a->lib);
    /* A named set leaves every switch to it (a switch set one by one that
     * cannot act, tune without a table, would be warned about); otherwise
     * each is set, over whatever GPUACCEL the user has. */
    bool all = r->mask == (1u << N_FEATURES) - 1 && !r->set;
    const char *set = r->set ? r->set : all ? "all" : "safe";
    if (!strcmp(set, "config")) { /* ab --config FILE: the file decides */
        char abs[PATH_MAX];
        setenv("GPUACCEL_CONFIG", realpath(a->o->config, abs) ? abs : a->o->config, 1);
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

/* Runs the command once; the wall time, or a negative value when it failed. */
static double run_once(const ab_t *a, const row_t *r, int *status)
{
    fflush(NULL);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int out = open(a->outfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(a->errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(EX_FAIL);
        child_env(a, r);
        execv(a->path, a->o->cmd);
        _exit(EX_NOEXEC);
    }
    while (waitpid(pid, status, 0) < 0 && errno == EINTR)
        ;
    double t = now_s() - t0;
    return WIFEXITED(*status) && WEXITSTATUS(*status) == 0 ? t : -1;
}

/* What is compared: the first stdout line matching the digest pattern, or the
 * check file's bytes. NULL with *len 0 when nothing is compared. */
static char *observed(ab_t *a, size_t *len)
{
    *len = 0;
    if (a->o->check_file) {
        char *b = slurp(a->o->check_file);
        *len = b ? strlen(b) : 0;
        struct stat st;
        if (b && stat(a->o->check_file, &st) == 0)
            *len = (size_t)st.st_size; /* binary files: compare every byte */
        return b ? b : strdup("(file missing)");
    }
    if (!a->o->check_digest)
        return NULL;
    char *text = slurp(a->outfile), *line = NULL;
    for (char *save = NULL, *l = text ? strtok_r(text, "\n", &save) : NULL; l && !line;
         l = strtok_r(NULL, "\n", &save))
        if (regexec(&a->re, l, 0, NULL, 0) == 0)
            line = strdup(l);
    free(text);
    if (!line)
        line = strdup("(no line matches)");
    *len = strlen(line);
    return line;
}

static void show_stderr_tail(const ab_t *a)
{
    char *e = slurp(a->errfile);
    size_t n = e ? strlen(e) : 0;
    if (n)
        fprintf(stderr, "--- its stderr (last lines) ---\n%s%s", e + (n > 2000 ? n - 2000 : 0),
                e[n - 1] == '\n' ? "" : "\n");
    free(e);
}

/* One run, checked. false when the run failed. */
bool measure(ab_t *a, row_t *r, double *t)
{
    int status = 0;
    *t = run_once(a, r, &status);
    if (*t < 0 && interrupted)
        return false;
    if (*t < 0) {
        die(EX_FAIL, "%s run of '%s' failed (exit status %d)", r->label, a->o->cmd[0],
            exec_status(status));
        show_stderr_tail(a);
        return false;
    }
    size_t len;
    char *got = observed(a, &len);
    if (got && !a->reference) {
        a->reference = got, a->ref_len = len;
        return true;
    }
    if (got) {
        r->checked = true;
        if (len != a->ref_len || memcmp(got, a->reference, len)) {
            if (r->agree && a->o->check_digest)
                fprintf(stderr, "gpuaccel: %s output differs:\n  native: %s\n  %s: %s\n",
                        r->label, a->reference, r->label, got);
            else if (r->agree)
                fprintf(stderr, "gpuaccel: %s: %s differs from the native run's\n", r->label,
                        a->o->check_file);
            r->agree = false;
        }
    }
    free(got);
    return true;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

void stats_of(row_t *r, unsigned n)
{
    double *s = malloc(n * sizeof *s);
    memcpy(s, r->t, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    r->median = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
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
 * paired per-iteration ratios (the runs alternate, so pairs share conditions). */
void ratios_of(row_t *r, const row_t *native, unsigned n)
{
    r->ratio = native->median / r->median;
    r->rmin = r->rmax = native->t[0] / r->t[0];
    for (unsigned i = 1; i < n; i++) {
        double q = native->t[i] / r->t[i];
        r->rmin = q < r->rmin ? q : r->rmin;
        r->rmax = q > r->rmax ? q : r->rmax;
    }
}

void add_row(ab_t *a, const char *label, bool native, unsigned mask)
{
    row_t *r = &a->rows[a->nrows++];
    *r = (row_t){.label = label, .native = native, .mask = mask, .agree = true};
    r->t = calloc(a->o->runs, sizeof *r->t);
}

static bool have_gpu(void)
{
    return access("/dev/nvidiactl", F_OK) == 0 || access("/dev/nvidia0", F_OK) == 0;
}


static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* "run 7 of 30, about 12 s left" on a terminal's stderr, rewritten in place. */
static void progress(const ab_t *a, unsigned done, unsigned total)
{
    if (!isatty(STDERR_FILENO))
        return;
    if (done == total) {
        fprintf(stderr, "\r%60s\r", "");
        return;
    }
    double spent = now_s() - a->t0, left = done ? spent / done * (total - done) : 0;
    char eta[32];
    fmt_time(eta, sizeof eta, left);
    fprintf(stderr, "\rgpuaccel: run %u of %u%s%s   ", done + 1, total,
            done ? ", about " : "", done ? eta : "");
    if (done)
        fputs(" left", stderr);
}

int ab_measure(ab_t *a)
{
    double t;
    unsigned total = a->nrows * (a->o->runs + 1), n = 0;
    struct sigaction sa = {.sa_handler = on_interrupt}, old_int;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    a->t0 = now_s();
    a->done = 0;
    int rc = EX_OK;
    for (unsigned i = 0; i < a->nrows && rc == EX_OK; i++, n++) { /* warm-up; native: reference */
        progress(a, n, total);
        if (!measure(a, &a->rows[i], &t))
            rc = EX_FAIL;
    }
    for (unsigned k = 0; k < a->o->runs && rc == EX_OK && !interrupted; k++) {
        for (unsigned i = 0; i < a->nrows && rc == EX_OK && !interrupted; i++, n++) {
            progress(a, n, total);
            if (!measure(a, &a->rows[i], &a->rows[i].t[k]))
                rc = EX_FAIL;
        }
        if (rc == EX_OK && !interrupted)
            a->done = k + 1;
    }
    progress(a, total, total);
    sigaction(SIGINT, &old_int, NULL);
    if (interrupted) {
        fprintf(stderr, "gpuaccel: interrupted after %u complete round%s\n", a->done,
                a->done == 1 ? "" : "s");
        return a->done ? EX_INTERRUPTED : EX_FAIL;
    }
    return rc;
}


/* What ab and advise do first: the library, the command, the GPU check, the
 * digest pattern and the capture files. Sets *gpu. */
int ab_setup(ab_t *a, opts_t *o, bool *gpu)
{
    a->o = o;
    int rc = find_library(o->lib, a->lib, sizeof a->lib);
    if (rc == EX_OK)
        rc = find_command(o->cmd[0], a->path, sizeof a->path);
    if (rc != EX_OK)
        return rc;
    *gpu = have_gpu();
    if (!*gpu && o->require_gpu)
        return die(EX_NOGPU, "no GPU: /dev/nvidiactl is missing (--require-gpu)");
    if (!*gpu)
        fprintf(stderr, "gpuaccel: note: no NVIDIA GPU here (/dev/nvidiactl is missing): timing "
                        "whatever libcuda.so.1 the command loads\n");
    if (o->check_digest && regcomp(&a->re, o->check_digest, REG_EXTENDED | REG_NOSUB) != 0)
        return usage_error("--check-digest: '%s' is not a valid regular expression",
                           o->check_digest);
    snprintf(a->outfile, sizeof a->outfile, "/tmp/gpuaccel-ab.%d.out", (int)getpid());
    snprintf(a->errfile, sizeof a->errfile, "/tmp/gpuaccel-ab.%d.err", (int)getpid());
    return EX_OK;
}
