/* advise.c - gpuaccel advise: profile the program once, then measure each
 * feature alone, the defaults, every feature and the winners together
 * (bench.c), and print the fastest setting whose outputs agree.
 *
 * Owns: which settings are tried and the rule that picks one.
 * Must never: advise a setting whose outputs differed from the native run's. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "profiles.h"

/* "pool,coalesce" for a mask ("none" for 0). */
static void mask_names(unsigned mask, bool on, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_FEATURES; i++)
        if (((mask >> i) & 1u) == on)
            len += (size_t)snprintf(buf + len, cap > len ? cap - len : 0, "%s%s", len ? "," : "",
                                    features[i]);
    if (!len)
        snprintf(buf, cap, "none");
}

/* Profile the command once (the library's own view of it) and show what the
 * report says could help. Its lines go to stderr: advise's progress. */
static void advise_profile(const bench_t *a)
{
    char base[64], txt[PATH_MAX + 16];
    snprintf(base, sizeof base, "/tmp/gpuaccel-advise.%d", (int)getpid());
    fprintf(stderr, "gpuaccel advise: profiling the command once...\n");
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO);
        preload(a->lib);
        setenv("GPUACCEL_PROFILE", base, 1); /* the program as it is, every feature off */
        setenv("GPUACCEL", "safe", 1);
        for (int i = 0; i < N_FEATURES; i++)
            setenv(feature_vars[i], "0", 1);
        execv(a->path, a->o->cmd);
        _exit(127);
    }
    int status;
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return;
    /* BASE.txt, or the first process's own where a launcher's rank named it */
    char **files = NULL;
    int n = pf_find_run(base, &files);
    if (n > 0)
        snprintf(txt, sizeof txt, "%.*s.txt", (int)(strlen(files[0]) - 5), files[0]);
    FILE *f = n > 0 ? fopen(txt, "r") : NULL;
    if (!f)
        fprintf(stderr, "gpuaccel advise: no profile came back (did the command use CUDA?)\n");
    char line[512];
    bool in = false;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncasecmp(line, "opportunities", 13) || strstr(line, "OPPORTUNITIES"))
            in = true;
        else if (in && line[0] != ' ' && line[0] != '-' && line[0] != '\n')
            in = false;
        if (in)
            fprintf(stderr, "  %s", line);
    }
    if (f)
        fclose(f);
    for (int i = 0; i < n; i++)
        unlink_profile(files[i]);
    if (n > 0)
        pf_free_list(files, n);
}

/* Did row r beat native beyond the run-to-run spread? It must win every
 * paired run, and its median gain must exceed native's own spread (max-min
 * over median): with a few runs, winning every pair alone happens by chance. */
static bool beyond_spread(const bench_t *a, const row_t *r)
{
    const row_t *n = &a->rows[0];
    double spread = n->median > 0 ? (n->max - n->min) / n->median : 0;
    return r->rmin > 1.0 && r->ratio - 1.0 > spread;
}

/* The best row whose outputs agree and that beat native beyond the spread;
 * else the defaults if they lost no more than the spread; NULL: run natively. */
static const row_t *advise_best(const bench_t *a)
{
    const row_t *best = NULL, *defaults = NULL;
    for (unsigned i = 1; i < a->nrows; i++) {
        const row_t *r = &a->rows[i];
        if (r->set && !strcmp(r->set, "safe"))
            defaults = r;
        if (r->agree && beyond_spread(a, r) && (!best || r->ratio > best->ratio))
            best = r;
    }
    if (best)
        return best;
    /* The defaults, unless they lost more than native's own spread. */
    const row_t *n = &a->rows[0];
    double spread = n->median > 0 ? (n->max - n->min) / n->median : 0;
    return defaults && defaults->agree && 1.0 - defaults->ratio <= spread ? defaults : NULL;
}

static int advise_write(const char *path, unsigned mask, const row_t *r)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return die(EX_USAGE, "--write %s: %s", path, strerror(errno));
    if (r)
        fprintf(f, "# gpuaccel advise: %.2fx of native (runs %.2f-%.2fx); load with "
                   "GPUACCEL_CONFIG=%s\n", r->ratio, r->rmin, r->rmax, path);
    else
        fprintf(f, "# gpuaccel advise: no setting beat native; load with GPUACCEL_CONFIG=%s\n"
                   "GPUACCEL=0\n", path);
    for (int i = 0; r && i < N_FEATURES; i++)
        fprintf(f, "%s=%d\n", feature_vars[i], (mask >> i) & 1u ? 1 : 0);
    return fclose(f) == 0 ? EX_OK : die(EX_FAIL, "--write %s: %s", path, strerror(errno));
}

/* Print the setting: an environment line and a `gpuaccel run` line. */
static void advise_print(const bench_t *a, const row_t *best, unsigned mask)
{
    const opts_t *o = a->o;
    if (!best) {
        printf("advice: no setting ran faster than native beyond the run-to-run spread with "
               "equal outputs; run it natively (GPUACCEL=0)\n");
    } else {
        char on[128], off[128];
        mask_names(mask, true, on, sizeof on);
        mask_names(mask, false, off, sizeof off);
        bool beyond = beyond_spread(a, best);
        const row_t *n = &a->rows[0];
        printf("advice: %s, %.2fx of native (runs %.2f-%.2fx)", on, best->ratio, best->rmin,
               best->rmax);
        if (!beyond)
            printf("; no setting gained beyond the run-to-run spread (native runs varied by "
                   "%.0f%%), and the defaults lost no more than that", n->median > 0 ?
                   100 * (n->max - n->min) / n->median : 0.0);
        printf("\n");
        printf("environment:");
        for (int i = 0; i < N_FEATURES; i++)
            printf(" %s=%d", feature_vars[i], (mask >> i) & 1u ? 1 : 0);
        printf("\ncommand: gpuaccel run");
        if (o->write)
            printf(" --config %s", o->write);
        else
            printf(" --enable %s%s%s", on, strcmp(off, "none") ? " --disable " : "",
                   strcmp(off, "none") ? off : "");
        printf(" --");
        for (char **c = o->cmd; *c; c++)
            printf(" %s", *c);
        printf("\n");
    }
}

int cmd_advise(int argc, char **argv)
{
    static opts_t opts = {.runs = 3, .warmup = 0, .budget_s = 120, .ab_feature = -1};
    opts_t *o = &opts;
    int rc = parse_opts(argc, argv, o);
    if (rc != EX_OK)
        return rc;
    static bench_t a;
    if ((rc = bench_setup(&a, o, "advise")) != EX_OK)
        return rc;
    if (!o->check_digest && !o->check_file)
        fprintf(stderr, "gpuaccel advise: no --check-digest or --check-file: outputs are not "
                        "compared\n");
    advise_profile(&a);
    /* Tune without a table rewrites nothing: its row would time noise. */
    const char *table = getenv("GPUACCEL_TUNE_TABLE");
    unsigned every = 0;
    for (int i = 0; i < N_FEATURES; i++)
        if (strcmp(feature_vars[i], "GPUACCEL_TUNE") || (table && *table)) {
            bench_add(&a, features[i], false, 1u << i, NULL);
            every |= 1u << i;
        }
    bench_add(&a, "defaults", false, safe_mask(), "safe");
    bench_add(&a, "all", false, every, NULL); /* every feature that can act here */
    fprintf(stderr, "gpuaccel advise: %u settings, %u runs each...\n", a.nrows, o->runs);
    rc = bench_measure_all(&a);
    bench_cleanup(&a);
    if (rc != EX_OK)
        return rc;
    bench_stats(&a);
    bench_table(stdout, &a, true);
    const row_t *best = advise_best(&a);
    unsigned mask = best ? best->mask : 0;
    if (o->write && (rc = advise_write(o->write, mask, best)) != EX_OK)
        return rc;
    advise_print(&a, best, mask);
    return EX_OK;
}
