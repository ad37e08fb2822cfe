/* config.h - the GPUACCEL_* environment variables, parsed once at init.
 *
 * One table (GA_CONFIG_VARS) names every variable, its type, default and help;
 * it drives the struct, the parser and `gpuaccel env`. A malformed value gets one
 * warning naming the variable and what was expected, then the default. */
#ifndef GA_CONFIG_H
#define GA_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

/* X(variable, type, field, default, help) */
#define GA_CONFIG_VARS(X)                                                                    \
    X(GPUACCEL, BOOL, enabled, "1", "0 makes the library a pure pass-through")              \
    X(GPUACCEL_LOG, LEVEL, log_level, "warn", "error, warn, info or debug")                 \
    X(GPUACCEL_LOG_FILE, STR, log_file, "", "append messages to this file, not stderr")    \
    X(GPUACCEL_PROFILE, STR, profile, "", "write a profile to FILE.txt, FILE.json, FILE.trace.json") \
    X(GPUACCEL_PROFILE_KERNELS, BOOL, profile_kernels, "0", "1 times every kernel with events") \
    X(GPUACCEL_POOL, BOOL, pool, "0", "serve cuMemAlloc/cuMemFree from a block cache")      \
    X(GPUACCEL_POOL_LIMIT, LIMIT, pool_limit, "50%", "bytes (K/M/G suffix) or percent of device memory the cache may hold") \
    X(GPUACCEL_POOL_POISON, BOOL, pool_poison, "0", "1 fills reused blocks with 0xA5 (debug)") \
    X(GPUACCEL_COALESCE, BOOL, coalesce, "0", "serve small device-to-host reads from one transfer") \
    X(GPUACCEL_COALESCE_MAX, SIZE, coalesce_max, "256", "largest read served from a window, bytes") \
    X(GPUACCEL_COALESCE_WINDOW, SIZE, coalesce_window, "64K", "initial window size, bytes")  \
    X(GPUACCEL_GRAPHS, BOOL, graphs, "0", "replay repeated launch sequences as CUDA graphs")   \
    X(GPUACCEL_GRAPH_MIN, UINT, graph_min, "5", "fewest kernels in a sequence worth a graph") \
    X(GPUACCEL_GRAPH_CACHE, UINT, graph_cache, "64", "most graphs kept instantiated")        \
    X(GPUACCEL_TUNE, BOOL, tune, "0", "rewrite launch configurations from the tuned table")  \
    X(GPUACCEL_TUNE_TABLE, STR, tune_table, "", "tuned-configuration table file")            \
    X(GPUACCEL_TUNER, STR, tuner, "", "tuner mode: verify and time configurations, write FILE") \
    X(GPUACCEL_TUNER_KERNEL, STR, tuner_kernel, "*", "glob of kernel names the tuner tries")  \
    X(GPUACCEL_TUNER_EXHAUSTIVE, BOOL, tuner_exhaustive, "0",                                   \
      "tuner tries every block size that is a multiple of 32, not only powers of two")        \
    X(GPUACCEL_KERNELS, BOOL, kernels, "0", "launch shipped replacement kernels")            \
    X(GPUACCEL_KERNELS_EXTRA, STR, kernels_extra, "", "FATBIN:TABLE of user replacement kernels") \
    X(GPUACCEL_KERNELS_DENY, STR, kernels_deny, "", "glob of kernel names never swapped")

typedef struct ga_limit {
    uint64_t bytes;  /* absolute limit, or 0 */
    unsigned percent; /* percent of device memory, used when bytes == 0 */
} ga_limit_t;

#define GA_CTYPE_BOOL  bool
#define GA_CTYPE_LEVEL int
#define GA_CTYPE_STR   const char *
#define GA_CTYPE_SIZE  uint64_t
#define GA_CTYPE_UINT  unsigned
#define GA_CTYPE_LIMIT ga_limit_t

typedef struct ga_config {
#define GA_CONFIG_FIELD(var, type, field, def, help) GA_CTYPE_##type field;
    GA_CONFIG_VARS(GA_CONFIG_FIELD)
#undef GA_CONFIG_FIELD
} ga_config_t;

typedef const char *(*ga_getenv_fn)(const char *name);

/* Fill cfg from the environment through get (getenv, or a test's table).
 * Strings point into the environment; they are not copied. */
void ga_config_load(ga_config_t *cfg, ga_getenv_fn get);

/* Parsers, exposed for unit tests: return false (and leave *out alone) on a
 * malformed value. */
bool ga_parse_bool(const char *s, bool *out);
bool ga_parse_size(const char *s, uint64_t *out);
bool ga_parse_uint(const char *s, unsigned *out);
bool ga_parse_level(const char *s, int *out);
bool ga_parse_limit(const char *s, ga_limit_t *out);

/* One row per variable, for `gpuaccel env` and the README. */
typedef struct ga_config_doc {
    const char *name, *def, *help;
} ga_config_doc_t;
extern const ga_config_doc_t ga_config_docs[];
extern const unsigned ga_config_ndocs;

#endif
