/* cli.h - what the gpuaccel command's files share: the command table, the
 * options of the commands that run a program, the feature names, and the
 * helpers that find the library and the program and start it.
 *
 * The command table (gpuaccel.c) is the one list of commands: dispatch, the
 * usage text and each command's --help come from it. Each command lives in
 * its own file (cmd_*.c, ab.c, advise.c) and is a `cmd_fn`: argv[0] is the
 * command's name, as main's argv[1]. */
#ifndef GA_TOOLS_CLI_H
#define GA_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

enum { EX_OK = 0, EX_FAIL = 1, EX_USAGE = 2, EX_NOGPU = 77, EX_NOEXEC = 126, EX_NOTFOUND = 127,
       EX_INTERRUPTED = 130 };

/* ---- the commands ------------------------------------------------------------------ */
typedef int cmd_fn(int argc, char **argv);

typedef struct command {
    const char *name;
    cmd_fn *run;
    const char *help;  /* one line: what it does */
    const char *usage; /* what follows "gpuaccel NAME " in a synopsis */
    unsigned bit;      /* its bit in an option's set of commands; 0: parses its own */
} command_t;

/* Each command's function (in the file named in gpuaccel.c). */
cmd_fn cmd_run, cmd_profile, cmd_tune, cmd_report, cmd_ab, cmd_advise, cmd_kernels, cmd_env;

extern const command_t commands[];
extern const unsigned n_commands;

/* `gpuaccel NAME --help`: that command's synopsis, help and options. */
int help_of(const char *name);

/* ---- the features the commands toggle ------------------------------------------------ */
/* The switches `run --enable/--disable`, `ab` and `advise` toggle: the features
 * of src/features/features.def marked toggled, in its order, each named by its
 * variable without GPUACCEL_, in lower case ("swap", its former name, is taken for kernels). */
enum {
    N_FEATURES = 0
#define GA_FEATURE(name, var, toggled) + toggled
#include "features/features.def"
#undef GA_FEATURE
};
extern const char *const feature_vars[N_FEATURES]; /* GPUACCEL_POOL, ... */
extern const char *features[N_FEATURES];           /* pool, ... */
extern char feature_list[];                        /* "pool, coalesce, ... or all" */
void features_init(void);
int feature_index(const char *name); /* -1: not a feature ("swap" is taken for kernels) */
unsigned safe_mask(void);            /* the features on under GPUACCEL=safe */

/* ---- options ------------------------------------------------------------------------ */
typedef enum measure_kind { M_WALL, M_METRIC, M_PHASE } measure_kind_t;

typedef struct opts {
    const char *lib, *out, *check_digest, *check_file, *svg, *kernel_pattern;
    unsigned feature_on[N_FEATURES], feature_set[N_FEATURES]; /* run/profile toggles */
    bool enable_all;    /* --enable all: GPUACCEL=all, then the toggles after it */
    int ab_feature;     /* -1: all */
    bool kernels, per_feature, json, require_gpu, exhaustive;
    const char *config, *write; /* run/ab --config FILE; advise --write FILE */
    bool force;         /* profile, tune: overwrite what -o names */
    const char *export_json, *export_csv, *export_md; /* ab: files beside the table */
    const char *command_name; /* --command-name: the command's name in tables */
    unsigned runs, warmup;
    bool ignore_failure;
    measure_kind_t measure;
    const char *metric, *phase_start, *phase_end;
    const char *window_start, *window_end; /* advise --window: the profile run's only */
    double budget_s;    /* advise --budget */
    bool no_tune;       /* advise --no-tune */
    char **cmd;         /* NULL-terminated */
} opts_t;

/* Options of the command argv[0] up to "--" or the first non-option; the
 * rest is CMD. Returns EX_OK, or the status of a usage error (printed). */
int parse_opts(int argc, char **argv, opts_t *o);

/* "pool,graphs" or "all": each named feature set to `on`. Returns NULL, or the
 * first item that names no feature (in a static buffer). */
const char *toggle(opts_t *o, const char *list, bool on);

/* ---- messages ----------------------------------------------------------------------- */
int die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* How a child ended, in words: "exit status 3", "killed by SIGSEGV (core
 * dumped)". */
void describe_status(int status, char *buf, size_t cap);
/* The status a shell would give: the exit status, or 128 plus the signal. */
int exec_status(int status);

/* While on, SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to gpuaccel are passed
 * to the child wait_forwarding waits for (the terminal's Ctrl-C reaches the
 * child by itself). The child's own dispositions are the defaults again at
 * exec. */
void forward_signals(bool on);
/* The child the signals forward_signals catches go to from now on (before
 * wait_forwarding, while gpuaccel reads its output). */
void forward_to_child(pid_t pid);
/* waitpid, passing on the signals forward_signals catches. 0, or -1 (errno). */
int wait_forwarding(pid_t pid, int *status);

/* ---- the library and the program ---------------------------------------------------- */
bool readable(const char *p);
int find_library(const char *lib, char *out, size_t cap);
int find_command(const char *name, char *out, size_t cap);
/* The library to preload and the command's path: EX_OK or the exit status. */
int find_both(const opts_t *o, char *lib, char *path);
void preload(const char *lib); /* LD_PRELOAD=LIB, keeping what the user preloads after it */
void apply_toggles(const opts_t *o);
/* Before the program runs: can `file` be written, and is it new (or force)? */
int check_output(const char *opt, const char *file, bool force);

/* Removes the three files of the profile whose JSON is `json` (STEM.json). */
void unlink_profile(const char *json);

/* ---- small helpers ------------------------------------------------------------------- */
char *slurp(const char *path);
/* A tune table's lines: verified entries, "# no:" lines, faulted ones; -1: none. */
int table_counts(const char *path, unsigned *kept, unsigned *not_kept, unsigned *faults);
double now_s(void);
void fmt_time(char *b, size_t cap, double s);

#endif
