/* cmd_profile.c - gpuaccel profile and gpuaccel tune: the program runs once
 * under the library with the profile (or the tuner) on, and the command says
 * what was written. With --phase the program's output comes through pipes
 * (passed on as it arrives) and its START and END lines mark the windows the
 * profile counts in (phase.h).
 *
 * Owns: the checks of -o before the program runs, the environment of a
 * profiled or tuned run, the window file's life (made before the program
 * starts, removed once it has ended, signals included: they go to the
 * program, whose end ends the run), and the list of files a run left.
 * Must never: leave another run's per-process profiles beside this run's
 * (they are an error, or removed with --force). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "phase.h"
#include "profiles.h"

static bool fresh(const char *path, time_t since)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_mtime >= since;
}

/* The files the run wrote: FILE.* and, for other processes, FILE.<pid>.* or
 * FILE.rank<R>.<pid>.* (pf_find_run). Returns how many profiles. */
static int list_profiles(const char *out, time_t since)
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
    return others + have_main;
}

/* Is `path` (a file name without its ".tmp", beside the base's own, named
 * `base`) one of the run's files: BASE, BASE.<pid> or BASE.rank<R>.<pid>,
 * with .txt, .json or .trace.json? */
static bool run_file(const char *base, const char *path)
{
    static const char *const ext[] = {".trace.json", ".json", ".txt"};
    size_t n = strlen(path);
    for (unsigned i = 0; i < 3; i++) {
        size_t e = strlen(ext[i]);
        if (n <= e || strcmp(path + n - e, ext[i]))
            continue;
        char json[PATH_MAX + 16];
        snprintf(json, sizeof json, "%.*s.json", (int)(n - e), path);
        return !strncmp(path, base, n - e) && strlen(base) == n - e
                   ? true : pf_is_process_file(base, json);
    }
    return false;
}

/* What a run may leave when a process died before writing: the claim
 * BASE.owner of a process that is gone, and half-written temporaries of the
 * run's files (the library renames each file into place once all three are
 * written). Another run's files that share the prefix are not touched. */
static void clean_run(const char *base)
{
    char dir[PATH_MAX], prefix[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", base);
    char *slash = strrchr(dir, '/');
    snprintf(prefix, sizeof prefix, "%s.", slash ? slash + 1 : base);
    char prefix_name[PATH_MAX];
    snprintf(prefix_name, sizeof prefix_name, "%s", slash ? slash + 1 : base);
    if (slash)
        slash == dir ? (void)(slash[1] = '\0') : (void)(*slash = '\0');
    else
        snprintf(dir, sizeof dir, ".");
    DIR *d = opendir(dir);
    size_t plen = strlen(prefix);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, plen))
            continue;
        char path[2 * PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        char name[NAME_MAX + 1];
        snprintf(name, sizeof name, "%.*s", (int)(n > 4 ? n - 4 : 0), e->d_name);
        if (n > plen + 4 && !strcmp(e->d_name + n - 4, ".tmp")) {
            if (run_file(prefix_name, name))
                unlink(path);
        } else if (!strcmp(e->d_name + plen, "owner")) {
            char *text = slurp(path);
            pid_t pid = text ? (pid_t)atoi(text) : 0;
            free(text);
            if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
                unlink(path);
        }
    }
    if (d)
        closedir(d);
}

/* Can files be created beside `base` (a directory that is there and looks
 * writable may still refuse them: /proc, a read-only mount)? */
static int probe_dir(const char *base)
{
    char probe[PATH_MAX + 32];
    snprintf(probe, sizeof probe, "%s.json.%d.tmp", base, (int)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return usage_error("-o %s: cannot create files there: %s", base, strerror(errno));
    close(fd);
    unlink(probe);
    return EX_OK;
}

/* Removes the three files of the profile whose JSON is `json` (STEM.json). */
void unlink_profile(const char *json)
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

/* The options, then the library and the program (PATH_MAX each): what tune
 * and profile both begin with. */
static int parse_and_find(int argc, char **argv, opts_t *o, char *lib, char *path)
{
    int rc = parse_opts(argc, argv, o);
    return rc != EX_OK ? rc : find_both(o, lib, path);
}

/* One run of the program under the tuner, every other feature off; with
 * `skip`, the launches the table at `out` marks faulted are left alone. */
static int tune_once(opts_t *o, const char *lib, const char *path, const char *out,
                     bool skip)
{
    forward_signals(true);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        preload(lib);
        (void)toggle(o, "all", false);
        apply_toggles(o);
        setenv("GPUACCEL_TUNER", out, 1);
        setenv("GPUACCEL_TUNER_KERNEL", o->kernel_pattern ? o->kernel_pattern : "*", 1);
        setenv("GPUACCEL_TUNER_EXHAUSTIVE", o->exhaustive ? "1" : "0", 1);
        if (skip)
            setenv("GPUACCEL_TUNER_SKIP", out, 1); /* read at start, before it is written */
        else
            unsetenv("GPUACCEL_TUNER_SKIP");
        execv(path, o->cmd);
        _exit(die(EX_NOEXEC, "%s: %s", o->cmd[0], strerror(errno)));
    }
    int status = 0;
    wait_forwarding(pid, &status);
    forward_signals(false);
    return status;
}

enum { TUNE_RUNS = 5 }; /* a candidate that faults ends a run: each run after skips more */

/* gpuaccel tune: the program runs under the tuner, every other feature off;
 * the tuner writes only configurations it proved bit-identical. A candidate
 * that faults the context ends the program (the driver's error is sticky):
 * the tuner marks that launch in the table, and the program runs again,
 * leaving the marked launches alone, until a run ends well or marks nothing
 * new (at most TUNE_RUNS runs). */
int cmd_tune(int argc, char **argv)
{
    opts_t opts = {.runs = 5, .ab_feature = -1}, *o = &opts;
    char lib[PATH_MAX], path[PATH_MAX];
    int rc = parse_and_find(argc, argv, o, lib, path);
    if (rc != EX_OK)
        return rc;
    const char *out = o->out ? o->out : "gpuaccel-tune.table";
    if ((rc = check_output("-o", out, o->force)) != EX_OK)
        return rc;
    int status = 0;
    unsigned kept = 0, not_kept = 0, faults = 0, before = 0;
    bool table = false;
    for (int run = 1; run <= TUNE_RUNS; run++) {
        if ((status = tune_once(o, lib, path, out, run > 1)) < 0)
            return die(EX_FAIL, "fork: %s", strerror(errno));
        table = table_counts(out, &kept, &not_kept, &faults) == 0;
        bool ended_well = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (ended_well || !table || faults <= before)
            break;
        if (run < TUNE_RUNS)
            fprintf(stderr, "gpuaccel: tune: a candidate faulted the context of %s (%u launch%s "
                            "marked in %s): running it again, leaving %s alone (run %d of %d)\n",
                    o->cmd[0], faults, faults == 1 ? "" : "es", out,
                    faults == 1 ? "it" : "them", run + 1, TUNE_RUNS);
        before = faults;
    }
    char how[96];
    if (table)
        fprintf(stderr, "gpuaccel: tune: %s: %u verified entries, %u configurations not kept "
                        "(reasons inside); use GPUACCEL_TUNE=1 GPUACCEL_TUNE_TABLE=%s\n",
                out, kept, not_kept, out);
    else if (WIFSIGNALED(status))
        fprintf(stderr, "gpuaccel: tune: no table was written to %s: %s was %s\n", out,
                o->cmd[0], (describe_status(status, how, sizeof how), how));
    else
        fprintf(stderr, "gpuaccel: tune: no table was written to %s (no CUDA call through the "
                        "library, or the program exited without exit())\n", out);
    return exec_status(status);
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

/* Runs the program profiled into `out`, with the window file `win` (NULL:
 * none) fed from its output; *status its wait status. EX_OK or the exit
 * status of a failure (printed). */
static int run_profiled(const opts_t *o, const char *lib, const char *path, const char *out,
                        window_file_t *win, int *status)
{
    pipes_t pp;
    if (win && !pipes_open(&pp))
        return die(EX_FAIL, "--phase: cannot make pipes: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return die(EX_FAIL, "fork: %s", strerror(errno));
    if (pid == 0) {
        if (win && !pipes_child(&pp))
            _exit(EX_FAIL);
        preload(lib);
        apply_toggles(o);
        profile_alone(o);
        setenv("GPUACCEL_PROFILE", out, 1);
        if (o->kernels)
            setenv("GPUACCEL_PROFILE_KERNELS", "1", 1);
        if (win)
            setenv("GPUACCEL_PROFILE_WINDOW", win->path, 1);
        execv(path, o->cmd);
        _exit(die(EX_NOEXEC, "%s: %s", o->cmd[0], strerror(errno)));
    }
    if (win) { /* the program's output, passed on as it comes, marks the windows */
        static const int to[2] = {STDOUT_FILENO, STDERR_FILENO};
        forward_to_child(pid);
        void (*pipe_was)(int) = signal(SIGPIPE, SIG_IGN); /* a reader gone: drop, go on */
        pipes_pump(&pp, to, &win->phase);
        signal(SIGPIPE, pipe_was);
    }
    if (wait_forwarding(pid, status) != 0)
        return die(EX_FAIL, "waiting for %s: %s", o->cmd[0], strerror(errno));
    return EX_OK;
}

/* --phase: what the windows were. EX_FAIL when no line opened one, or the last
 * one never closed (the profile is written all the same), as ab --phase fails
 * on a line that never comes. */
static int phase_verdict(const opts_t *o, const phase_t *ph)
{
    char t[32];
    unsigned n = ph->crossings / 2;
    fmt_time(t, sizeof t, ph->inside);
    if (!ph->crossings)
        return die(EX_FAIL, "profile: --phase: no line of %s's output matched START '%s': the "
                            "profile counts nothing", o->cmd[0], o->phase_start);
    if (ph->crossings & 1)
        return die(EX_FAIL, "profile: --phase: no line matched END '%s' after the last START "
                            "line: that window ran to the end of %s (%u closed before it, %s "
                            "inside them)", o->phase_end, o->cmd[0], n, t);
    fprintf(stderr, "gpuaccel: profile: --phase: %u window%s, %s inside\n", n, n == 1 ? "" : "s",
            t);
    return EX_OK;
}

int cmd_profile(int argc, char **argv)
{
    opts_t opts = {.runs = 5, .ab_feature = -1}, *o = &opts;
    char lib[PATH_MAX], path[PATH_MAX];
    int rc = parse_and_find(argc, argv, o, lib, path);
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
    if ((rc = probe_dir(base)) != EX_OK)
        return rc;
    const char *out = base;
    window_file_t win;
    if (o->phase_start &&
        (rc = window_create(&win, "--phase", o->phase_start, o->phase_end)) != EX_OK)
        return rc;
    time_t since = time(NULL) - 1;
    forward_signals(true);
    int status = 0;
    rc = run_profiled(o, lib, path, out, o->phase_start ? &win : NULL, &status);
    if (o->phase_start) /* while the signals still go to the program */
        window_remove(&win);
    forward_signals(false);
    if (rc != EX_OK)
        return rc;
    clean_run(out);
    int written = list_profiles(out, since);
    char how[96];
    describe_status(status, how, sizeof how);
    if (WIFSIGNALED(status))
        fprintf(stderr, "gpuaccel: profile: %s was %s%s\n", o->cmd[0], how,
                written ? "" : "; a process killed by a signal writes its profile only on SIGINT "
                               "or SIGTERM, and only when it has no handler of its own for them");
    else if (!written)
        fprintf(stderr, "gpuaccel: profile: no profile was written to %s.json (%s ended with "
                        "%s): it made no CUDA call through the library, ended without exit() "
                        "(by _exit, for one), or the files could not be written there\n",
                out, o->cmd[0], how);
    else if (WEXITSTATUS(status))
        fprintf(stderr, "gpuaccel: profile: %s ended with %s\n", o->cmd[0], how);
    int st = exec_status(status);
    int ph = o->phase_start && written ? phase_verdict(o, &win.phase) : EX_OK;
    return st != EX_OK ? st : !written ? EX_FAIL : ph;
}
