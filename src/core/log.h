/* log.h - the library's only voice: leveled messages to stderr or GPUACCEL_LOG_FILE.
 *
 * Every line starts with "gpuaccel: ". Never writes to stdout. Safe to call from
 * any thread and before initialization (messages then go to stderr at warn level). */
#ifndef GA_LOG_H
#define GA_LOG_H

#include <stdarg.h>

typedef enum ga_log_level {
    GA_LOG_ERROR = 0,
    GA_LOG_WARN = 1,
    GA_LOG_INFO = 2,
    GA_LOG_DEBUG = 3,
} ga_log_level_t;

/* Set the threshold and the destination (NULL: stderr). A file that cannot be
 * opened is reported on stderr and stderr is used. */
void ga_log_configure(ga_log_level_t level, const char *path);
int ga_log_enabled(ga_log_level_t level);
void ga_log(ga_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define ga_error(...) ga_log(GA_LOG_ERROR, __VA_ARGS__)
#define ga_warn(...)  ga_log(GA_LOG_WARN, __VA_ARGS__)
#define ga_info(...)  ga_log(GA_LOG_INFO, __VA_ARGS__)
#define ga_debug(...) \
    do { if (ga_log_enabled(GA_LOG_DEBUG)) ga_log(GA_LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
