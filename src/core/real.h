/* real.h - the boundary to what lies beneath the library: the real dynamic
 * loader functions and the real libcuda.
 *
 * Contract:
 *  - ga_real_dlsym_ptr/ga_real_dlvsym_ptr are glibc's own, found without calling dlsym
 *    (elfsym.c); calling them never re-enters this library's dlsym.
 *  - ga_driver_resolve() looks up every entry of entries.def in an already
 *    loaded libcuda; an entry point the driver lacks stays NULL, and callers
 *    must treat NULL as "this driver has no such function".
 *  - Nothing here takes a lock, allocates, or calls into CUDA. */
#ifndef GA_REAL_H
#define GA_REAL_H

#include "core/common.h"

typedef void *(*ga_dlsym_fn)(void *, const char *);
typedef void *(*ga_dlvsym_fn)(void *, const char *, const char *);

/* glibc's own dlsym and dlvsym, or NULL if they cannot be found. Calls made
 * through them are relative to this library (RTLD_NEXT finds what follows it). */
ga_dlsym_fn ga_real_dlsym_ptr(void);
ga_dlvsym_fn ga_real_dlvsym_ptr(void);

static inline void *ga_real_dlsym(void *handle, const char *name)
{
    ga_dlsym_fn f = ga_real_dlsym_ptr();
    return f ? f(handle, name) : NULL;
}


/* libcuda's handle if the process has loaded it (RTLD_NOLOAD), else NULL. The
 * caller owns one reference and releases it with ga_libcuda_release. */
void *ga_libcuda_open(void);
void ga_libcuda_release(void *handle);

typedef struct ga_ptr_id {
    uintptr_t ptr;
    int id;
} ga_ptr_id_t;

typedef struct ga_driver {
    void *fn[GA_N_ENTRIES];            /* real entry points; NULL if absent */
    ga_ptr_id_t by_ptr[GA_N_ENTRIES];  /* sorted by ptr, for routing by identity */
    unsigned n_by_ptr;
} ga_driver_t;

/* Resolve every entry in `lib` and build the pointer index. Returns the number
 * of entry points found. */
unsigned ga_driver_resolve(ga_driver_t *drv, void *lib);

/* The entry id whose real function is exactly `p`. When several entries share
 * one address, the one whose name starts with `base` (if given) wins; if that
 * leaves a tie, -1: never guess an ABI. */
int ga_driver_id_of(const ga_driver_t *drv, const void *p, const char *base);

#endif
