/* gpuaccel.c - the gpuaccel command: run a program under libgpuaccel, profile
 * it, print a profile again, A/B it against a native run, list the variables.
 *
 * Owns: finding the library, the GPUACCEL_* environment of the programs it
 * starts, and the A/B measurement (alternating runs, digest or file check,
 * table, JSON and SVG). Built from this file plus src/config.c and src/log.c
 * (for the table of variables), and report.c, profiles.c and json.c (reading
 * profiles back, merging several processes'); it never loads the library
 * itself except to read its kernel table.
 * Exit codes (man/gpuaccel.1): 0 ok; 1 outputs differ or a run failed (run
 * and profile pass the command's own status through); 2 usage error, library
 * or report not found; 77 --require-gpu without a GPU; 126 command not
 * executable; 127 command not found. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <limits.h>
#include <regex.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codeids.h"
#include "core/config.h"
#include "features/profile/format.h"
#include "profiles.h"
#include "report.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

enum { EX_OK = 0, EX_FAIL = 1, EX_USAGE = 2, EX_NOGPU = 77, EX_NOEXEC = 126, EX_NOTFOUND = 127,
       EX_INTERRUPTED = 130 };

/* Each command's synopsis and what it does: the global help lists them, and
 * `gpuaccel COMMAND --help` prints its own. %s in `what` is the feature list. */
typedef struct command_help {
    const char *name, *synopsis, *what;
} command_help_t;

static const command_help_t command_helps[] = {
    {"run", "[--lib PATH] [--config FILE] [--enable LIST] [--disable LIST] [--] CMD [ARGS...]",
     "run CMD with libgpuaccel preloaded; LIST: comma-separated features (%s)"},
    {"profile", "[-o FILE] [--force] [--kernels] [--lib PATH] [--enable LIST] [--disable LIST] "
     "[--] CMD", "write FILE.txt, FILE.json, FILE.trace.json (default FILE: gpuaccel-profile);\n"
     "          -o is checked before CMD runs; --force overwrites; features are off\n"
     "          unless --enable or the environment turns them on"},
    {"tune", "[-o FILE] [--force] [--kernel PATTERN] [--exhaustive] [--lib PATH] [--] CMD",
     "run CMD once under the tuner; write the configurations it proved\n"
     "          bit-identical and faster (default FILE: gpuaccel-tune.table)"},
    {"report", "[--json] NAME | FILE.json...",
     "print a profile's report again; NAME (as given to profile -o) merges\n"
     "          every process's profile of that run (NAME.json, NAME.PID.json,\n"
     "          NAME.rankR.PID.json), as do several FILEs; --json: the merged view as JSON"},
    {"ab", "[-n RUNS] [--feature NAME|all] [--per-feature] [--config FILE]\n"
     "          [--check-digest REGEX] [--check-file PATH] [--json] [--svg FILE] [--require-gpu]\n"
     "          [--export-json FILE] [--export-csv FILE] [--export-markdown FILE]\n"
     "          [--lib PATH] [--] CMD", "time CMD natively and under the library, alternating, "
     "after a warm-up;\n          progress on a terminal; Ctrl-C prints the rounds completed"},
    {"advise", "[-n RUNS] [--check-digest REGEX] [--check-file PATH] [--write FILE]\n"
     "          [--require-gpu] [--lib PATH] [--] CMD",
     "profile CMD once, A/B each feature, the defaults, every feature and the\n"
     "          winners together; print the fastest setting whose outputs agree"},
    {"kernels", "[--lib PATH] list | verify [--kernel NAME] [--quick] | ids FILE [NAME...]",
     "the replacement kernels shipped in the library; verify runs each\n"
     "          against its original on fresh random inputs, bit for bit, and times both;\n"
     "          ids prints the code identities (code=) of the kernels of FILE (a program,\n"
     "          shared library, fatbin, cubin or PTX) for a table's rows"},
    {"env", "[--check]", "every GPUACCEL_* variable: default, value set, effective value, "
     "problems\n          (--check: exit 1 if any)"},
};

static const char usage_tail[] =
    "\n  --help, --version; gpuaccel COMMAND --help for one command\n"
    "exit: 0 ok, 1 outputs differ or a run failed, 2 usage, 77 no GPU (--require-gpu),\n"
    "      126 CMD not executable, 127 CMD not found; run and profile return CMD's status\n";

/* The switches `run --enable/--disable` and `ab` toggle: the features of the
 * library's list (src/features/features.def) marked toggled, in its order, each
 * named by its variable without the GPUACCEL_ prefix, in lower case ("kernels"
 * is the swap feature, GPUACCEL_KERNELS). */
#define GA_TOGGLED_0(var)
#define GA_TOGGLED_1(var) #var,
static const char *const feature_vars[] = {
#define GA_FEATURE(name, var, toggled) GA_TOGGLED_##toggled(var)
#include "features/features.def"
#undef GA_FEATURE
};
enum { N_FEATURES = sizeof feature_vars / sizeof feature_vars[0] };
static char feature_names[N_FEATURES][24];
static const char *features[N_FEATURES];
static char feature_list[N_FEATURES * 26 + 8]; /* "pool, coalesce, ... or all" */

static void features_init(void)
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

static void command_usage(FILE *to, const command_help_t *c, bool alone)
{
    fprintf(to, alone ? "usage: gpuaccel %s %s\n  " : "  %-7s %s\n          ", c->name,
            c->synopsis);
    fprintf(to, c->what, feature_list);
    fputc('\n', to);
}

static void usage(FILE *to)
{
    fputs("usage: gpuaccel COMMAND [OPTIONS] [--] CMD [ARGS...]\n\n", to);
    for (size_t i = 0; i < sizeof command_helps / sizeof command_helps[0]; i++)
        command_usage(to, &command_helps[i], false);
    fputs(usage_tail, to);
}

/* `gpuaccel NAME --help`: that command's synopsis alone. */
static int help_of(const char *name)
{
    for (size_t i = 0; i < sizeof command_helps / sizeof command_helps[0]; i++)
        if (!strcmp(command_helps[i].name, name))
            return command_usage(stdout, &command_helps[i], true), EX_OK;
    return usage(stdout), EX_OK;
}

static int die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpuaccel: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("gpuaccel: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n(gpuaccel --help lists the commands and options)\n", stderr);
    va_end(ap);
    return EX_USAGE;
}

/* ---- options shared by the commands ---------------------------------------------- */
typedef struct opts {
    const char *lib, *out, *check_digest, *check_file, *svg, *kernel_pattern;
    unsigned feature_on[N_FEATURES], feature_set[N_FEATURES]; /* run/profile toggles */
    bool enable_all;    /* --enable all: GPUACCEL=all, then the toggles after it */
    int ab_feature;     /* -1: all */
    bool kernels, per_feature, json, require_gpu, exhaustive;
    const char *config, *write; /* run --config FILE; advise --write FILE */
    bool force;         /* profile, tune: overwrite what -o names */
    const char *export_json, *export_csv, *export_md; /* ab: files beside the table */
    unsigned runs;
    char **cmd;         /* NULL-terminated */
} opts_t;

static int feature_index(const char *name)
{
    if (!strcmp(name, "swap"))
        name = "kernels"; /* the swap feature; its variable is GPUACCEL_KERNELS */
    for (int i = 0; i < N_FEATURES; i++)
        if (!strcmp(name, features[i]))
            return i;
    return -1;
}

/* "pool,graphs" or "all": set each named feature to `on`. Returns NULL, or the
 * first item that names no feature (in a static buffer). */
static const char *toggle(opts_t *o, const char *list, bool on)
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

static bool parse_runs(const char *s, unsigned *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < 1 || v > 10000)
        return false;
    *out = (unsigned)v;
    return true;
}

static bool readable(const char *p);
static int check_output(const char *opt, const char *file, bool force);

/* The commands that take options before CMD, as bits, and which take which
 * option. getopt_long gives the usual conventions: --opt=value, -n5, "--". */
enum { C_RUN = 1, C_PROFILE = 2, C_TUNE = 4, C_AB = 8, C_ADVISE = 16, C_ALL = 31 };
enum {
    O_LIB = 256, O_ENABLE, O_DISABLE, O_CONFIG, O_FORCE, O_KERNELS, O_KERNEL, O_EXHAUSTIVE,
    O_FEATURE, O_PER_FEATURE, O_CHECK_DIGEST, O_CHECK_FILE, O_JSON, O_SVG, O_REQUIRE_GPU, O_WRITE,
    O_EXPORT_JSON, O_EXPORT_CSV, O_EXPORT_MD
};
static const struct option long_opts[] = {
    {"help", no_argument, NULL, 'h'},
    {"lib", required_argument, NULL, O_LIB},
    {"enable", required_argument, NULL, O_ENABLE},
    {"disable", required_argument, NULL, O_DISABLE},
    {"config", required_argument, NULL, O_CONFIG},
    {"force", no_argument, NULL, O_FORCE},
    {"kernels", no_argument, NULL, O_KERNELS},
    {"kernel", required_argument, NULL, O_KERNEL},
    {"exhaustive", no_argument, NULL, O_EXHAUSTIVE},
    {"feature", required_argument, NULL, O_FEATURE},
    {"per-feature", no_argument, NULL, O_PER_FEATURE},
    {"check-digest", required_argument, NULL, O_CHECK_DIGEST},
    {"check-file", required_argument, NULL, O_CHECK_FILE},
    {"json", no_argument, NULL, O_JSON},
    {"svg", required_argument, NULL, O_SVG},
    {"require-gpu", no_argument, NULL, O_REQUIRE_GPU},
    {"write", required_argument, NULL, O_WRITE},
    {"export-json", required_argument, NULL, O_EXPORT_JSON},
    {"export-csv", required_argument, NULL, O_EXPORT_CSV},
    {"export-markdown", required_argument, NULL, O_EXPORT_MD},
    {NULL, 0, NULL, 0},
};
static const struct { int opt; unsigned cmds; } opt_cmds[] = {
    {'h', C_ALL}, {O_LIB, C_ALL}, {O_ENABLE, C_RUN | C_PROFILE}, {O_DISABLE, C_RUN | C_PROFILE},
    {O_CONFIG, C_RUN | C_AB}, {O_FORCE, C_PROFILE | C_TUNE}, {'o', C_PROFILE | C_TUNE},
    {O_KERNELS, C_PROFILE}, {O_KERNEL, C_TUNE}, {O_EXHAUSTIVE, C_TUNE}, {'n', C_AB | C_ADVISE},
    {O_FEATURE, C_AB}, {O_PER_FEATURE, C_AB}, {O_CHECK_DIGEST, C_AB | C_ADVISE},
    {O_CHECK_FILE, C_AB | C_ADVISE}, {O_JSON, C_AB}, {O_SVG, C_AB},
    {O_REQUIRE_GPU, C_AB | C_ADVISE}, {O_WRITE, C_ADVISE}, {O_EXPORT_JSON, C_AB},
    {O_EXPORT_CSV, C_AB}, {O_EXPORT_MD, C_AB},
};

static unsigned command_bit(const char *cmd)
{
    static const char *const names[] = {"run", "profile", "tune", "ab", "advise"};
    for (unsigned i = 0; i < 5; i++)
        if (!strcmp(cmd, names[i]))
            return 1u << i;
    return 0;
}

static bool takes(int opt, unsigned bit)
{
    for (size_t i = 0; i < sizeof opt_cmds / sizeof opt_cmds[0]; i++)
        if (opt_cmds[i].opt == opt)
            return (opt_cmds[i].cmds & bit) != 0;
    return false;
}

/* One option with its value: what it sets, or a usage error. */
static int take(const char *cmd, int c, const char *v, opts_t *o)
{
    const char *bad;
    switch (c) {
    case O_LIB: o->lib = v; break;
    case O_ENABLE:
    case O_DISABLE:
        if ((bad = toggle(o, v, c == O_ENABLE)) != NULL)
            return usage_error("%s: '%s' in --%s %s is not a feature (%s)", cmd, bad,
                               c == O_ENABLE ? "enable" : "disable", v, feature_list);
        break;
    case O_CONFIG:
        if (!readable(v))
            return usage_error("%s: --config %s: no readable file there", cmd, v);
        o->config = v;
        break;
    case O_FORCE: o->force = true; break;
    case 'o': o->out = v; break;
    case O_KERNELS: o->kernels = true; break;
    case O_KERNEL: o->kernel_pattern = v; break;
    case O_EXHAUSTIVE: o->exhaustive = true; break;
    case 'n':
        if (!parse_runs(v, &o->runs))
            return usage_error("%s: -n wants a number of runs from 1 to 10000, not '%s'", cmd, v);
        break;
    case O_FEATURE:
        o->ab_feature = strcmp(v, "all") ? feature_index(v) : -1;
        if (strcmp(v, "all") && o->ab_feature < 0)
            return usage_error("%s: --feature '%s' is not a feature (%s)", cmd, v, feature_list);
        break;
    case O_PER_FEATURE: o->per_feature = true; break;
    case O_CHECK_DIGEST: o->check_digest = v; break;
    case O_CHECK_FILE: o->check_file = v; break;
    case O_JSON: o->json = true; break;
    case O_SVG: o->svg = v; break;
    case O_REQUIRE_GPU: o->require_gpu = true; break;
    case O_WRITE: o->write = v; break;
    case O_EXPORT_JSON: o->export_json = v; break;
    case O_EXPORT_CSV: o->export_csv = v; break;
    case O_EXPORT_MD: o->export_md = v; break;
    default: break;
    }
    return EX_OK;
}

/* Options of `cmd` up to "--" or the first non-option; the rest is CMD.
 * argv[0] is the command's name. */
static int parse(const char *cmd, int argc, char **argv, opts_t *o)
{
    unsigned bit = command_bit(cmd);
    optind = 1, opterr = 0;
    int c, idx = -1;
    while ((c = getopt_long(argc, argv, "+:ho:n:", long_opts, &idx)) != -1) {
        char as[64]; /* the option's name, as the user would write it */
        if (idx >= 0)
            snprintf(as, sizeof as, "--%s", long_opts[idx].name);
        else if (c != '?' && c != ':')
            snprintf(as, sizeof as, "-%c", c);
        else if (optopt > 0 && optopt < 256)
            snprintf(as, sizeof as, "-%c", optopt);
        else
            snprintf(as, sizeof as, "%s", argv[optind - 1]);
        if (c == '?')
            return usage_error("%s: unknown option '%s'", cmd, as);
        if (c == ':')
            return usage_error("%s: %s needs a value", cmd, as);
        if (!takes(c, bit))
            return usage_error("%s: %s is not an option of %s", cmd, as, cmd);
        if (c == 'h')
            exit(help_of(cmd));
        int rc = take(cmd, c, optarg, o);
        if (rc != EX_OK)
            return rc;
        idx = -1;
    }
    if (optind >= argc)
        return usage_error("%s: no command to run (gpuaccel %s [OPTIONS] -- CMD ARGS)", cmd, cmd);
    if (o->check_digest && o->check_file)
        return usage_error("%s: choose --check-digest or --check-file, not both", cmd);
    o->cmd = argv + optind;
    return EX_OK;
}

/* ---- the library and the command ------------------------------------------------- */
static bool readable(const char *p)
{
    return access(p, R_OK) == 0;
}

/* --lib, $GPUACCEL_LIB, then next to this executable: an installed tree
 * (bin/../lib) or a build tree (.libs beside it or one level up). */
static int find_library(const opts_t *o, char *out, size_t cap)
{
    const char *given = o->lib ? o->lib : getenv("GPUACCEL_LIB");
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
    static const char *const rel[] = {"../lib/libgpuaccel.so", ".libs/libgpuaccel.so",
                                      "../.libs/libgpuaccel.so"};
    char tried[3 * PATH_MAX] = "";
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char cand[2 * PATH_MAX];
        snprintf(cand, sizeof cand, "%s/%s", exe, rel[i]);
        if (readable(cand) && realpath(cand, out) && strlen(out) < cap)
            return EX_OK;
        snprintf(tried + strlen(tried), sizeof tried - strlen(tried), "%s%s", i ? ", " : "", cand);
    }
    return die(EX_USAGE, "library not found (tried %s); use --lib PATH or GPUACCEL_LIB", tried);
}

/* CMD as execv would find it: 0, or 126/127 with the message printed. */
static int find_command(const char *name, char *out, size_t cap)
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

/* LD_PRELOAD=LIB, keeping what the user preloads after it. */
static void preload(const char *lib)
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

static void apply_toggles(const opts_t *o)
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

static int exec_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : EX_FAIL;
}

/* ---- run, profile, report, env --------------------------------------------------- */

/* The library to preload and the command's path: EX_OK or the exit status. */
static int find_both(const opts_t *o, char *lib, char *path)
{
    int rc = find_library(o, lib, PATH_MAX);
    return rc == EX_OK ? find_command(o->cmd[0], path, PATH_MAX) : rc;
}

static int cmd_run(opts_t *o)
{
    char lib[PATH_MAX], path[PATH_MAX];
    int rc = find_both(o, lib, path);
    if (rc != EX_OK)
        return rc;
    preload(lib);
    apply_toggles(o);
    execv(path, o->cmd);
    return die(errno == ENOENT ? EX_NOTFOUND : EX_NOEXEC, "%s: %s", o->cmd[0], strerror(errno));
}

static bool fresh(const char *path, time_t since)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_mtime >= since;
}

/* The files the run wrote: FILE.* and, for other processes, FILE.<pid>.* or
 * FILE.rank<R>.<pid>.* (pf_find_run). */
static void list_profiles(const char *out, time_t since)
{
    char main_json[PATH_MAX + 16], **files = NULL;
    snprintf(main_json, sizeof main_json, "%s.json", out);
    bool have_main = fresh(main_json, since);
    if (have_main)
        fprintf(stderr, "gpuaccel: profile: %s.txt (report), %s.json, %s.trace.json (open in "
                        "https://ui.perfetto.dev)\n", out, out, out);
    int n = pf_find_run(out, &files), others = 0;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(files[i]);
        if (strcmp(files[i], main_json) && fresh(files[i], since) && ++others)
            fprintf(stderr, "gpuaccel: profile of another process: %.*s.{txt,json,trace.json}\n",
                    (int)(len - 5), files[i]);
    }
    if (n > 0)
        pf_free_list(files, n);
    if (others + have_main > 1)
        fprintf(stderr, "gpuaccel: profile: gpuaccel report %s merges the %d profiles of this "
                        "run\n", out, others + have_main);
    else if (others)
        fprintf(stderr, "gpuaccel: profile: gpuaccel report %s prints its report\n", out);
    else if (!have_main)
        fprintf(stderr, "gpuaccel: no profile was written to %s.json: the command made no CUDA "
                        "call through the library (or exited without exit(), e.g. by _exit)\n",
                out);
}

/* Removes the three files of the profile whose JSON is `json` (STEM.json). */
static void unlink_profile(const char *json)
{
    static const char *const ext[] = {".json", ".txt", ".trace.json"};
    size_t len = strlen(json);
    for (unsigned k = 0; len > 5 && k < 3; k++) {
        char p[PATH_MAX + 16];
        snprintf(p, sizeof p, "%.*s%s", (int)(len - 5), json, ext[k]);
        unlink(p);
    }
}

/* Other processes' profiles of an earlier run under `base`: an error, or with
 * --force removed (with their .txt and .trace.json), so that what report
 * merges afterwards is this run's. */
static int check_process_files(const char *base, bool force)
{
    char **files = NULL;
    int n = pf_find_run(base, &files), rc = EX_OK;
    for (int i = 0; i < n && rc == EX_OK; i++) {
        if (!pf_is_process_file(base, files[i]))
            continue;
        if (force)
            unlink_profile(files[i]);
        else
            rc = usage_error("-o %s: %s is there, from an earlier run (--force removes the "
                             "profiles of that run)", base, files[i]);
    }
    if (n > 0)
        pf_free_list(files, n);
    return rc;
}

/* gpuaccel tune: the program runs once under the tuner, every other feature
 * off; the tuner writes only configurations it proved bit-identical. */
static int cmd_tune(opts_t *o)
{
    char lib[PATH_MAX], path[PATH_MAX];
    int rc = find_both(o, lib, path);
    if (rc != EX_OK)
        return rc;
    const char *out = o->out ? o->out : "gpuaccel-tune.table";
    if ((rc = check_output("-o", out, o->force)) != EX_OK)
        return rc;
    pid_t pid = fork();
    if (pid < 0)
        return die(EX_FAIL, "fork: %s", strerror(errno));
    if (pid == 0) {
        preload(lib);
        (void)toggle(o, "all", false);
        apply_toggles(o);
        setenv("GPUACCEL_TUNER", out, 1);
        setenv("GPUACCEL_TUNER_KERNEL", o->kernel_pattern ? o->kernel_pattern : "*", 1);
        setenv("GPUACCEL_TUNER_EXHAUSTIVE", o->exhaustive ? "1" : "0", 1);
        execv(path, o->cmd);
        _exit(die(EX_NOEXEC, "%s: %s", o->cmd[0], strerror(errno)));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    FILE *f = fopen(out, "r");
    unsigned kept = 0, not_kept = 0;
    char line[4096];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "# no:", 5))
            not_kept++;
        else if (line[0] != '#' && line[0] != '\n')
            kept++;
    if (f)
        fclose(f);
    if (f)
        fprintf(stderr, "gpuaccel: tune: %s: %u verified entries, %u configurations not kept "
                        "(reasons inside); use GPUACCEL_TUNE=1 GPUACCEL_TUNE_TABLE=%s\n",
                out, kept, not_kept, out);
    else
        fprintf(stderr, "gpuaccel: tune: no table was written to %s (no CUDA call through the "
                        "library, or the program exited without exit())\n", out);
    return exec_status(status);
}

/* Before the program runs: can `file` be written, and is it new (or --force)? */
static int check_output(const char *opt, const char *file, bool force)
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

/* A profile shows what the program does by itself, so that its estimates are
 * of what each feature would change: every feature the command line, the
 * environment (GPUACCEL, GPUACCEL_<FEATURE>) or a --config file does not set
 * is off. */
static void profile_alone(const opts_t *o)
{
    if (o->enable_all || o->config || getenv("GPUACCEL") || getenv("GPUACCEL_CONFIG"))
        return;
    for (int i = 0; i < N_FEATURES; i++)
        if (!o->feature_set[i] && !getenv(feature_vars[i]))
            setenv(feature_vars[i], "0", 1);
}

static int cmd_profile(opts_t *o)
{
    char lib[PATH_MAX], path[PATH_MAX];
    int rc = find_both(o, lib, path);
    if (rc != EX_OK)
        return rc;
    /* -o prof.json names the base, as -o prof does: the files get their suffixes. */
    char base[PATH_MAX];
    snprintf(base, sizeof base, "%s", o->out ? o->out : "gpuaccel-profile");
    static const char *const ext[] = {".trace.json", ".json", ".txt"};
    for (unsigned i = 0; i < 3; i++) {
        size_t n = strlen(base), e = strlen(ext[i]);
        if (n > e && !strcmp(base + n - e, ext[i])) {
            base[n - e] = '\0';
            break;
        }
    }
    for (unsigned i = 0; i < 3; i++) {
        char file[PATH_MAX + 16];
        snprintf(file, sizeof file, "%s%s", base, ext[i]);
        if ((rc = check_output("-o", file, o->force)) != EX_OK)
            return rc;
        if (o->force) /* so that what is there afterwards is this run's */
            unlink(file);
    }
    if ((rc = check_process_files(base, o->force)) != EX_OK)
        return rc;
    const char *out = base;
    time_t since = time(NULL) - 1;
    pid_t pid = fork();
    if (pid < 0)
        return die(EX_FAIL, "fork: %s", strerror(errno));
    if (pid == 0) {
        preload(lib);
        apply_toggles(o);
        profile_alone(o);
        setenv("GPUACCEL_PROFILE", out, 1);
        if (o->kernels)
            setenv("GPUACCEL_PROFILE_KERNELS", "1", 1);
        execv(path, o->cmd);
        _exit(die(EX_NOEXEC, "%s: %s", o->cmd[0], strerror(errno)));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    list_profiles(out, since);
    return exec_status(status);
}

static char *slurp(const char *path)
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

/* report [--json] BASE | FILE.json...: options anywhere before "--". */
static int cmd_report(int argc, char **argv)
{
    bool json = false, opts = true;
    char **args = calloc((size_t)argc + 1, sizeof *args);
    int n = 0;
    for (int i = 0; args && i < argc; i++) {
        const char *a = argv[i];
        if (opts && (!strcmp(a, "--help") || !strcmp(a, "-h")))
            return free(args), help_of("report");
        if (opts && !strcmp(a, "--json"))
            json = true;
        else if (opts && !strcmp(a, "--"))
            opts = false;
        else if (opts && a[0] == '-' && a[1])
            return free(args), usage_error("report: unknown option '%s'", a);
        else
            args[n++] = argv[i];
    }
    if (!args)
        return die(EX_FAIL, "out of memory");
    int rc = n ? report_main(args, n, json)
               : usage_error("%s", "report takes a profile's name (as given to profile -o or "
                                   "GPUACCEL_PROFILE) or FILE.json...");
    free(args);
    return rc;
}

/* gpuaccel kernels list | verify [ARGS] | ids FILE [NAME...]: what the
 * library ships, the harness that proves it (kernels/verify, installed beside
 * the library), and the code identities a table's rows name. */
static int cmd_kernels(int argc, char **argv)
{
    opts_t o;
    memset(&o, 0, sizeof o);
    int i = 0;
    if (argc >= 1 && (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")))
        return help_of("kernels");
    if (argc >= 1 && !strncmp(argv[0], "--lib=", 6))
        o.lib = argv[0] + 6, i = 1;
    else if (argc >= 2 && !strcmp(argv[0], "--lib"))
        o.lib = argv[1], i = 2;
    if (i < argc && !strcmp(argv[i], "ids")) { /* the library's code, not the library */
        if (i + 1 >= argc)
            return usage_error("%s", "kernels ids takes FILE [NAME...]");
        int rc = codeids_print(stdout, argv[i + 1], argv + i + 2, argc - i - 2);
        return rc == 2 ? EX_FAIL : rc;
    }
    if (i >= argc || (strcmp(argv[i], "list") && strcmp(argv[i], "verify")))
        return usage_error("%s", "kernels takes list, verify [--kernel NAME] [--quick] or ids "
                                 "FILE [NAME...]");
    if (!strcmp(argv[i], "list") && i + 1 < argc)
        return usage_error("kernels list takes no arguments, not '%s'", argv[i + 1]);
    char lib[PATH_MAX];
    int rc = find_library(&o, lib, sizeof lib);
    if (rc != EX_OK)
        return rc;
    if (!strcmp(argv[i], "list")) {
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        const char *(*table)(void) = h ? (const char *(*)(void))dlsym(h, "gpuaccel_kernels_table") : NULL;
        if (!table)
            return die(EX_FAIL, "%s: cannot read its kernel table: %s", lib, h ? "no table" : dlerror());
        const char *t = table();
        fputs(*t ? t : "# this build ships no replacement kernels (built without nvcc)\n", stdout);
        return EX_OK;
    }
    /* verify: the harness sits in the build tree (kernels/verify) or, installed,
     * in LIBDIR/gpuaccel/verify next to the library. */
    char dir[PATH_MAX], cand[2 * PATH_MAX];
    snprintf(dir, sizeof dir, "%s", lib);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    const char *const rel[] = {"gpuaccel/verify", "../kernels/verify", "../../kernels/verify"};
    for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++) {
        snprintf(cand, sizeof cand, "%s/%s", dir, rel[k]);
        if (access(cand, X_OK) == 0) {
            argv[i] = cand; /* verify's own arguments follow */
            execv(cand, argv + i);
            return die(EX_NOEXEC, "%s: %s", cand, strerror(errno));
        }
    }
    return die(EX_NOTFOUND, "kernels verify: no verify harness beside %s (built without nvcc?)", lib);
}

/* The problems the settings have, as the library would report them. */
typedef struct env_problems {
    unsigned n;
    char text[64][420];
} env_problems_t;

static void collect_problem(void *ctx, const char *var, const char *text)
{
    env_problems_t *p = ctx;
    (void)var;
    if (p->n < 64)
        snprintf(p->text[p->n++], sizeof p->text[0], "%s", text);
}

static const char *getenv_fn(const char *name)
{
    return getenv(name);
}

/* env [--check]: every variable with its default, the value set (environment,
 * else GPUACCEL_CONFIG's file), the effective value, then any problems. */
static int cmd_env(int argc, char **argv)
{
    bool check = false;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--check"))
            check = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return help_of("env");
        else
            return usage_error("env: unknown option '%s' (env takes --check)", argv[i]);
    }
    ga_config_t cfg;
    env_problems_t p = {0};
    ga_config_src_t src = {.get = getenv_fn, .env = environ, .problem = collect_problem, .ctx = &p};
    ga_config_load(&cfg, &src);
    printf("%-26s %-8s %-12s %-12s %s\n", "variable", "default", "set", "effective", "meaning");
    for (unsigned i = 0; i < ga_config_ndocs; i++) {
        const ga_config_doc_t *d = &ga_config_docs[i];
        char buf[64];
        printf("%-26s %-8s %-12s %-12s %s\n", d->name, *d->def ? d->def : "(none)",
               cfg.raw[i] ? cfg.raw[i] : "-", ga_config_effective(&cfg, i, buf, sizeof buf),
               d->help);
    }
    printf("features on by default (GPUACCEL=safe):");
    for (unsigned i = 0; i < ga_config_ndocs; i++)
        if (ga_config_docs[i].type == GA_TYPE_FEATURE && ga_config_docs[i].def[0] == '1')
            printf(" %s", ga_config_docs[i].name);
    printf("\n");
    for (unsigned i = 0; i < p.n; i++)
        printf("problem: %s\n", p.text[i]);
    if (!p.n)
        printf("no problems\n");
    free(cfg.file_text);
    return check && p.n ? EX_FAIL : EX_OK;
}

/* ---- ab -------------------------------------------------------------------------- */
typedef struct row {
    const char *label;
    bool native;
    unsigned mask;    /* features on */
    const char *set;  /* or a named set of GPUACCEL (safe, all): no switch set */
    double *t;        /* seconds, one per measured run */
    bool agree, checked;
    double median, min, max, mean, sd, ratio, rmin, rmax;
} row_t;

typedef struct ab {
    const opts_t *o;
    char lib[PATH_MAX], path[PATH_MAX];
    char outfile[64], errfile[64];
    regex_t re;
    char *reference; /* the native warm-up's digest line or file bytes */
    size_t ref_len;
    unsigned nrows;
    unsigned done;   /* complete rounds measured (fewer than runs after Ctrl-C) */
    double t0;       /* when measuring began, for the progress line */
    row_t rows[N_FEATURES + 4];
} ab_t;

/* Ctrl-C while measuring: the runs in flight are lost (the program got the
 * signal too), the rounds already complete make a partial table. Set by the
 * SIGINT handler only. */
static volatile sig_atomic_t interrupted;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

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
static bool measure(ab_t *a, row_t *r, double *t)
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

static void stats_of(row_t *r, unsigned n)
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
static void ratios_of(row_t *r, const row_t *native, unsigned n)
{
    r->ratio = native->median / r->median;
    r->rmin = r->rmax = native->t[0] / r->t[0];
    for (unsigned i = 1; i < n; i++) {
        double q = native->t[i] / r->t[i];
        r->rmin = q < r->rmin ? q : r->rmin;
        r->rmax = q > r->rmax ? q : r->rmax;
    }
}

static void fmt_time(char *b, size_t cap, double s)
{
    if (s < 1e-3)
        snprintf(b, cap, "%.1f us", s * 1e6);
    else if (s < 1)
        snprintf(b, cap, "%.2f ms", s * 1e3);
    else
        snprintf(b, cap, "%.3f s", s);
}

static const char *agree_text(const ab_t *a, const row_t *r)
{
    return r->native ? (a->reference ? "reference" : "not checked")
           : !a->reference ? "not checked" : r->agree ? "agree" : "DIFFER";
}

static void print_table(FILE *out, const ab_t *a, bool gpu)
{
    const opts_t *o = a->o;
    fprintf(out, "gpuaccel ab: %u run%s each, alternating, after one warm-up%s%s\ncommand:",
            a->done, a->done == 1 ? "" : "s", gpu ? "" : " (no GPU on this machine)",
            a->done < o->runs ? " (interrupted: the rounds completed)" : "");
    for (char **c = o->cmd; *c; c++)
        fprintf(out, " %s", *c);
    fprintf(out, "\n%-10s %11s %21s %11s %11s %9s  %-15s %s\n", "config", "median",
            "mean +/- sigma", "min", "max", "speedup", "(min-max)", "outputs");
    for (unsigned i = 0; i < a->nrows; i++) {
        const row_t *r = &a->rows[i];
        char med[32], mean[32], sd[32], ms[72], mn[32], mx[32], sp[32] = "-", spread[48] = "";
        fmt_time(med, sizeof med, r->median);
        fmt_time(mean, sizeof mean, r->mean);
        fmt_time(sd, sizeof sd, r->sd);
        snprintf(ms, sizeof ms, "%s +/- %s", mean, sd);
        fmt_time(mn, sizeof mn, r->min);
        fmt_time(mx, sizeof mx, r->max);
        if (!r->native) {
            snprintf(sp, sizeof sp, "%.2fx", r->ratio);
            snprintf(spread, sizeof spread, "(%.2f-%.2f)", r->rmin, r->rmax);
        }
        fprintf(out, "%-10s %11s %21s %11s %11s %9s  %-15s %s\n", r->label, med, ms, mn, mx, sp,
                spread, agree_text(a, r));
    }
}

/* --export-csv: one line a row, seconds. */
static void print_csv(FILE *out, const ab_t *a)
{
    fprintf(out, "config,median_s,mean_s,stddev_s,min_s,max_s,speedup,speedup_min,speedup_max,"
                 "outputs\n");
    for (unsigned i = 0; i < a->nrows; i++) {
        const row_t *r = &a->rows[i];
        fprintf(out, "%s,%.6f,%.6f,%.6f,%.6f,%.6f", r->label, r->median, r->mean, r->sd, r->min,
                r->max);
        if (r->native)
            fprintf(out, ",,,,%s\n", agree_text(a, r));
        else
            fprintf(out, ",%.4f,%.4f,%.4f,%s\n", r->ratio, r->rmin, r->rmax, agree_text(a, r));
    }
}

/* --export-markdown: the table as GitHub markdown. */
static void print_markdown(FILE *out, const ab_t *a)
{
    fprintf(out, "| config | median | mean +/- sigma | min | max | speedup | outputs |\n"
                 "| --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
    for (unsigned i = 0; i < a->nrows; i++) {
        const row_t *r = &a->rows[i];
        char med[32], mean[32], sd[32], mn[32], mx[32], sp[64] = "-";
        fmt_time(med, sizeof med, r->median);
        fmt_time(mean, sizeof mean, r->mean);
        fmt_time(sd, sizeof sd, r->sd);
        fmt_time(mn, sizeof mn, r->min);
        fmt_time(mx, sizeof mx, r->max);
        if (!r->native)
            snprintf(sp, sizeof sp, "%.2fx (%.2f-%.2f)", r->ratio, r->rmin, r->rmax);
        fprintf(out, "| %s | %s | %s +/- %s | %s | %s | %s | %s |\n", r->label, med, mean, sd, mn,
                mx, sp, agree_text(a, r));
    }
}

static void json_times(FILE *out, const row_t *r, unsigned n)
{
    fprintf(out, "\"median_s\":%.6f,\"mean_s\":%.6f,\"stddev_s\":%.6f,\"min_s\":%.6f,"
            "\"max_s\":%.6f,\"times_s\":[", r->median, r->mean, r->sd, r->min, r->max);
    for (unsigned i = 0; i < n; i++)
        fprintf(out, "%s%.6f", i ? "," : "", r->t[i]);
    fprintf(out, "]");
}

/* A JSON string on stdout, by the profile's own escaper (valid for any bytes:
 * what is not well-formed UTF-8 becomes U+FFFD). */
static void json_str(FILE *out, const char *s)
{
    char buf[512];
    ga_out_t o = {.fd = fileno(out), .mem = buf, .cap = sizeof buf};
    fflush(out);
    ga_out_js(&o, s);
    ga_out_flush(&o);
}

static void print_json(FILE *out, const ab_t *a, bool gpu, bool agree)
{
    const opts_t *o = a->o;
    fprintf(out, "{\"command\":[");
    for (char **c = o->cmd; *c; c++)
        fprintf(out, "%s", c == o->cmd ? "" : ","), json_str(out, *c);
    fprintf(out, "],\"runs\":%u,\"gpu\":%s,\"check\":", a->done, gpu ? "true" : "false");
    if (o->check_digest)
        fprintf(out, "{\"kind\":\"digest\",\"pattern\":"), json_str(out, o->check_digest), fprintf(out, "}");
    else if (o->check_file)
        fprintf(out, "{\"kind\":\"file\",\"path\":"), json_str(out, o->check_file), fprintf(out, "}");
    else
        fprintf(out, "null");
    fprintf(out, ",\"native\":{");
    json_times(out, &a->rows[0], a->done);
    fprintf(out, "},\"rows\":[");
    for (unsigned i = 1; i < a->nrows; i++) {
        const row_t *r = &a->rows[i];
        fprintf(out, "%s{\"feature\":", i > 1 ? "," : "");
        json_str(out, r->label);
        fprintf(out, ",");
        json_times(out, r, a->done);
        fprintf(out, ",\"speedup\":%.4f,\"speedup_min\":%.4f,\"speedup_max\":%.4f,\"outputs_agree\":%s}",
               r->ratio, r->rmin, r->rmax, !a->reference ? "null" : r->agree ? "true" : "false");
    }
    fprintf(out, "],\"outputs_agree\":%s}\n", !a->reference ? "null" : agree ? "true" : "false");
}

static void svg_text(FILE *f, const char *s)
{
    for (; *s; s++)
        if (*s == '<')
            fputs("&lt;", f);
        else if (*s == '>')
            fputs("&gt;", f);
        else if (*s == '&')
            fputs("&amp;", f);
        else
            fputc(*s, f);
}

/* A horizontal bar per configuration: speedup over native, whiskers from the
 * slowest to the fastest paired ratio, a dashed line at 1.0x. */
/* The GPU's model, from the driver's /proc files; "" if none is there. */
static void gpu_model(char *buf, size_t cap)
{
    buf[0] = '\0';
    glob_t g;
    if (glob("/proc/driver/nvidia/gpus/*/information", 0, NULL, &g) != 0)
        return;
    FILE *f = g.gl_pathc ? fopen(g.gl_pathv[0], "r") : NULL;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Model:", 6)) {
            char *m = line + 6;
            m += strspn(m, " \t");
            m[strcspn(m, "\n")] = '\0';
            snprintf(buf, cap, "%s", m);
            break;
        }
    if (f)
        fclose(f);
    globfree(&g);
}

/* A bar's colour: green when the row beat native in every paired run, red
 * when it lost every one, grey when the runs disagree (within the spread). */
static const char *bar_colour(const row_t *r)
{
    return r->rmin > 1.0 ? "#3b8e4f" : r->rmax < 1.0 ? "#c8553d" : "#9a9a9a";
}

static int write_svg(const ab_t *a, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return die(EX_USAGE, "--svg %s: %s", path, strerror(errno));
    double xmax = 2.0;
    for (unsigned i = 1; i < a->nrows; i++)
        while (a->rows[i].rmax * 1.08 > xmax)
            xmax += 0.5;
    const int left = 150, width = 500, top = 76, bar = 26, gap = 12;
    int n = (int)a->nrows - 1, height = top + n * (bar + gap) + 92;
    char model[128], date[16];
    gpu_model(model, sizeof model);
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d", localtime(&now));
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"13\">\n", left + width + 140, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"10\" y=\"22\" "
               "font-size=\"15\" font-weight=\"bold\">gpuaccel ab: speedup over native (median of "
               "%u runs)</text>\n<text x=\"10\" y=\"40\" fill=\"%s\">", a->done,
            *model ? "#555" : "#c8553d");
    if (*model)
        svg_text(f, model);
    else
        fputs("NO GPU: timings of whatever libcuda.so.1 the command loaded, not a GPU result",
              f);
    fprintf(f, ", %s, libgpuaccel %s</text>\n<text x=\"10\" y=\"58\" fill=\"#555\">", date,
            PACKAGE_VERSION);
    for (char **c = a->o->cmd; *c; c++)
        svg_text(f, *c), fputc(' ', f);
    fputs("</text>\n", f);
    double sx = width / xmax;
    for (int i = 0; i < n; i++) {
        const row_t *r = &a->rows[i + 1];
        int y = top + i * (bar + gap);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", left - 8, y + bar / 2 + 5);
        svg_text(f, r->label);
        fprintf(f, "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n",
                left, y, r->ratio * sx, bar, bar_colour(r));
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
                left + r->rmin * sx, left + r->rmax * sx, y + bar / 2, y + bar / 2);
        /* The value right of the plot, clear of the 1.0x line and the whiskers;
         * three decimals where two would round to 1.00 and hide the sign. */
        bool near = r->ratio != 1.0 && fabs(r->ratio - 1.0) < 0.005;
        fprintf(f, near ? "<text x=\"%d\" y=\"%d\">%.3fx%s</text>\n"
                        : "<text x=\"%d\" y=\"%d\">%.2fx%s</text>\n", left + width + 8,
                y + bar / 2 + 5, r->ratio, !a->reference || r->agree ? "" : " (outputs DIFFER)");
    }
    int base = top + n * (bar + gap);
    for (double x = 0; x <= xmax + 1e-9; x += 0.5)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#555\">%.1fx</text>\n",
                left + x * sx, base + 16, x);
    fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#333\" "
               "stroke-dasharray=\"5,4\"/>\n", left + sx, left + sx, top - 6, base);
    fprintf(f, "<text x=\"10\" y=\"%d\" fill=\"#333\">dashed line: 1.0x = native; bar: median "
               "speedup; whisker: range of the paired per-run speedups</text>\n", base + 40);
    fprintf(f, "<rect x=\"10\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#3b8e4f\"/><text x=\"27\" "
               "y=\"%d\">faster in every run</text>\n", base + 52, base + 63);
    fprintf(f, "<rect x=\"170\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#c8553d\"/><text "
               "x=\"187\" y=\"%d\">slower in every run</text>\n", base + 52, base + 63);
    fprintf(f, "<rect x=\"330\" y=\"%d\" width=\"12\" height=\"12\" fill=\"#9a9a9a\"/><text "
               "x=\"347\" y=\"%d\">within the run-to-run spread</text>\n</svg>\n", base + 52,
            base + 63);
    return fclose(f) == 0 ? EX_OK : die(EX_USAGE, "--svg %s: %s", path, strerror(errno));
}

static void add_row(ab_t *a, const char *label, bool native, unsigned mask)
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

static int ab_measure(ab_t *a)
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

/* --export-json/-csv/-markdown FILE: the results beside the table. */
static int ab_exports(const ab_t *a, bool gpu, bool agree)
{
    const opts_t *o = a->o;
    const char *paths[3] = {o->export_json, o->export_csv, o->export_md};
    for (unsigned i = 0; i < 3; i++) {
        if (!paths[i])
            continue;
        FILE *f = fopen(paths[i], "w");
        if (!f)
            return die(EX_FAIL, "cannot write %s: %s", paths[i], strerror(errno));
        if (i == 0)
            print_json(f, a, gpu, agree);
        else if (i == 1)
            print_csv(f, a);
        else
            print_markdown(f, a);
        if (fclose(f) != 0)
            return die(EX_FAIL, "cannot write %s: %s", paths[i], strerror(errno));
    }
    return EX_OK;
}

/* What ab and advise do first: the library, the command, the GPU check, the
 * digest pattern and the capture files. Sets *gpu. */
static int ab_setup(ab_t *a, opts_t *o, bool *gpu)
{
    a->o = o;
    int rc = find_library(o, a->lib, sizeof a->lib);
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

static int cmd_ab(opts_t *o)
{
    static ab_t a;
    bool gpu;
    int rc = ab_setup(&a, o, &gpu);
    if (rc != EX_OK)
        return rc;
    add_row(&a, "native", true, 0);
    if (o->per_feature)
        for (int i = 0; i < N_FEATURES; i++)
            add_row(&a, features[i], false, 1u << i);
    if (o->config) { /* the file alone (gpuaccel advise --write) */
        add_row(&a, "config", false, 0);
        a.rows[a.nrows - 1].set = "config";
    } else if (o->per_feature || o->ab_feature < 0)
        add_row(&a, "all", false, (1u << N_FEATURES) - 1);
    else
        add_row(&a, features[o->ab_feature], false, 1u << o->ab_feature);
    rc = ab_measure(&a);
    unlink(a.outfile);
    unlink(a.errfile);
    if (rc != EX_OK && rc != EX_INTERRUPTED)
        return rc;
    bool agree = true;
    for (unsigned i = 0; i < a.nrows; i++) {
        stats_of(&a.rows[i], a.done);
        agree = agree && a.rows[i].agree;
    }
    for (unsigned i = 1; i < a.nrows; i++)
        ratios_of(&a.rows[i], &a.rows[0], a.done);
    if (o->json)
        print_json(stdout, &a, gpu, agree);
    else
        print_table(stdout, &a, gpu);
    int erc = ab_exports(&a, gpu, agree);
    if (o->svg && erc == EX_OK)
        erc = write_svg(&a, o->svg);
    if (rc == EX_INTERRUPTED || erc != EX_OK)
        return rc == EX_INTERRUPTED ? rc : erc;
    if (!agree)
        return die(EX_FAIL, "outputs differ between the native run and the library's");
    return EX_OK;
}

/* ---- advise ---------------------------------------------------------------------- */

/* The features on under GPUACCEL=safe, from the settings table. */
static unsigned safe_mask(void)
{
    unsigned m = 0;
    for (int i = 0; i < N_FEATURES; i++)
        for (unsigned k = 0; k < ga_config_ndocs; k++)
            if (!strcmp(ga_config_docs[k].name, feature_vars[i]) && ga_config_docs[k].def[0] == '1')
                m |= 1u << i;
    return m;
}

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
static void advise_profile(const ab_t *a)
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
static bool beyond_spread(const ab_t *a, const row_t *r)
{
    const row_t *n = &a->rows[0];
    double spread = n->median > 0 ? (n->max - n->min) / n->median : 0;
    return r->rmin > 1.0 && r->ratio - 1.0 > spread;
}

/* The best row whose outputs agree and that beat native beyond the spread;
 * else the defaults if they lost no more than the spread; NULL: run natively. */
static const row_t *advise_best(const ab_t *a)
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
static void advise_print(const ab_t *a, const row_t *best, unsigned mask)
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

static int cmd_advise(opts_t *o)
{
    static ab_t a;
    bool gpu;
    int rc = ab_setup(&a, o, &gpu);
    if (rc != EX_OK)
        return rc;
    if (!o->check_digest && !o->check_file)
        fprintf(stderr, "gpuaccel advise: no --check-digest or --check-file: the whole standard "
                        "output must match the native run's\n");
    advise_profile(&a);
    add_row(&a, "native", true, 0);
    /* Tune without a table rewrites nothing: its row would time noise. */
    const char *table = getenv("GPUACCEL_TUNE_TABLE");
    unsigned every = 0;
    for (int i = 0; i < N_FEATURES; i++)
        if (strcmp(feature_vars[i], "GPUACCEL_TUNE") || (table && *table)) {
            add_row(&a, features[i], false, 1u << i);
            every |= 1u << i;
        }
    add_row(&a, "defaults", false, safe_mask());
    a.rows[a.nrows - 1].set = "safe";
    add_row(&a, "all", false, every); /* every feature that can act here */
    fprintf(stderr, "gpuaccel advise: %u settings, %u runs each after a warm-up...\n",
            a.nrows, o->runs);
    rc = ab_measure(&a);
    if (rc == EX_OK) {
        for (unsigned i = 0; i < a.nrows; i++)
            stats_of(&a.rows[i], a.done);
        for (unsigned i = 1; i < a.nrows; i++)
            ratios_of(&a.rows[i], &a.rows[0], a.done);
        /* The features that won alone, together, if that is a new setting:
         * measured in a second round against native again. */
        unsigned winners = 0;
        for (unsigned i = 1; i < a.nrows; i++)
            if (!a.rows[i].set && __builtin_popcount(a.rows[i].mask) == 1 && a.rows[i].agree &&
                beyond_spread(&a, &a.rows[i]))
                winners |= a.rows[i].mask;
        bool known = false;
        for (unsigned i = 1; i < a.nrows; i++)
            known |= a.rows[i].mask == winners;
        if (winners && !known) {
            fprintf(stderr, "gpuaccel advise: the winners together...\n");
            add_row(&a, "winners", false, winners);
            row_t *w = &a.rows[a.nrows - 1];
            double *nat = calloc(o->runs, sizeof *nat);
            double t;
            rc = nat && measure(&a, w, &t) ? EX_OK : EX_FAIL;
            for (unsigned k = 0; rc == EX_OK && k < o->runs; k++)
                if (!measure(&a, &a.rows[0], &nat[k]) || !measure(&a, w, &w->t[k]))
                    rc = EX_FAIL;
            if (rc == EX_OK) {
                row_t native2 = a.rows[0];
                native2.t = nat;
                stats_of(&native2, o->runs);
                stats_of(w, o->runs);
                ratios_of(w, &native2, o->runs);
            }
            free(nat);
        }
    }
    unlink(a.outfile);
    unlink(a.errfile);
    if (rc != EX_OK)
        return rc;
    print_table(stdout, &a, gpu);
    const row_t *best = advise_best(&a);
    unsigned mask = best ? best->mask : 0;
    if (o->write && (rc = advise_write(o->write, mask, best)) != EX_OK)
        return rc;
    advise_print(&a, best, mask);
    return EX_OK;
}

int main(int argc, char **argv)
{
    features_init();
    if (argc < 2)
        return usage(stderr), EX_USAGE;
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help"))
        return usage(stdout), EX_OK;
    if (!strcmp(cmd, "--version"))
        return printf("gpuaccel %s\n", PACKAGE_VERSION), EX_OK;
    if (!strcmp(cmd, "report"))
        return cmd_report(argc - 2, argv + 2);
    if (!strcmp(cmd, "env"))
        return cmd_env(argc - 2, argv + 2);
    if (!strcmp(cmd, "kernels"))
        return cmd_kernels(argc - 2, argv + 2);
    bool known = !strcmp(cmd, "run") || !strcmp(cmd, "profile") || !strcmp(cmd, "ab") ||
                 !strcmp(cmd, "tune") || !strcmp(cmd, "advise");
    if (!known)
        return usage_error("unknown command '%s' (run, profile, tune, report, ab, advise, "
                           "kernels, env)",
                           cmd);
    opts_t o = {.runs = 5, .ab_feature = -1};
    int rc = parse(cmd, argc - 1, argv + 1, &o);
    if (rc != EX_OK)
        return rc;
    if (!strcmp(cmd, "run"))
        return cmd_run(&o);
    if (!strcmp(cmd, "tune"))
        return cmd_tune(&o);
    if (!strcmp(cmd, "advise"))
        return cmd_advise(&o);
    return !strcmp(cmd, "profile") ? cmd_profile(&o) : cmd_ab(&o);
}
