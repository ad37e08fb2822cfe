/* gpuaccel.c - the gpuaccel command: the table of its commands, the usage
 * text and --help made from it, the options of the commands that run a
 * program, and main.
 *
 * Owns: the command table (one row a command: dispatch, usage and --help
 * read it, nothing else names the commands) and the option table (which
 * option each command takes).
 * The commands live in their own files: run, env, kernels and report in
 * cmd_misc.c, profile and tune in cmd_profile.c, ab in ab.c, advise in
 * advise.c; what they share is in cli.h (common.c), bench.h and phase.h (the
 * program's output read as it arrives, the windows its lines mark).
 * Exit codes (man/gpuaccel.1): 0 ok; 1 outputs differ or a run failed (run
 * and profile pass the command's own status through); 2 usage error, library
 * or report not found; 77 --require-gpu without a GPU; 126 command not
 * executable; 127 command not found. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* The commands that take options before CMD, as bits: an option's row says
 * which take it. */
enum { C_RUN = 1, C_PROFILE = 2, C_TUNE = 4, C_AB = 8, C_ADVISE = 16, C_ALL = 31 };

/* %s in `help` is the feature list. */
const command_t commands[] = {
    {"run", cmd_run,
     "run CMD with libgpuaccel preloaded; LIST: comma-separated features (%s)",
     "[--config FILE] [--enable LIST] [--disable LIST] [--lib PATH] [--] CMD [ARGS...]", C_RUN},
    {"profile", cmd_profile,
     "write FILE.txt, FILE.json, FILE.trace.json (default FILE: gpuaccel-profile);\n"
     "          -o is checked before CMD runs; features are off unless --enable, --config\n"
     "          or the environment turns them on; a signal to gpuaccel goes to CMD;\n"
     "          --phase counts only between CMD's START and END lines",
     "[-o FILE] [--force] [--kernels] [--phase START END] [--config FILE]\n"
     "          [--enable LIST] [--disable LIST] [--lib PATH] [--] CMD [ARGS...]", C_PROFILE},
    {"tune", cmd_tune,
     "run CMD once under the tuner; write the configurations it proved\n"
     "          bit-identical and faster (default FILE: gpuaccel-tune.table)",
     "[-o FILE] [--force] [--kernel PATTERN] [--exhaustive] [--lib PATH] [--] CMD [ARGS...]",
     C_TUNE},
    {"report", cmd_report,
     "print a profile's report again; NAME (as given to profile -o) merges\n"
     "          every process's profile of that run (NAME.json, NAME.PID.json,\n"
     "          NAME.rankR.PID.json), as do several FILEs; --json: the merged view as JSON",
     "[--json] NAME | FILE.json...", 0},
    {"ab", cmd_ab,
     "time CMD natively and under the library, alternating, after a warm-up;\n"
     "          progress on a terminal; Ctrl-C prints (and exports) the rounds completed",
     "[-r N] [-w N] [-i] [--feature NAME|all | --per-feature | --enable LIST | --config FILE]\n"
     "          [--metric REGEX | --phase START END] [--check-digest REGEX | --check-file PATH]\n"
     "          [--command-name NAME] [--json] [--svg FILE] [--export-json FILE]\n"
     "          [--export-csv FILE] [--export-markdown FILE] [--require-gpu] [--lib PATH]\n"
     "          [--] CMD [ARGS...]", C_AB},
    {"advise", cmd_advise,
     "profile CMD, then measure, starting from the profile's ranking, each feature\n"
     "          alone, every feature, every feature but one, the defaults and the defaults\n"
     "          plus each feature that paid; repeat the close contenders until their\n"
     "          intervals separate or the budget is spent; print the winner (the\n"
     "          defaults when the data cannot tell them from the fastest), measured\n"
     "          again in fresh rounds",
     "[-r N] [-w N] [-i] [--budget SECONDS] [--no-tune] [--write FILE]\n"
     "          [--metric REGEX | --phase START END] [--window START END]\n"
     "          [--check-digest REGEX | --check-file PATH]\n"
     "          [--command-name NAME] [--export-json FILE] [--export-csv FILE]\n"
     "          [--export-markdown FILE] [--require-gpu] [--lib PATH] [--] CMD [ARGS...]",
     C_ADVISE},
    {"kernels", cmd_kernels,
     "the replacement kernels shipped in the library (with --program, each row\n"
     "          and GPUACCEL_KERNELS_EXTRA's against FILE: replaced, or why not); verify\n"
     "          runs each against its original on fresh random inputs, bit for bit, and\n"
     "          times both; ids prints the code identities (code=) of the kernels of FILE\n"
     "          (a program, shared library, fatbin, cubin or PTX) for a table's rows",
     "[--lib PATH] list [--program FILE] | verify [--kernel NAME] [--quick] |\n"
     "          ids FILE [NAME...]", 0},
    {"env", cmd_env,
     "every GPUACCEL_* variable: default, value set, effective value, problems\n"
     "          (--check: exit 1 if any); --markdown: the settings table, as doc/settings.md\n"
     "          shows it",
     "[--check | --markdown]", 0},
};
const unsigned n_commands = sizeof commands / sizeof commands[0];

static const char usage_tail[] =
    "\n  -h, --help; -V, --version; gpuaccel COMMAND --help for one command's options and defaults\n"
    "exit: 0 ok, 1 outputs differ, a run failed or no profile was written, 2 usage,\n"
    "      77 no GPU (--require-gpu), 126 CMD not executable, 127 CMD not found,\n"
    "      130/143 ab or advise interrupted; run, profile and tune return CMD's status\n";

static const command_t *command_named(const char *name)
{
    for (unsigned i = 0; i < n_commands; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

static void command_usage(FILE *to, const command_t *c, bool alone)
{
    fprintf(to, alone ? "usage: gpuaccel %s %s\n  " : "  %-7s %s\n          ", c->name, c->usage);
    fprintf(to, c->help, feature_list);
    fputc('\n', to);
}

static void usage(FILE *to)
{
    fputs("usage: gpuaccel COMMAND [OPTIONS] [--] CMD [ARGS...]\n\n", to);
    for (unsigned i = 0; i < n_commands; i++)
        command_usage(to, &commands[i], false);
    fputs(usage_tail, to);
}

/* ---- options ------------------------------------------------------------------------ */
enum {
    O_LIB = 256, O_ENABLE, O_DISABLE, O_CONFIG, O_FORCE, O_KERNELS, O_KERNEL, O_EXHAUSTIVE,
    O_FEATURE, O_PER_FEATURE, O_CHECK_DIGEST, O_CHECK_FILE, O_JSON, O_SVG, O_REQUIRE_GPU, O_WRITE,
    O_EXPORT_JSON, O_EXPORT_CSV, O_EXPORT_MD, O_COMMAND_NAME, O_METRIC, O_PHASE, O_WINDOW,
    O_BUDGET, O_NO_TUNE
};

/* Every option: its names, the value it takes, the commands that take it and
 * what it does, with its default. An option whose meaning or default differs
 * between commands has a row for each. getopt_long's table, the option checks
 * and each command's --help come from this one list. */
typedef struct opt_doc {
    const char *name;
    int id;        /* the short option's letter, or O_* */
    int letter;    /* the short form, or 0 */
    const char *arg; /* the value's name, or NULL: no value */
    unsigned cmds;
    const char *help;
} opt_doc_t;

static const opt_doc_t opt_docs[] = {
    {"output", 'o', 'o', "FILE", C_PROFILE,
     "base name of the three files (a .json, .txt or .trace.json ending is taken off); "
     "default: gpuaccel-profile"},
    {"output", 'o', 'o', "FILE", C_TUNE, "the table written; default: gpuaccel-tune.table"},
    {"force", O_FORCE, 0, NULL, C_PROFILE | C_TUNE,
     "overwrite what -o names (and, for profile, remove the earlier run's per-process "
     "profiles); default: an existing file is an error"},
    {"kernels", O_KERNELS, 0, NULL, C_PROFILE,
     "time every kernel with CUDA events (more overhead); default: off"},
    {"kernel", O_KERNEL, 0, "PATTERN", C_TUNE,
     "comma-separated globs of the kernel names tried; default: * (every kernel)"},
    {"exhaustive", O_EXHAUSTIVE, 0, NULL, C_TUNE,
     "try every multiple of 32 dividing the thread count; default: powers of two"},
    {"runs", 'r', 'r', "N", C_AB, "measured runs of each setting, 1 to 10000; default: 5"},
    {"runs", 'r', 'r', "N", C_ADVISE,
     "rounds of the first pass over every setting, 1 to 10000 (close contenders get more "
     "while the budget lasts), and the pick's fresh rounds (at least 5, as ab runs); default: 3"},
    {"warmup", 'w', 'w', "N", C_AB,
     "runs of each setting before the measured ones, not counted, 0 to 10000; default: 1"},
    {"warmup", 'w', 'w', "N", C_ADVISE,
     "runs of each setting before its first measured one, not counted, 0 to 10000; "
     "default: 0 (the profile run warmed the caches)"},
    {"ignore-failure", 'i', 'i', NULL, C_AB | C_ADVISE,
     "time a run that exits non-zero like any other; default: it stops the measurement "
     "(a run killed by a signal always does)"},
    {"command-name", O_COMMAND_NAME, 0, "NAME", C_AB | C_ADVISE,
     "the command's name in the table and the exports; default: the command line"},
    {"metric", O_METRIC, 0, "REGEX", C_AB | C_ADVISE,
     "measure the number the program prints: the first group of the last standard-output "
     "line matching REGEX, lower is better; a run with no such line is an error; "
     "default: the wall time of the whole process"},
    {"phase", O_PHASE, 0, "START END", C_AB,
     "measure the wall time from the first output line (stdout or stderr) matching START to "
     "the first matching END after it, timed as the lines arrive (a program writing to a "
     "pipe must flush them); default: the whole process"},
    {"phase", O_PHASE, 0, "START END", C_ADVISE,
     "measure the wall time from the first output line (stdout or stderr) matching START to "
     "the first matching END after it, timed as the lines arrive (a program writing to a "
     "pipe must flush them), and profile only between such lines (as profile --phase); "
     "default: the whole process"},
    {"phase", O_PHASE, 0, "START END", C_PROFILE,
     "count only while CMD is inside a window: from an output line (stdout or stderr) "
     "matching START to the next matching END, every window, as the lines arrive (a program "
     "writing to a pipe must flush them; its output is passed on as it comes); no line "
     "matching START is an error, the profile still written; default: the whole process"},
    {"window", O_WINDOW, 0, "START END", C_ADVISE,
     "profile only between such lines, as profile --phase does, whatever is measured (with "
     "--metric, say); default: --phase's lines, else the whole process"},
    {"feature", O_FEATURE, 0, "NAME|all", C_AB,
     "the library row has only NAME on (all: every feature); default: all"},
    {"per-feature", O_PER_FEATURE, 0, NULL, C_AB,
     "a row for each feature alone, then all; default: one row"},
    {"config", O_CONFIG, 0, "FILE", C_RUN | C_PROFILE,
     "GPUACCEL_CONFIG=FILE (NAME=VALUE lines, as advise --write writes); default: none"},
    {"config", O_CONFIG, 0, "FILE", C_AB,
     "the library row has FILE's settings alone (no switch set); default: none"},
    {"enable", O_ENABLE, 0, "LIST", C_RUN | C_PROFILE,
     "switch these features on (a comma-separated list, or all); default: the environment's "
     "setting (profile: off)"},
    {"disable", O_DISABLE, 0, "LIST", C_RUN | C_PROFILE,
     "switch these features off; default: the environment's setting"},
    {"enable", O_ENABLE, 0, "LIST", C_AB,
     "the library row is the defaults (GPUACCEL=safe, or every feature for all) with these "
     "on, as run --enable would start it; default: --feature all"},
    {"disable", O_DISABLE, 0, "LIST", C_AB,
     "the library row is the defaults with these off; default: --feature all"},
    {"check-digest", O_CHECK_DIGEST, 0, "REGEX", C_AB | C_ADVISE,
     "compare the first standard-output line matching REGEX (extended) with the native "
     "run's; a run with no such line is an error; default: outputs not compared"},
    {"check-file", O_CHECK_FILE, 0, "PATH", C_AB | C_ADVISE,
     "compare every byte of PATH after each run with the native run's; default: none"},
    {"json", O_JSON, 0, NULL, C_AB, "print the results as JSON; default: the table"},
    {"svg", O_SVG, 0, "FILE", C_AB, "also write a bar chart of the speedups; default: none"},
    {"export-json", O_EXPORT_JSON, 0, "FILE", C_AB | C_ADVISE,
     "also write the results as JSON (written on an interrupt too, marked); default: none"},
    {"export-csv", O_EXPORT_CSV, 0, "FILE", C_AB | C_ADVISE,
     "also write the results as CSV; default: none"},
    {"export-markdown", O_EXPORT_MD, 0, "FILE", C_AB | C_ADVISE,
     "also write the results as a markdown table; default: none"},
    {"require-gpu", O_REQUIRE_GPU, 0, NULL, C_AB | C_ADVISE,
     "exit 77 on a machine without a GPU; default: a note, then timing whatever "
     "libcuda.so.1 the command loads"},
    {"write", O_WRITE, 0, "FILE", C_ADVISE,
     "write the winning setting as GPUACCEL_CONFIG lines (ab --config FILE measures it "
     "again); default: none"},
    {"budget", O_BUDGET, 0, "SECONDS", C_ADVISE,
     "time for measuring, after the profile and the tuner (the first pass runs each setting "
     "at least once however long it takes; a tuner run gets a quarter of it); default: 120"},
    {"no-tune", O_NO_TUNE, 0, NULL, C_ADVISE,
     "do not run the tuner; default: run it on the busiest kernels when the profile cannot "
     "tell what tune would do and a tuner run fits the budget"},
    {"lib", O_LIB, 0, "PATH", C_ALL,
     "the library; default: $GPUACCEL_LIB, else beside this executable (../lib, .libs, "
     "../.libs)"},
    {"help", 'h', 'h', NULL, C_ALL, "print this help"},
};
enum { N_OPT_DOCS = sizeof opt_docs / sizeof opt_docs[0] };

static const opt_doc_t *doc_of(int id, unsigned bit)
{
    for (unsigned i = 0; i < N_OPT_DOCS; i++)
        if (opt_docs[i].id == id && (opt_docs[i].cmds & bit))
            return &opt_docs[i];
    return NULL;
}

/* `text` folded to lines of at most `width` columns, each after `indent` spaces. */
static void fold(FILE *to, const char *text, unsigned indent, unsigned col, unsigned width)
{
    while (*text) {
        size_t room = width > col ? width - col : 20, n = strlen(text);
        if (n > room) {
            n = room;
            while (n > 0 && text[n] != ' ')
                n--;
            if (!n)
                n = strcspn(text, " ");
        }
        fprintf(to, "%.*s\n", (int)n, text);
        text += n;
        while (*text == ' ')
            text++;
        if (*text)
            fprintf(to, "%*s", (int)indent, ""), col = indent;
    }
}

int help_of(const char *name)
{
    const command_t *c = command_named(name);
    if (!c) {
        usage(stdout);
        return EX_OK;
    }
    command_usage(stdout, c, true);
    if (!c->bit)
        return EX_OK;
    printf("options:\n");
    for (unsigned i = 0; i < N_OPT_DOCS; i++) {
        const opt_doc_t *d = &opt_docs[i];
        if (!(d->cmds & c->bit))
            continue;
        char left[64];
        int n = snprintf(left, sizeof left, "  %s%c%s--%s%s%s", d->letter ? "-" : "",
                         d->letter ? d->letter : ' ', d->letter ? ", " : "  ", d->name,
                         d->arg ? " " : "", d->arg ? d->arg : "");
        if (!d->letter) /* no short form: the long one lines up with the others' */
            n = snprintf(left, sizeof left, "      --%s%s%s", d->name, d->arg ? " " : "",
                         d->arg ? d->arg : "");
        printf("%-28s", left);
        if (n >= 28)
            printf("\n%28s", "");
        fold(stdout, d->help, 28, 28, 96);
    }
    return EX_OK;
}

static bool parse_count(const char *s, long lo, long hi, unsigned *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = (unsigned)v;
    return true;
}

/* Is the word an option of ours (so that it cannot be a value)? "--",
 * "--name..." and a short option. */
static bool option_word(const char *w)
{
    if (!strncmp(w, "--", 2))
        return true;
    if (w[0] != '-' || !w[1])
        return false;
    for (unsigned i = 0; i < N_OPT_DOCS; i++)
        if (opt_docs[i].letter == w[1])
            return true;
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
    case 'r':
        if (!parse_count(v, 1, 10000, &o->runs))
            return usage_error("%s: --runs wants a number of runs from 1 to 10000, not '%s'",
                               cmd, v);
        break;
    case 'w':
        if (!parse_count(v, 0, 10000, &o->warmup))
            return usage_error("%s: --warmup wants a number of runs from 0 to 10000, not '%s'",
                               cmd, v);
        break;
    case 'i': o->ignore_failure = true; break;
    case O_COMMAND_NAME: o->command_name = v; break;
    case O_METRIC: o->metric = v, o->measure = M_METRIC; break;
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
    case O_BUDGET: {
        char *end;
        errno = 0;
        o->budget_s = strtod(v, &end);
        if (errno || end == v || *end || !(o->budget_s > 0) || o->budget_s > 1e7)
            return usage_error("%s: --budget wants a number of seconds above 0, not '%s'", cmd,
                               v);
        break;
    }
    case O_NO_TUNE: o->no_tune = true; break;
    default: break;
    }
    return EX_OK;
}

int parse_opts(int argc, char **argv, opts_t *o)
{
    const char *cmd = argv[0];
    const command_t *command = command_named(cmd);
    unsigned bit = command ? command->bit : 0;
    /* getopt_long's table: each name once */
    static struct option long_opts[N_OPT_DOCS + 1];
    char shorts[32] = "+:";
    unsigned nl = 0;
    for (unsigned i = 0; i < N_OPT_DOCS; i++) {
        const opt_doc_t *d = &opt_docs[i];
        bool seen = false;
        for (unsigned k = 0; k < nl; k++)
            seen = seen || !strcmp(long_opts[k].name, d->name);
        if (!seen)
            long_opts[nl++] = (struct option){d->name, d->arg ? required_argument : no_argument,
                                              NULL, d->id};
        if (d->letter && !strchr(shorts, d->letter)) {
            size_t n = strlen(shorts);
            shorts[n] = (char)d->letter, shorts[n + 1] = '\0';
            if (d->arg)
                strcat(shorts, ":");
        }
    }
    long_opts[nl] = (struct option){NULL, 0, NULL, 0};
    optind = 1, opterr = 0;
    int c, idx = -1;
    while ((c = getopt_long(argc, argv, shorts, long_opts, &idx)) != -1) {
        char as[64]; /* the option's name, as the user would write it */
        if (idx >= 0)
            snprintf(as, sizeof as, "--%s", long_opts[idx].name);
        else if (c != '?' && c != ':')
            snprintf(as, sizeof as, "-%c", c);
        else if (optopt > 0 && optopt < 256)
            snprintf(as, sizeof as, "-%c", optopt);
        else
            snprintf(as, sizeof as, "%s", argv[optind - 1]);
        if (c == '?' && optopt == 'n' && (bit & (C_AB | C_ADVISE)))
            return usage_error("%s: unknown option '-n': the runs are -r/--runs N (in "
                               "hyperfine, whose option names these follow, -n names the "
                               "command: --command-name here)", cmd);
        if (c == '?')
            return usage_error("%s: unknown option '%s'", cmd, as);
        if (c == ':')
            return usage_error("%s: %s needs a value", cmd, as);
        const opt_doc_t *d = doc_of(c, bit);
        if (!d)
            return usage_error("%s: %s is not an option of %s", cmd, as, cmd);
        if (c == 'h')
            exit(help_of(cmd));
        /* A value given as the next word must not be an option: `--export-json
         * -- ./prog` would otherwise write a file named "--". */
        if (optarg && optarg == argv[optind - 1] && option_word(optarg))
            return usage_error("%s: %s needs a value, not the option '%s' (%s=%s gives that "
                               "value)", cmd, as, optarg, as, optarg);
        if (c == O_PHASE || c == O_WINDOW) { /* START END: END is the next word */
            if (optind >= argc || !strcmp(argv[optind], "--"))
                return usage_error("%s: %s needs two values: START END", cmd, as);
            const char *end = argv[optind++];
            if (c == O_PHASE)
                o->phase_start = optarg, o->phase_end = end, o->measure = M_PHASE;
            else
                o->window_start = optarg, o->window_end = end;
        }
        int rc = take(cmd, c, optarg, o);
        if (rc != EX_OK)
            return rc;
        idx = -1;
    }
    if (optind >= argc)
        return usage_error("%s: no command to run (gpuaccel %s [OPTIONS] -- CMD ARGS)", cmd, cmd);
    if (o->check_digest && o->check_file)
        return usage_error("%s: choose --check-digest or --check-file, not both", cmd);
    if (o->metric && o->phase_start)
        return usage_error("%s: choose --metric or --phase, not both", cmd);
    if (o->window_start && o->phase_start)
        return usage_error("%s: choose --phase or --window, not both (--phase's lines are the "
                           "profile's window too)", cmd);
    bool toggled = o->enable_all;
    for (int i = 0; i < N_FEATURES; i++)
        toggled = toggled || o->feature_set[i];
    if ((bit & C_AB) && o->config && toggled)
        return usage_error("%s: choose --config or --enable/--disable, not both", cmd);
    o->cmd = argv + optind;
    return EX_OK;
}

int main(int argc, char **argv)
{
    features_init();
    if (argc < 2)
        return usage(stderr), EX_USAGE;
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help"))
        return usage(stdout), EX_OK;
    if (!strcmp(name, "--version") || !strcmp(name, "-V"))
        return printf("gpuaccel %s\n", PACKAGE_VERSION), EX_OK;
    const command_t *c = command_named(name);
    if (!c) {
        char names[256];
        size_t len = 0;
        for (unsigned i = 0; i < n_commands; i++)
            len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "",
                                    commands[i].name);
        return usage_error("unknown command '%s' (%s)", name, names);
    }
    return c->run(argc - 1, argv + 1);
}
