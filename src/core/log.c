/* log.c - leveled logging to stderr or a file, one write(2) per line so lines
 * from several threads or processes never interleave. */
#define _GNU_SOURCE
#include "core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Both are written once at init (before other threads can see the library
 * active) and read racily afterwards: atomics keep that well defined. */
static _Atomic int log_level = GA_LOG_WARN;
static _Atomic int log_fd = STDERR_FILENO;

void ga_log_configure(ga_log_level_t level, const char *path)
{
    atomic_store(&log_level, (int)level);
    if (!path || !*path)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
        ga_warn("GPUACCEL_LOG_FILE: cannot open '%s' (%s); logging to stderr", path,
                strerror(errno));
        return;
    }
    int old = atomic_exchange(&log_fd, fd);
    if (old != STDERR_FILENO)
        close(old);
}

int ga_log_enabled(ga_log_level_t level)
{
    return (int)level <= atomic_load_explicit(&log_level, memory_order_relaxed);
}

void ga_log(ga_log_level_t level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    if (!ga_log_enabled(level))
        return;
    char line[1024];
    int n = snprintf(line, sizeof line, "gpuaccel: %s%s", level == GA_LOG_INFO ? "" : names[level],
                     level == GA_LOG_INFO ? "" : ": ");
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(atomic_load_explicit(&log_fd, memory_order_relaxed), line, len);
    (void)w;
}
