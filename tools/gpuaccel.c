/* gpuaccel.c - the gpuaccel command: the table of its commands, the usage
 * text and --help made from it, the options of the commands that run a
 * program, and main.
 *
 * Owns: the command table (one row a command: dispatch, usage and --help
 * read it, nothing else names the commands) and the option table (which
 * option each command takes).
 * The commands live in their own files: run, env, kernels and report in
 * cmd_misc.c, profile and tune in cmd_profile.c, ab in ab.c, advise in
 * advise.c; what they share is in cli.h (common.c) and bench.h.
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
     "[--lib PATH] [--config FILE] [--enable LIST] [--disable LIST] [--] CMD [ARGS...]", C_RUN},
    {"profile", cmd_profile,
     "write FILE.txt, FILE.json, FILE.trace.json (default FILE: gpuaccel-profile);\n"
     "          -o is checked before CMD runs; --force overwrites; features are off\n"
     "          unless --enable or the environment turns them on",
     "[-o FILE] [--force] [--kernels] [--lib PATH] [--enable LIST] [--disable LIST] [--] CMD",
     C_PROFILE},
    {"tune", cmd_tune,
     "run CMD once under the tuner; write the configurations it proved\n"
     "          bit-identical and faster (default FILE: gpuaccel-tune.table)",
     "[-o FILE] [--force] [--kernel PATTERN] [--exhaustive] [--lib PATH] [--] CMD", C_TUNE},
    {"report", cmd_report,
     "print a profile's report again; NAME (as given to profile -o) merges\n"
     "          every process's profile of that run (NAME.json, NAME.PID.json,\n"
     "          NAME.rankR.PID.json), as do several FILEs; --json: the merged view as JSON",
     "[--json] NAME | FILE.json...", 0},
    {"ab", cmd_ab,
     "time CMD natively and under the library, alternating, after a warm-up;\n"
     "          progress on a terminal; Ctrl-C prints the rounds completed",
     "[-n RUNS] [--feature NAME|all] [--per-feature] [--config FILE]\n"
     "          [--check-digest REGEX] [--check-file PATH] [--json] [--svg FILE] [--require-gpu]\n"
     "          [--export-json FILE] [--export-csv FILE] [--export-markdown FILE]\n"
     "          [--lib PATH] [--] CMD", C_AB},
    {"advise", cmd_advise,
     "profile CMD once, A/B each feature, the defaults, every feature and the\n"
     "          winners together; print the fastest setting whose outputs agree",
     "[-n RUNS] [--check-digest REGEX] [--check-file PATH] [--write FILE]\n"
     "          [--require-gpu] [--lib PATH] [--] CMD", C_ADVISE},
    {"kernels", cmd_kernels,
     "the replacement kernels shipped in the library; verify runs each\n"
     "          against its original on fresh random inputs, bit for bit, and times both;\n"
     "          ids prints the code identities (code=) of the kernels of FILE (a program,\n"
     "          shared library, fatbin, cubin or PTX) for a table's rows",
     "[--lib PATH] list | verify [--kernel NAME] [--quick] | ids FILE [NAME...]", 0},
    {"env", cmd_env,
     "every GPUACCEL_* variable: default, value set, effective value, problems\n"
     "          (--check: exit 1 if any)",
     "[--check]", 0},
};
const unsigned n_commands = sizeof commands / sizeof commands[0];

static const char usage_tail[] =
    "\n  --help, --version; gpuaccel COMMAND --help for one command\n"
    "exit: 0 ok, 1 outputs differ or a run failed, 2 usage, 77 no GPU (--require-gpu),\n"
    "      126 CMD not executable, 127 CMD not found; run and profile return CMD's status\n";

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

int help_of(const char *name)
{
    const command_t *c = command_named(name);
    if (c)
        command_usage(stdout, c, true);
    else
        usage(stdout);
    return EX_OK;
}

/* ---- options ------------------------------------------------------------------------ */
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

static bool takes(int opt, unsigned bit)
{
    for (size_t i = 0; i < sizeof opt_cmds / sizeof opt_cmds[0]; i++)
        if (opt_cmds[i].opt == opt)
            return (opt_cmds[i].cmds & bit) != 0;
    return false;
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

int parse_opts(int argc, char **argv, opts_t *o)
{
    const char *cmd = argv[0];
    const command_t *command = command_named(cmd);
    unsigned bit = command ? command->bit : 0;
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

int main(int argc, char **argv)
{
    features_init();
    if (argc < 2)
        return usage(stderr), EX_USAGE;
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help"))
        return usage(stdout), EX_OK;
    if (!strcmp(name, "--version"))
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
