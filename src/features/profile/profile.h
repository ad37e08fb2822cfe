/* profile.h - GPUACCEL_PROFILE: what the program did on the GPU and which
 * library features would help it.
 *
 * The feature is its descriptor, ga_feature_profile: the hooks tell it their
 * events (copies, allocations, launches, timed driver calls), and the launch
 * sequence detector (tracking/sequence.h) the segments it cuts, the same that
 * graphs learns from;
 * at exit it writes FILE.txt (a report a person reads), FILE.json
 * (doc/profile-schema.json) and FILE.trace.json (Chrome trace-event format:
 * Perfetto, chrome://tracing). The functions below are what its handlers and
 * the unit tests call. None calls the driver while holding the module's lock. */
#ifndef GA_PROFILE_H
#define GA_PROFILE_H

#include "core/clock.h"
#include "features/feature.h"

/* Set once by ga_profile_init, before the runtime is published. */
extern bool ga_profiling;

/* Start profiling into rt->cfg.profile (a non-empty path prefix). Also used by
 * the unit tests to start over with a fresh state. */
void ga_profile_init(const ga_rt_t *rt);

/* A copy of `bytes` that took `ns` in the driver (successful calls only). */
void ga_profile_copy(ga_copy_dir_t dir, size_t bytes, uint64_t ns);

/* The same with what the estimates need: `dev` its device address (0:
 * unknown), `host_kind` its host memory's (-1: not asked, 0: pageable, 1:
 * page-locked). */
void ga_profile_copy_at(ga_copy_dir_t dir, size_t bytes, uint64_t ns, CUdeviceptr dev,
                        int host_kind);

/* The large pageable download just recorded (ga_profile_copy_at) wrote
 * `pages` pages of host memory that were not resident before it. */
void ga_profile_untouched(uint64_t pages);

/* What the first touch of a host page costs here, in ns (measured at init;
 * the unit tests set it). */
void ga_profile_set_fault_ns(uint64_t ns);

/* A stream-ordered allocation from `pool` that took `ns`: the pool's
 * reservation `before` and `after` it. */
void ga_profile_async_alloc(CUmemoryPool pool, uint64_t before, uint64_t after, uint64_t ns);

/* An allocation attempt: `p` is the returned pointer when r == CUDA_SUCCESS.
 * The module remembers p's size so a free can be charged without the caller
 * knowing it. */
void ga_profile_alloc(CUdeviceptr p, size_t bytes, uint64_t ns, CUresult r);

/* A successful free of `p`; `bytes` is its size if the caller knows it, else 0
 * (the size recorded at allocation is used). */
void ga_profile_free(CUdeviceptr p, size_t bytes, uint64_t ns);

/* Just before a launch on stream `s`: with GPUACCEL_PROFILE_KERNELS=1 records
 * the start event (real driver, outside any lock). The next ga_profile_launch
 * on this thread consumes it; a failed launch simply leaves it for reuse. */
void ga_profile_kernel_begin(const ga_rt_t *rt, CUstream s, bool per_thread);

/* After a successful launch of `f` (a CUfunction or CUkernel). */
void ga_profile_launch(const ga_rt_t *rt, CUfunction f, const unsigned grid[3],
                       const unsigned block[3], unsigned shmem, CUstream s, bool per_thread);

/* A feature's own counter, e.g. ("pool", "hits", 1). Both strings must live for
 * the whole process (string literals). */
void ga_profile_counter(const char *feature, const char *name, uint64_t delta);

/* A driver call timed by stats.c (from ga_span_record): a trace event. */
void ga_profile_span(ga_id_t id, uint64_t t0, uint64_t t1);

/* Write the three files. Idempotent (the first call wins). Called at exit
 * (the descriptor's exit); the module's own SIGINT/SIGTERM handlers call it too, which
 * is why writing uses no stdio and no allocation. */
void ga_profile_write(void);

/* The path prefix the files go to ("" when not profiling). */
const char *ga_profile_path(void);

#endif
