/* phase.c - a program's output read through pipes as it arrives, cut in lines,
 * and the windows START and END lines mark (phase.h); the window file that
 * tells a profiled program's library which of its calls fall inside.
 *
 * Owns: the pipes' reading, the window tracker, the window file's creation,
 * contents and removal.
 * Must never: hold back the program's output (each read is copied on before
 * the next poll); write anything into the window file but the header, the
 * patterns, the times and the crossings, in that order (the library reads
 * the crossings without a lock: the times are written first). */
#define _GNU_SOURCE
#include "phase.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cli.h"

/* ---- the windows -------------------------------------------------------------------- */
void phase_init(phase_t *p, const regex_t *start_re, const regex_t *end_re, ga_window_t *page)
{
    *p = (phase_t){start_re, end_re, -1, -1, 0, 0, 0, page};
}

/* One line of the program's output, read at time t. */
static void phase_line(phase_t *p, const char *line, double t)
{
    if (!p)
        return;
    bool inside = p->crossings & 1;
    if (regexec(inside ? p->end_re : p->start_re, line, 0, NULL, 0) != 0)
        return;
    if (inside) {
        p->inside += t - p->opened;
        if (p->end < 0)
            p->end = t;
        if (p->page) /* the time first: a reader that sees the crossing sees it */
            atomic_fetch_add_explicit(&p->page->inside_ns, (uint64_t)((t - p->opened) * 1e9),
                                      memory_order_relaxed);
    } else {
        p->opened = t;
        if (p->start < 0)
            p->start = t;
        if (p->page) /* now_s's clock is CLOCK_MONOTONIC, the library's too */
            atomic_store_explicit(&p->page->opened_ns, (uint64_t)(t * 1e9), memory_order_relaxed);
    }
    p->crossings++;
    if (p->page)
        atomic_fetch_add_explicit(&p->page->crossings, 1, memory_order_release);
}

/* ---- the pipes ---------------------------------------------------------------------- */
bool pipes_open(pipes_t *p)
{
    *p = (pipes_t){{-1, -1}, {-1, -1}};
    if (pipe2(p->out, O_CLOEXEC) == 0 && pipe2(p->err, O_CLOEXEC) == 0)
        return true;
    int saved = errno;
    for (int i = 0; i < 2; i++) {
        if (p->out[i] >= 0)
            close(p->out[i]);
    }
    errno = saved;
    return false;
}

bool pipes_child(const pipes_t *p)
{
    return dup2(p->out[1], STDOUT_FILENO) >= 0 && dup2(p->err[1], STDERR_FILENO) >= 0;
}

/* One of the program's streams: copied on, cut in lines. */
typedef struct stream {
    int to;
    char line[8192];
    size_t len;
} stream_t;

/* Every byte to `to`, through partial writes; one that fails (a full disk, a
 * reader gone) drops the rest of this piece: the program is not held up. */
static void copy_on(int to, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t w = write(to, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        buf += w, n -= (size_t)w;
    }
}

static void stream_take(stream_t *s, phase_t *p, const char *buf, size_t n, double t)
{
    copy_on(s->to, buf, n);
    for (size_t i = 0; i < n; i++) {
        if (buf[i] != '\n' && s->len + 1 < sizeof s->line) {
            s->line[s->len++] = buf[i];
            continue;
        }
        if (buf[i] != '\n')
            continue; /* a line longer than the buffer: its start is matched */
        s->line[s->len] = '\0';
        phase_line(p, s->line, t);
        s->len = 0;
    }
}

void pipes_pump(pipes_t *p, const int to[2], phase_t *ph)
{
    close(p->out[1]), close(p->err[1]);
    p->out[1] = p->err[1] = -1;
    stream_t s[2] = {{to[0], "", 0}, {to[1], "", 0}};
    struct pollfd pf[2] = {{p->out[0], POLLIN, 0}, {p->err[0], POLLIN, 0}};
    unsigned open_n = 2;
    while (open_n) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR) /* a signal gpuaccel passes on to the program */
                continue;
            break;
        }
        double t = now_s();
        for (unsigned k = 0; k < 2; k++) {
            if (pf[k].fd < 0 || !pf[k].revents)
                continue;
            char buf[65536];
            ssize_t got = read(pf[k].fd, buf, sizeof buf);
            if (got > 0) {
                stream_take(&s[k], ph, buf, (size_t)got, t);
            } else if (got == 0 || errno != EINTR) {
                if (s[k].len) { /* a last line without a newline */
                    s[k].line[s[k].len] = '\0';
                    phase_line(ph, s[k].line, t);
                }
                close(pf[k].fd);
                pf[k].fd = -1;
                open_n--;
            }
        }
    }
    for (unsigned k = 0; k < 2; k++)
        if (pf[k].fd >= 0)
            close(pf[k].fd);
    p->out[0] = p->err[0] = -1;
}

int compile_regex(regex_t *re, const char *opt, const char *pattern, int flags)
{
    if (regcomp(re, pattern, REG_EXTENDED | flags) != 0)
        return usage_error("%s: '%s' is not a valid regular expression", opt, pattern);
    return EX_OK;
}

/* ---- the window file ------------------------------------------------------------------ */
int window_create(window_file_t *w, const char *opt, const char *start, const char *end)
{
    w->path[0] = '\0';
    w->page = NULL;
    int rc = compile_regex(&w->start_re, opt, start, REG_NOSUB);
    if (rc == EX_OK && (rc = compile_regex(&w->end_re, opt, end, REG_NOSUB)) != EX_OK)
        regfree(&w->start_re);
    if (rc != EX_OK)
        return rc;
    const char *tmp = getenv("TMPDIR");
    snprintf(w->path, sizeof w->path, "%s/gpuaccel-window.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(w->path); /* mode 0600 */
    void *m = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, sizeof(ga_window_t)) == 0) /* zeroed */
        m = mmap(NULL, sizeof(ga_window_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int saved = errno;
    if (fd >= 0)
        close(fd);
    if (m == MAP_FAILED) {
        if (fd >= 0)
            unlink(w->path);
        die(EX_FAIL, "%s: cannot make the window file %s: %s", opt, w->path, strerror(saved));
        w->path[0] = '\0';
        regfree(&w->start_re), regfree(&w->end_re);
        return EX_FAIL;
    }
    w->page = m;
    w->page->magic = GA_WINDOW_MAGIC;
    w->page->version = GA_WINDOW_VERSION;
    snprintf(w->page->start, sizeof w->page->start, "%s", start);
    snprintf(w->page->end, sizeof w->page->end, "%s", end);
    phase_init(&w->phase, &w->start_re, &w->end_re, w->page);
    return EX_OK;
}

void window_remove(window_file_t *w)
{
    if (w->page)
        munmap(w->page, sizeof *w->page);
    if (w->path[0])
        unlink(w->path);
    if (w->page || w->path[0])
        regfree(&w->start_re), regfree(&w->end_re);
    w->page = NULL;
    w->path[0] = '\0';
}
