/* common.h - what every module of libgpuaccel includes.
 *
 * Owns: the CUDA header in its exact-ELF-name mode, branch hints, and the entry
 * point ids generated from entries.def (the one table of wrapped entry points).
 * Must never: define state. */
#ifndef GA_COMMON_H
#define GA_COMMON_H

/* Declare every driver function under its exact ELF name (cuMemAlloc_v2,
 * cuLaunchKernel_ptsz, the legacy unversioned ones) instead of the macros an
 * application sees, so our wrappers are type-checked against cuda.h. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include "core/compat.h" /* what the library calls, for headers older than CUDA 13.0 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GA_LIKELY(x)   __builtin_expect(!!(x), 1)
#define GA_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GA_EXPORT      __attribute__((visibility("default")))
#define GA_UNUSED      __attribute__((unused))
#define GA_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* Thread-local storage as a plain offset from the thread pointer, no
 * __tls_get_addr call on the hot path (~11 instructions a use): the library is
 * loaded at startup (LD_PRELOAD or linked), and a later dlopen still finds
 * room for its few hundred bytes in glibc's static TLS surplus. mimalloc
 * makes the same choice for its heap pointer. */
#define GA_TLS __thread __attribute__((tls_model("initial-exec")))

/* Splice an argument tuple "(a, b)" after a leading argument: f(x GA_TAIL (a, b)). */
#define GA_TAIL_(...)  , ##__VA_ARGS__
#define GA_TAIL(args)  GA_TAIL_ args

/* Stream column values in entries.def for entries without a CUstream argument. */
#define GA_NOSTREAM  ((CUstream)(uintptr_t)-1) /* not stream ordered */
#define GA_DEFSTREAM ((CUstream)0)             /* runs on the default stream */
#define GA_HIDDENSTREAM ((CUstream)(uintptr_t)-2) /* on streams inside its parameters */

typedef enum ga_id {
#define GA_ENTRY(name, cls, pt, stream, params, args) GA_ID_##name,
#define GA_HOOKED(name, fam, cls, pt, stream, params, args, hparams) GA_ID_##name,
#include "core/entries.def"
#undef GA_ENTRY
#undef GA_HOOKED
    GA_N_ENTRIES
} ga_id_t;

/* The table must come from the cuda.h this file includes: its prototypes are
 * that header's (configure generates one in the build tree for headers other
 * than the committed table's). */
_Static_assert(GA_ENTRIES_CUDA_VERSION == CUDA_VERSION,
               "core/entries.def was generated from another cuda.h: run configure again");

/* An entry's class in entries.def (tools/gen-entries.py): r reads only; d
 * writes memory, maps none (copies, memsets); w may write and map. */
#define GA_WRITES_r false
#define GA_WRITES_d true
#define GA_WRITES_w true
#define GA_MAPS_r false
#define GA_MAPS_d false
#define GA_MAPS_w true

/* Static facts about one entry point, indexed by ga_id_t (entry.c). */
typedef struct ga_entry_info {
    const char *name;  /* exact ELF name */
    bool writes;       /* may write device memory (bumps the epoch) */
    bool maps;         /* may map or unmap memory (bumps the map epoch): not a copy or memset */
    bool per_thread;   /* _ptsz/_ptds variant: stream 0 means the per-thread stream */
    bool hooked;       /* a feature hook handles it */
} ga_entry_info_t;

extern const ga_entry_info_t ga_entries[GA_N_ENTRIES];

/* Entry id for an exact ELF name, or -1. */
int ga_entry_by_name(const char *name);

/* True if `base` names entry points (itself or its _v2/_ptsz/... variants) that
 * are all known never to write device memory; false for unknown names. */
bool ga_name_read_only(const char *base);

/* Entry points declared outside cuda.h that are known not to write device
 * memory: graphics interop (cudaGL.h, cudaEGL.h, ...) and cudaProfiler.h. */
bool ga_name_outside_cuda_h(const char *name);

#endif
