/* config.h - the GPUACCEL_* environment variables, parsed once at init.
 *
 * One table (GA_CONFIG_VARS) names every variable, its type, default and help;
 * it drives the struct, the parser and `gpuaccel env`. A malformed value gets one
 * warning naming the variable and what was expected, then the default. */
#ifndef GA_CONFIG_H
#define GA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* X(variable, type, field, default, needs, help). `needs` is the variable that
 * must be on for this one to act ("" for none): setting it while that one is
 * off draws a warning. A FEATURE is a feature's switch: when it is not set,
 * GPUACCEL's set decides (off: none; safe: those whose default is "1"; all:
 * every one). */
#define GA_CONFIG_VARS(X)                                                                    \
    X(GPUACCEL, MODE, mode, "safe", "",                                                      \
      "0: pure pass-through; safe: the features on by default; all: every feature")         \
    X(GPUACCEL_CONFIG, STR, config, "", "", "read settings (NAME=VALUE lines) from FILE; the environment wins") \
    X(GPUACCEL_LOG, LEVEL, log_level, "warn", "", "error, warn, info or debug")             \
    X(GPUACCEL_LOG_FILE, STR, log_file, "", "", "append messages to this file, not stderr") \
    X(GPUACCEL_LIB, STR, lib, "", "", "the library `gpuaccel` preloads (the command only)")   \
    X(GPUACCEL_PROFILE, STR, profile, "", "", "write a profile to FILE.txt, FILE.json, FILE.trace.json") \
    X(GPUACCEL_PROFILE_KERNELS, BOOL, profile_kernels, "0", "GPUACCEL_PROFILE", "1 times every kernel with events") \
    X(GPUACCEL_POOL, FEATURE, pool, "1", "", "serve cuMemAlloc/cuMemFree from a block cache") \
    X(GPUACCEL_POOL_LIMIT, LIMIT, pool_limit, "50%", "GPUACCEL_POOL", "bytes (K/M/G suffix) or percent of device memory the cache may hold") \
    X(GPUACCEL_POOL_POISON, BOOL, pool_poison, "0", "GPUACCEL_POOL", "1 fills reused blocks with 0xA5 (debug)") \
    X(GPUACCEL_ASYNC_POOL, FEATURE, async_pool, "0", "",                                    \
      "stream-ordered allocations keep the default pool's memory between synchronizations") \
    X(GPUACCEL_PINNED, FEATURE, pinned, "0", "", "serve cuMemHostAlloc/cuMemFreeHost from a cache") \
    X(GPUACCEL_PINNED_LIMIT, SIZE, pinned_limit, "4G", "GPUACCEL_PINNED",                   \
      "most bytes of freed page-locked memory kept for reuse")                               \
    X(GPUACCEL_COALESCE, FEATURE, coalesce, "0", "", "serve small device-to-host reads from one transfer") \
    X(GPUACCEL_COALESCE_MAX, SIZE, coalesce_max, "256", "GPUACCEL_COALESCE", "largest read served from a window, bytes") \
    X(GPUACCEL_COALESCE_WINDOW, SIZE, coalesce_window, "64K", "GPUACCEL_COALESCE", "initial window size, bytes") \
    X(GPUACCEL_COALESCE_MIRRORS, BOOL, coalesce_mirrors, "0", "GPUACCEL_COALESCE",          \
      "1 copies a whole allocation to host memory when reads keep missing in it and the copy pays") \
    X(GPUACCEL_COALESCE_BUDGET, SIZE, coalesce_budget, "0", "GPUACCEL_COALESCE_MIRRORS",     \
      "most host bytes the mirrors hold; 0: an eighth of host memory") \
    X(GPUACCEL_STAGING, FEATURE, staging, "0", "",                                         \
      "copy large pageable host buffers through pinned buffers, with several threads")      \
    X(GPUACCEL_STAGING_MIN, SIZE, staging_min, "4M", "GPUACCEL_STAGING",                     \
      "smallest copy staged, bytes")                                                        \
    X(GPUACCEL_STAGING_CHUNK, SIZE, staging_chunk, "8M", "GPUACCEL_STAGING",                 \
      "largest piece staged at a time, bytes (4 pinned buffers of it per engine)")          \
    X(GPUACCEL_STAGING_THREADS, UINT, staging_threads, "0", "GPUACCEL_STAGING",              \
      "threads that copy host memory, the caller included; 0: three quarters of the CPUs, 12 at most")   \
    X(GPUACCEL_STREAMS, FEATURE, streams, "0", "",                                         \
      "keep streams the program destroys and hand them to its next cuStreamCreate")          \
    X(GPUACCEL_LAZY_SYNC, FEATURE, lazy_sync, "0", "",                                     \
      "synchronizations nothing on the host could observe return at once; the wait comes at the next call that observes the device") \
    X(GPUACCEL_GRAPHS, FEATURE, graphs, "0", "", "replay repeated launch sequences as CUDA graphs") \
    X(GPUACCEL_GRAPH_MIN, UINT, graph_min, "5", "GPUACCEL_GRAPHS", "fewest kernels in a sequence worth a graph") \
    X(GPUACCEL_GRAPH_CACHE, UINT, graph_cache, "64", "GPUACCEL_GRAPHS", "most graphs kept instantiated") \
    X(GPUACCEL_TUNE, FEATURE, tune, "0", "", "rewrite launch configurations from the tuned table") \
    X(GPUACCEL_TUNE_TABLE, STR, tune_table, "", "GPUACCEL_TUNE", "tuned-configuration table file") \
    X(GPUACCEL_TUNER, STR, tuner, "", "", "tuner mode: verify and time configurations, write FILE") \
    X(GPUACCEL_TUNER_KERNEL, STR, tuner_kernel, "*", "GPUACCEL_TUNER", "glob of kernel names the tuner tries") \
    X(GPUACCEL_TUNER_EXHAUSTIVE, BOOL, tuner_exhaustive, "0", "GPUACCEL_TUNER",                 \
      "tuner tries every block size that is a multiple of 32, not only powers of two")        \
    X(GPUACCEL_KERNELS, FEATURE, kernels, "1", "", "launch shipped replacement kernels")     \
    X(GPUACCEL_KERNELS_EXTRA, STR, kernels_extra, "", "GPUACCEL_KERNELS", "FATBIN:TABLE of user replacement kernels") \
    X(GPUACCEL_KERNELS_DENY, STR, kernels_deny, "", "GPUACCEL_KERNELS", "glob of kernel names never swapped") \
    X(GPUACCEL_PTX_RETRY, BOOL, ptx_retry, "1", "",                                          \
      "retry PTX the driver refuses for its .version with the highest version it takes")

typedef struct ga_limit {
    uint64_t bytes;  /* absolute limit, or 0 */
    unsigned percent; /* percent of device memory, used when bytes == 0 */
} ga_limit_t;

typedef enum ga_mode { GA_MODE_OFF, GA_MODE_SAFE, GA_MODE_ALL } ga_mode_t;

#define GA_CTYPE_MODE  ga_mode_t
#define GA_CTYPE_FEATURE bool
#define GA_CTYPE_BOOL  bool
#define GA_CTYPE_LEVEL int
#define GA_CTYPE_STR   const char *
#define GA_CTYPE_SIZE  uint64_t
#define GA_CTYPE_UINT  unsigned
#define GA_CTYPE_LIMIT ga_limit_t

#define GA_CONFIG_ONE(var, type, field, def, needs, help) +1
enum { GA_CONFIG_N = 0 GA_CONFIG_VARS(GA_CONFIG_ONE) };
#undef GA_CONFIG_ONE

typedef struct ga_config {
#define GA_CONFIG_FIELD(var, type, field, def, needs, help) GA_CTYPE_##type field;
    GA_CONFIG_VARS(GA_CONFIG_FIELD)
#undef GA_CONFIG_FIELD
    bool enabled;     /* mode != GA_MODE_OFF */
    char *file_text;  /* GPUACCEL_CONFIG's contents: its values point here */
    const char *raw[GA_CONFIG_N]; /* as set (environment, else file); NULL: unset */
} ga_config_t;

/* Where the settings come from, and where problems go. */
typedef const char *(*ga_getenv_fn)(const char *name);
typedef void (*ga_config_problem_fn)(void *ctx, const char *var, const char *text);
typedef struct ga_config_src {
    ga_getenv_fn get;          /* getenv, or a test's table */
    char *const *env;          /* NAME=VALUE list scanned for unknown names; may be NULL */
    ga_config_problem_fn problem; /* each problem once, one line naming the variable */
    void *ctx;
} ga_config_src_t;

/* Fill cfg: the environment first, then GPUACCEL_CONFIG's file, then the
 * defaults. Malformed values keep the default; every problem (a bad value, an
 * unknown GPUACCEL_ name with the closest known one, a size that looks like a
 * forgotten unit, a setting whose switch is off, a switch that cannot act) is
 * reported once. Strings point into the environment or cfg->file_text. */
void ga_config_load(ga_config_t *cfg, const ga_config_src_t *src);

/* Variable i's effective value as text (in buf), for `gpuaccel env`. */
const char *ga_config_effective(const ga_config_t *cfg, unsigned i, char *buf, size_t len);

/* Parsers, exposed for unit tests: return false (and leave *out alone) on a
 * malformed value. */
bool ga_parse_bool(const char *s, bool *out);
bool ga_parse_size(const char *s, uint64_t *out);
bool ga_parse_uint(const char *s, unsigned *out);
bool ga_parse_level(const char *s, int *out);
bool ga_parse_limit(const char *s, ga_limit_t *out);
bool ga_parse_mode(const char *s, ga_mode_t *out);

/* A variable's type, as the table names it. */
typedef enum ga_config_type {
    GA_TYPE_MODE, GA_TYPE_FEATURE, GA_TYPE_BOOL, GA_TYPE_LEVEL, GA_TYPE_STR, GA_TYPE_SIZE,
    GA_TYPE_UINT, GA_TYPE_LIMIT
} ga_config_type_t;

/* One row per variable, for `gpuaccel env` and the README. */
typedef struct ga_config_doc {
    const char *name, *def, *needs, *help;
    ga_config_type_t type; /* FEATURE: a feature's switch, its default GPUACCEL=safe's */
} ga_config_doc_t;
extern const ga_config_doc_t ga_config_docs[];
extern const unsigned ga_config_ndocs;

#endif
