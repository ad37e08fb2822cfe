/* profiles.h - the profiles gpuaccel reads back: which files belong to one run
 * (GPUACCEL_PROFILE=BASE: BASE.json, BASE.<pid>.json, BASE.rank<R>.<pid>.json)
 * and what one file holds, checked as it is read.
 *
 * pf_read hands a file's lists to a sink as it reads them (the report merges
 * them there) and its scalars to a pf_proc_t; a file that is not a complete
 * profile gives a one-line reason and nothing that was handed out may be used. */
#ifndef GA_TOOLS_PROFILES_H
#define GA_TOOLS_PROFILES_H

#include <stdbool.h>
#include <stdint.h>

#include "json.h"

enum { PF_DIRS = 4, PF_BUCKETS = 5, PF_OPPS = 11 };
extern const char *const pf_dir_name[PF_DIRS];       /* htod dtoh dtod other */
extern const char *const pf_bucket_name[PF_BUCKETS]; /* <=256 B ... >1 MiB */
/* coalesce coalesce_mirrors pool async_pool pinned staging streams lazy_sync
 * graphs tune kernels: the profile's order (gpuaccel-profile/3) */
extern const char *const pf_opp_name[PF_OPPS];

/* An opportunity as a profile states it. */
typedef enum { PF_HELPS, PF_NO, PF_UNKNOWN } pf_verdict_t;
typedef struct pf_opp {
    pf_verdict_t verdict;
    uint64_t saving_ns;
    uint64_t acts_on; /* UINT64_MAX: not recorded (/1 and /2 files) */
    json_slice_t check;
} pf_opp_t;

/* One process: what its profile says, and sums over its lists. */
typedef struct pf_proc {
    const char *file;
    uint64_t pid, wall_ns;
    bool by_signal;
    bool ranked;
    uint64_t rank;
    int64_t world_size, local_rank; /* -1: not recorded */
    uint64_t calls, call_ns, syncs; /* syncs: cu*Synchronize* calls */
    uint64_t launches, gpu_ns, timed;
    uint64_t copies, copy_bytes, copy_ns, small_reads;
    uint64_t allocs, alloc_bytes, alloc_failed, frees, free_bytes, peak_live;
    json_slice_t text; /* the report, inside the buffer pf_read returned */
} pf_proc_t;

typedef struct pf_sink {
    void *ctx;
    void (*entry)(void *ctx, json_slice_t name, uint64_t calls, uint64_t ns);
    void (*kernel)(void *ctx, json_slice_t name, uint64_t launches, uint64_t gpu_ns,
                   uint64_t timed);
    void (*copy)(void *ctx, unsigned dir, unsigned bucket, uint64_t count, uint64_t bytes,
                 uint64_t ns);
    void (*counter)(void *ctx, json_slice_t feature, json_slice_t name, uint64_t value);
    void (*opportunity)(void *ctx, unsigned feature, const pf_opp_t *opp);
} pf_sink_t;

/* Reads `path` into *p and the sink. Returns the file's text (free it after
 * the last use of p->text), or NULL with a reason in `why` (errno's text, or
 * where and why the file is not a profile). */
char *pf_read(const char *path, pf_proc_t *p, const pf_sink_t *sink, char *why, size_t cap);

/* The profiles of the run whose GPUACCEL_PROFILE was `base`: BASE.json if it
 * is there, then each process's own, by name. Returns how many (a malloc'd
 * array of malloc'd paths in *out), or -1 (errno: the directory cannot be read). */
int pf_find_run(const char *base, char ***out);

/* Is `name` one of base's per-process JSON files (BASE.<pid>.json or
 * BASE.rank<R>.<pid>.json)? */
bool pf_is_process_file(const char *base, const char *name);

void pf_free_list(char **list, int n);

#endif
