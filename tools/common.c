/* common.c - what the gpuaccel commands share (cli.h): the feature names,
 * messages, finding the library and the program, the environment a program
 * is started with, and small helpers.
 *
 * Owns: the feature name table (from features.def) and the rules for finding
 * the library (--lib, $GPUACCEL_LIB, beside the executable).
 * Must never: load the library (only `kernels list` does, by dlopen). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "core/config.h"

/* ---- the features ------------------------------------------------------------------- */
#define GA_TOGGLED_0(var)
#define GA_TOGGLED_1(var) #var,
const char *const feature_vars[N_FEATURES] = {
#define GA_FEATURE(name, var, toggled) GA_TOGGLED_##toggled(var)
#include "features/features.def"
#undef GA_FEATURE
};
static char feature_names[N_FEATURES][24];
const char *features[N_FEATURES];
char feature_list[N_FEATURES * 26 + 8];

void features_init(void)
{
    size_t len = 0;
    for (int i = 0; i < N_FEATURES; i++) {
        const char *v = feature_vars[i] + strlen("GPUACCEL_");
        size_t k = 0;
        for (; v[k] && k + 1 < sizeof feature_names[i]; k++)
            feature_names[i][k] = (char)(v[k] >= 'A' && v[k] <= 'Z' ? v[k] - 'A' + 'a' : v[k]);
        feature_names[i][k] = '\0';
        features[i] = feature_names[i];
        len += (size_t)snprintf(feature_list + len, sizeof feature_list - len, "%s, ", features[i]);
    }
    snprintf(feature_list + (len >= 2 ? len - 2 : 0), sizeof feature_list - (len >= 2 ? len - 2 : 0),
             " or all");
}

int feature_index(const char *name)
{
    if (!strcmp(name, "swap"))
        name = "kernels"; /* its former name, still taken */
    for (int i = 0; i < N_FEATURES; i++)
        if (!strcmp(name, features[i]))
            return i;
    return -1;
}

unsigned safe_mask(void)
{
    unsigned m = 0;
    for (int i = 0; i < N_FEATURES; i++)
        for (unsigned k = 0; k < ga_config_ndocs; k++)
            if (!strcmp(ga_config_docs[k].name, feature_vars[i]) && ga_config_docs[k].def[0] == '1')
                m |= 1u << i;
    return m;
}

const char *toggle(opts_t *o, const char *list, bool on)
{
    static char bad[64];
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int i = feature_index(t);
        if (!strcmp(t, "all")) {
            o->enable_all = on; /* the named set: no switch set one by one */
            for (int k = 0; k < N_FEATURES; k++)
                o->feature_on[k] = on, o->feature_set[k] = !on;
        } else if (i >= 0) {
            o->feature_on[i] = on, o->feature_set[i] = 1;
        } else {
            snprintf(bad, sizeof bad, "%s", t);
            return bad;
        }
    }
    return *list ? NULL : "";
}

/* ---- messages ----------------------------------------------------------------------- */
int die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpuaccel: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpuaccel: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n(gpuaccel --help lists the commands and options)\n", stderr);
    va_end(ap);
    return EX_USAGE;
}

void describe_status(int status, char *buf, size_t cap)
{
    if (WIFEXITED(status)) {
        snprintf(buf, cap, "exit status %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        const char *abbrev = sigabbrev_np(WTERMSIG(status));
        if (abbrev)
            snprintf(buf, cap, "killed by SIG%s%s", abbrev,
                     WCOREDUMP(status) ? " (core dumped)" : "");
        else
            snprintf(buf, cap, "killed by signal %d", WTERMSIG(status));
    } else {
        snprintf(buf, cap, "status %#x", (unsigned)status);
    }
}

int exec_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : EX_FAIL;
}

/* ---- a child's signals --------------------------------------------------------------- */
static volatile pid_t forward_to; /* the child waited for, or 0 */

/* A signal sent to gpuaccel by another process (kill, a job scheduler) is
 * passed on to the program at once (kill is async-signal-safe). One the
 * terminal sent (Ctrl-C) reached the whole foreground group, the program too:
 * passing it on would deliver it twice. */
static void on_forward(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    pid_t to = forward_to;
    if (to > 0 && (!si || si->si_code != SI_KERNEL))
        kill(to, sig);
}

void forward_signals(bool on)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    static struct sigaction old[4];
    for (unsigned i = 0; i < 4; i++) {
        if (on) {
            struct sigaction sa = {.sa_sigaction = on_forward, .sa_flags = SA_SIGINFO};
            sigemptyset(&sa.sa_mask);
            sigaction(sigs[i], &sa, &old[i]);
        } else {
            sigaction(sigs[i], &old[i], NULL);
        }
    }
}

void forward_to_child(pid_t pid)
{
    forward_to = pid;
}

int wait_forwarding(pid_t pid, int *status)
{
    forward_to = pid;
    int rc = 0;
    while (waitpid(pid, status, 0) != pid)
        if (errno != EINTR) {
            rc = -1;
            break;
        }
    forward_to = 0;
    return rc;
}

/* ---- the library and the program ---------------------------------------------------- */
bool readable(const char *p)
{
    return access(p, R_OK) == 0;
}

/* `lib` (--lib), $GPUACCEL_LIB, then a build tree's (.libs beside this
 * executable or one level up), then this command's own installed tree
 * (bin/../lib: a tree moved elsewhere, which must not pick up another
 * install's library), then where `make install` put it (the configured
 * libdir, a multiarch one included). */
int find_library(const char *lib, char *out, size_t cap)
{
    const char *given = lib ? lib : getenv("GPUACCEL_LIB");
    if (given && *given) {
        if (!readable(given) || !realpath(given, out))
            return die(EX_USAGE, "library not found: %s", given);
        return EX_OK;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return die(EX_USAGE, "library not found: cannot locate this executable; use --lib PATH");
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    *slash = '\0';
    /* Absolute candidates start with '/'; the rest are relative to exe. */
    static const char *const rel[] = {".libs/libgpuaccel.so", "../.libs/libgpuaccel.so",
                                      "../lib/libgpuaccel.so.1", GA_LIBDIR "/libgpuaccel.so.1"};
    char tried[4 * PATH_MAX] = "";
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[2 * PATH_MAX];
        if (rel[i][0] == '/')
            snprintf(cand, sizeof cand, "%s", rel[i]);
        else
            snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
        if (readable(cand) && realpath(cand, out) && strlen(out) < cap)
            return EX_OK;
        snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s", i ? ", " : "", cand);
    }
    return die(EX_USAGE, "library not found (tried %s); use --lib PATH or GPUACCEL_LIB", tried);
}

/* CMD as execv would find it: 0, or 126/127 with the message printed. */
int find_command(const char *name, char *out, size_t cap)
{
    if (strchr(name, '/')) {
        if (access(name, F_OK) != 0)
            return die(EX_NOTFOUND, "%s: command not found", name);
        if (access(name, X_OK) != 0)
            return die(EX_NOEXEC, "%s: not executable", name);
        snprintf(out, cap, "%s", name);
        return EX_OK;
    }
    const char *path = getenv("PATH");
    char buf[8192];
    snprintf(buf, sizeof buf, "%s", path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
    bool exists = false;
    for (char *save = NULL, *d = strtok_r(buf, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, cap, "%s/%s", *d ? d : ".", name);
        struct stat st;
        if (stat(out, &st) != 0 || S_ISDIR(st.st_mode))
            continue;
        if (access(out, X_OK) == 0)
            return EX_OK;
        exists = true;
    }
    return exists ? die(EX_NOEXEC, "%s: not executable", name)
                  : die(EX_NOTFOUND, "%s: command not found", name);
}

int find_both(const opts_t *o, char *lib, char *path)
{
    int rc = find_library(o->lib, lib, PATH_MAX);
    return rc == EX_OK ? find_command(o->cmd[0], path, PATH_MAX) : rc;
}

void preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old || !*old) {
        setenv("LD_PRELOAD", lib, 1);
        return;
    }
    size_t n = strlen(lib) + strlen(old) + 2;
    char *v = malloc(n);
    if (!v)
        return;
    snprintf(v, n, "%s:%s", lib, old);
    setenv("LD_PRELOAD", v, 1);
    free(v);
}

void apply_toggles(const opts_t *o)
{
    if (o->config) {
        char abs[PATH_MAX];
        setenv("GPUACCEL_CONFIG", realpath(o->config, abs) ? abs : o->config, 1);
    }
    if (o->enable_all)
        setenv("GPUACCEL", "all", 1);
    for (int i = 0; i < N_FEATURES; i++)
        if (o->feature_set[i])
            setenv(feature_vars[i], o->feature_on[i] ? "1" : "0", 1);
}

int check_output(const char *opt, const char *file, bool force)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash == dir ? (void)(slash[1] = '\0') : (void)(*slash = '\0');
    else
        snprintf(dir, sizeof dir, ".");
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return usage_error("%s %s: the directory %s does not exist", opt, file, dir);
    if (access(dir, W_OK) != 0)
        return usage_error("%s %s: the directory %s is not writable", opt, file, dir);
    if (!force && access(file, F_OK) == 0)
        return usage_error("%s %s: the file exists (--force overwrites it)", opt, file);
    return EX_OK;
}

/* ---- small helpers ------------------------------------------------------------------- */
char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    size_t got;
    while (b && (got = fread(b + n, 1, cap - n - 1, f)) > 0)
        if ((n += got) == cap - 1)
            b = realloc(b, cap *= 2);
    fclose(f);
    if (b)
        b[n] = '\0';
    return b;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void fmt_time(char *b, size_t cap, double s)
{
    if (s < 1e-3)
        snprintf(b, cap, "%.1f us", s * 1e6);
    else if (s < 1)
        snprintf(b, cap, "%.2f ms", s * 1e3);
    else
        snprintf(b, cap, "%.3f s", s);
}

/* How many lines of the table at `path` say: verified entries (kept), "# no:"
 * (not kept), and of those, launches a candidate faulted. -1: no table. */
int table_counts(const char *path, unsigned *kept, unsigned *not_kept, unsigned *faults)
{
    FILE *f = fopen(path, "r");
    *kept = *not_kept = *faults = 0;
    if (!f)
        return -1;
    char line[4096];
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "# no:", 5))
            (*not_kept)++, *faults += strstr(line, ": faulted") != NULL;
        else if (line[0] != '#' && line[0] != '\n')
            (*kept)++;
    fclose(f);
    return 0;
}
