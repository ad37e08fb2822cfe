/* output.c - where the profile's files go and when they are written: the path
 * (claimed with PATH.owner when several processes share one GPUACCEL_PROFILE,
 * PATH.<pid> otherwise; PATH.rank<R>.<pid> in a job, job.c), the write itself
 * (once: at exit, or from the SIGINT/SIGTERM handlers it installs when the
 * program has none), and the staging buffer the files are written through.
 *
 * Each file is written under a temporary name (FILE.json.tmp) and renamed once
 * all three are complete, the JSON last: a reader never sees half a profile,
 * and a write that fails leaves none.
 *
 * Owns: the written-once flag, the staging buffer, the signal handlers, the
 * claim file.
 * Must never: allocate or use stdio once writing starts (the write may run in
 * a signal handler: snprintf is for claiming the path, at init); wait for
 * ga_prof_lock in a signal handler; write to stdout. */
#define _GNU_SOURCE
#include "features/profile/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h> /* snprintf at init only: the writer does its own formatting */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/stats.h"

static _Atomic bool written;
static char stage[1 << 16];

/* ---- writing the files ----------------------------------------------------------- */
/* PATH + suffix (+ ".tmp"): false when it does not fit. */
static bool file_name(char *out, size_t cap, const char *suffix, bool tmp)
{
    size_t n = strlen(ga_prof->path), m = strlen(suffix), t = tmp ? 4 : 0;
    if (n + m + t >= cap)
        return false;
    memcpy(out, ga_prof->path, n);
    memcpy(out + n, suffix, m);
    memcpy(out + n + m, ".tmp", t);
    out[n + m + t] = '\0';
    return true;
}

/* Writes PATH+suffix+".tmp" (the caller renames it: a reader never sees half a
 * file, and a write that fails leaves nothing). The path is this process's
 * own (claimed, or with its pid), so no other writer shares the name. */
static bool write_file(const char *suffix, void (*body)(ga_out_t *, const void *),
                       const void *arg)
{
    char path[4200];
    if (!file_name(path, sizeof path, suffix, true))
        return false;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    ga_out_t o = {fd, stage, sizeof stage, 0, false};
    body(&o, arg);
    ga_out_flush(&o);
    bool ok = close(fd) == 0 && !o.failed;
    if (!ok)
        unlink(path);
    return ok;
}

/* The three files' suffixes, in the order they are renamed: the JSON last, so
 * that a run with a FILE.json has the other two (gpuaccel reads the JSON). */
static const char *const suffixes[] = {".txt", ".trace.json", ".json"};

static void discard_tmp(void)
{
    char path[4200];
    for (size_t i = 0; i < GA_ARRAY_LEN(suffixes); i++)
        if (file_name(path, sizeof path, suffixes[i], true))
            unlink(path);
}

static bool publish(void)
{
    char from[4200], to[4200];
    for (size_t i = 0; i < GA_ARRAY_LEN(suffixes); i++)
        if (!file_name(from, sizeof from, suffixes[i], true) ||
            !file_name(to, sizeof to, suffixes[i], false) || rename(from, to) != 0)
            return false;
    return true;
}

typedef struct json_arg {
    const summary_t *s;
    const opp_t *ops;
    bool from_signal;
} json_arg_t;

static void txt_body(ga_out_t *o, const void *arg)
{
    (void)arg;
    ga_out_put(o, ga_prof->text, ga_prof->text_len);
}

static void json_cb(ga_out_t *o, const void *arg)
{
    const json_arg_t *a = arg;
    ga_prof_json_body(o, a->s, a->ops, a->from_signal);
}

static void trace_cb(ga_out_t *o, const void *arg)
{
    (void)arg;
    ga_prof_trace_body(o);
}

/* What the writers read besides the tables: the driver calls' counts and times
 * (from stats). */
static void gather(void)
{
    for (unsigned id = 0; id < GA_N_ENTRIES; id++) {
        ga_prof->calls[id] = ga_stats_calls((ga_id_t)id);
        ga_prof->ns[id] = ga_stats_ns((ga_id_t)id);
    }
}

static bool write_files(bool from_signal)
{
    summary_t s;
    opp_t ops[N_OPPS];
    ga_prof_summarize(&s);
    ga_prof_analyze(&s, ops);
    ga_prof_build_text(&s, ops, from_signal);
    json_arg_t ja = {&s, ops, from_signal};
    bool ok = write_file(".txt", txt_body, NULL) && write_file(".trace.json", trace_cb, NULL) &&
              write_file(".json", json_cb, &ja) && publish();
    if (!ok) {
        int saved = errno;
        discard_tmp();
        errno = saved;
    }
    return ok;
}

static bool write_all(bool from_signal)
{
    if (!ga_profiling || atomic_exchange(&written, true))
        return true;
    ga_prof->pid = (uint64_t)getpid();
    if (!from_signal && ga_prof->ktiming)
        ga_prof_collect(RING, true);
    /* The writing thread's segment still open at exit counts (before the lock:
     * the sink takes it). Not from a signal, which may have interrupted this
     * thread in the detector; nor other threads' segments, which only their
     * own thread may read. */
    if (!from_signal)
        ga_seq_open(ga_prof_sequence);
    /* A signal may have interrupted a thread holding the lock: never wait for
     * it there. The tables are fixed and published key-last, so reading them
     * mid-update yields at worst a count off by one. */
    bool locked = from_signal ? pthread_mutex_trylock(&ga_prof_lock) == 0
                              : pthread_mutex_lock(&ga_prof_lock) == 0;
    gather();
    bool ok = write_files(from_signal);
    if (locked)
        pthread_mutex_unlock(&ga_prof_lock);
    if (ga_prof->owner)
        unlink(ga_prof->claim);
    return ok;
}

void ga_profile_write(void)
{
    int saved = errno;
    if (!write_all(false))
        ga_warn("GPUACCEL_PROFILE: cannot write %s.{txt,json,trace.json}: %s", ga_prof->path,
                strerror(errno));
    else if (ga_profiling)
        ga_info("profile written to %s.txt, %s.json and %s.trace.json", ga_prof->path,
                ga_prof->path, ga_prof->path);
    errno = saved;
}

const char *ga_profile_path(void)
{
    return ga_profiling ? ga_prof->path : "";
}

void ga_prof_output_reset(void)
{
    atomic_store(&written, false);
}

/* ---- signals --------------------------------------------------------------------- */
static void on_signal(int sig)
{
    int saved = errno;
    write_all(true);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    raise(sig); /* pending until the handler returns, then the default action */
    errno = saved;
}

/* Only where the program has not chosen a disposition itself: a program that
 * handles SIGINT keeps its behavior, and then exits through exit() anyway. */
void ga_prof_install_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM};
    for (size_t i = 0; i < GA_ARRAY_LEN(sigs); i++) {
        struct sigaction old, sa;
        if (sigaction(sigs[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
            old.sa_handler != SIG_DFL)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESTART;
        sigaction(sigs[i], &sa, NULL);
    }
}

/* ---- the path, and who owns it --------------------------------------------------- */
static bool pid_alive(pid_t pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Create PATH.owner holding this process's pid: true if PATH is now ours. */
static bool take_claim(const prof_t *p)
{
    int fd = open(p->claim, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return false;
    char b[24];
    int m = snprintf(b, sizeof b, "%d\n", (int)getpid());
    ssize_t w = write(fd, b, (size_t)m);
    (void)w;
    close(fd);
    return true;
}

/* Several processes may share one GPUACCEL_PROFILE (a launcher that execs its
 * workers): the first claims PATH with PATH.owner; while it lives, the others
 * write PATH.<pid>.*. A claim left by a dead process is taken over. A process
 * with a rank (job.c) claims nothing: it writes PATH.rank<R>.<pid>.*, so the
 * ranks of a job never race for PATH. */
void ga_prof_claim_path(prof_t *p)
{
    const char *base = p->base;
    int len = snprintf(p->claim, sizeof p->claim, "%s.owner", base);
    if (p->job.ranked || len < 0 || (size_t)len >= sizeof p->claim) {
        ga_prof_own_path(p);
        return;
    }
    for (int tries = 0; tries < 2; tries++) {
        if (take_claim(p))
            break;
        char b[24] = {0};
        int fd = open(p->claim, O_RDONLY | O_CLOEXEC);
        ssize_t r = fd >= 0 ? read(fd, b, sizeof b - 1) : -1;
        if (fd >= 0)
            close(fd);
        pid_t other = r > 0 ? (pid_t)atoi(b) : 0;
        if (other == getpid())
            break; /* ours already (profiling started over) */
        if ((fd < 0 && errno != ENOENT) || pid_alive(other)) {
            ga_prof_own_path(p);
            return;
        }
        unlink(p->claim); /* stale: its process is gone */
    }
    p->owner = true;
    snprintf(p->path, sizeof p->path, "%s", base);
}

/* GPUACCEL_PROFILE made absolute: the program may change directory before exit. */
bool ga_prof_absolute_base(const char *cfg, char *out, size_t cap)
{
    if (cfg[0] == '/')
        return (size_t)snprintf(out, cap, "%s", cfg) < cap;
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        return false;
    return (size_t)snprintf(out, cap, "%s/%s", cwd, cfg) < cap;
}
