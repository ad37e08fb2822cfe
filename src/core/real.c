/* real.c - find glibc's dlsym/dlvsym and libcuda's entry points.
 *
 * Owns: the two bootstrap pointers (published with atomics, computed without
 * locks so no caller can deadlock against the loader lock) and the resolution
 * of the entry table. Must never call this library's own dlsym. */
#define _GNU_SOURCE
#include "core/real.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/elfsym.h"

/* Written by whichever thread gets there first; every thread computes the same
 * value, so a racing duplicate store is harmless. */
static _Atomic(ga_dlsym_fn) real_dlsym_p;
static _Atomic(ga_dlvsym_fn) real_dlvsym_p;

static void *libc_symbol(const char *name)
{
    /* glibc >= 2.34 keeps the dl* functions in libc; older ones in libdl. */
    void *p = ga_elf_find("libc.so.6", name);
    return p ? p : ga_elf_find("libdl.so.2", name);
}

ga_dlsym_fn ga_real_dlsym_ptr(void)
{
    ga_dlsym_fn f = atomic_load_explicit(&real_dlsym_p, memory_order_acquire);
    if (GA_UNLIKELY(!f)) {
        f = (ga_dlsym_fn)libc_symbol("dlsym");
        atomic_store_explicit(&real_dlsym_p, f, memory_order_release);
    }
    return f;
}

ga_dlvsym_fn ga_real_dlvsym_ptr(void)
{
    ga_dlvsym_fn f = atomic_load_explicit(&real_dlvsym_p, memory_order_acquire);
    if (GA_UNLIKELY(!f)) {
        f = (ga_dlvsym_fn)libc_symbol("dlvsym");
        atomic_store_explicit(&real_dlvsym_p, f, memory_order_release);
    }
    return f;
}

void *ga_libcuda_open(void)
{
    return dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
}

void ga_libcuda_release(void *handle)
{
    if (handle)
        dlclose(handle);
}

static int cmp_ptr_id(const void *a, const void *b)
{
    const ga_ptr_id_t *x = a, *y = b;
    if (x->ptr != y->ptr)
        return x->ptr < y->ptr ? -1 : 1;
    return x->id - y->id;
}

unsigned ga_driver_resolve(ga_driver_t *drv, void *lib)
{
    unsigned found = 0;
    for (int id = 0; id < GA_N_ENTRIES; id++) {
        void *p = ga_real_dlsym(lib, ga_entries[id].name);
        drv->fn[id] = p;
        if (p)
            drv->by_ptr[found++] = (ga_ptr_id_t){(uintptr_t)p, id};
    }
    drv->n_by_ptr = found;
    qsort(drv->by_ptr, found, sizeof drv->by_ptr[0], cmp_ptr_id);
    return found;
}

/* Does `name` spell `base` or one of its versioned variants (base_v2, base_ptsz)? */
static bool is_variant_of(const char *name, const char *base)
{
    size_t n = strlen(base);
    return !strncmp(name, base, n) && (name[n] == '\0' || name[n] == '_');
}

int ga_driver_id_of(const ga_driver_t *drv, const void *p, const char *base)
{
    unsigned lo = 0, hi = drv->n_by_ptr;
    while (lo < hi) { /* first index whose ptr >= p */
        unsigned mid = (lo + hi) / 2;
        if (drv->by_ptr[mid].ptr < (uintptr_t)p)
            lo = mid + 1;
        else
            hi = mid;
    }
    unsigned end = lo;
    while (end < drv->n_by_ptr && drv->by_ptr[end].ptr == (uintptr_t)p)
        end++;
    if (end - lo <= 1)
        return end > lo ? drv->by_ptr[lo].id : -1;
    int pick = -1;
    for (unsigned i = lo; base && i < end; i++) {
        if (!is_variant_of(ga_entries[drv->by_ptr[i].id].name, base))
            continue;
        if (pick >= 0)
            return -1; /* two variants of this name share the address: ambiguous */
        pick = drv->by_ptr[i].id;
    }
    return pick;
}
