/* config.h - the GPUACCEL_* environment variables, parsed once at init.
 *
 * One table (GA_CONFIG_VARS) names every variable, its type, default and help;
 * it drives the struct, the parser and `gpuaccel env`. Its rows live beside
 * what they set: core's in core/settings.h, a feature's in its folder. A
 * malformed value gets one warning naming the variable and what was expected,
 * then the default. */
#ifndef GA_CONFIG_H
#define GA_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The table: X(variable, type, field, default, needs, help) rows, one per
 * variable. `needs` is the variable that must be on for this one to act (""
 * for none): setting it while that one is off draws a warning. A FEATURE is a
 * feature's switch: when it is not set, GPUACCEL's set decides (off: none;
 * safe: those whose default is "1"; all: every one). W(switch, wanted, why)
 * rows name a setting a switch cannot act without: the switch on and that
 * one unset draws a warning saying why. R(variable, min, max) rows, written
 * under the X row they bound (a UINT or a SIZE), give the values the code
 * acts on as set, in the variable's own notation ("64K"; max "" for no upper
 * bound): a value outside draws one warning naming the range, and the
 * default is used. A value the code would clamp, round away or read as
 * another needs such a row, so that `gpuaccel env --check` catches it.
 *
 * Core's rows are in core/settings.h; each feature keeps its own in its
 * folder's settings.h, and src/features/settings.h (written by autogen.sh
 * from features.def and those files) joins them as GA_FEATURE_SETTINGS.
 * These headers hold rows and nothing else, so core may read them
 * (tools/check-layers). */
#include "core/settings.h"
#include "features/settings.h"

#define GA_CONFIG_TABLE(X, W, R) GA_CORE_SETTINGS(X, W, R) GA_FEATURE_SETTINGS(X, W, R)
#define GA_CONFIG_NO_W(sw, wanted, why)
#define GA_CONFIG_NO_X(var, type, field, def, needs, help)
#define GA_CONFIG_NO_R(var, min, max)
#define GA_CONFIG_VARS(X) GA_CONFIG_TABLE(X, GA_CONFIG_NO_W, GA_CONFIG_NO_R)
#define GA_CONFIG_WANTS(W) GA_CONFIG_TABLE(GA_CONFIG_NO_X, W, GA_CONFIG_NO_R)
#define GA_CONFIG_RANGES(R) GA_CONFIG_TABLE(GA_CONFIG_NO_X, GA_CONFIG_NO_W, R)

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
    bool enabled;     /* any feature on (the set, then each switch) */
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

/* GPUACCEL_STAGING_THREADS as it acts: the setting, or for 0 three quarters
 * of the CPUs this process may run on (1 with fewer than two), 12 at most.
 * Staging copies with that many threads, and the profile's staging estimate
 * spreads a copy's host work over them. */
unsigned ga_config_staging_threads(const ga_config_t *cfg);

/* Staging's rings, as the staging feature makes them and the profile's
 * estimate models them: GA_STAGING_SLOTS slots of at least
 * GA_STAGING_MIN_CHUNK bytes, all engines' rings within
 * 1/GA_STAGING_RING_SHARE of the program's pageable traffic. */
enum { GA_STAGING_SLOTS = 4, GA_STAGING_MIN_CHUNK = 64 << 10, GA_STAGING_RING_SHARE = 16 };

/* The largest chunk: GPUACCEL_STAGING_CHUNK (8 MiB for 0), a multiple of
 * 4 KiB within [GA_STAGING_MIN_CHUNK, 1 GiB]. */
size_t ga_config_staging_chunk(const ga_config_t *cfg);

/* The slot size a ring may have after t bytes of pageable traffic: the
 * largest chunk max, or the largest power of two (GA_STAGING_MIN_CHUNK at
 * least) that keeps the slots within t / GA_STAGING_RING_SHARE; 0 while none
 * fits. */
size_t ga_config_staging_ring_chunk(size_t max, uint64_t t);

/* The slot size staging wants after t bytes of traffic: the above, and no
 * larger than the largest copy so far needs (rounded up to a power of two,
 * GA_STAGING_MIN_CHUNK at least). */
size_t ga_config_staging_slot(size_t max, uint64_t t, size_t largest);

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

/* Variable i's range (its R row): true with *min and *max (max "" for none),
 * false when it has none. */
bool ga_config_range(unsigned i, const char **min, const char **max);

#endif
