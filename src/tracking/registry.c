/* registry.c - the kernel registry: handle -> name and parameter layout.
 *
 * Owns: a uthash table guarded by `lock`. Records of unloaded kernels are not
 * freed (another thread may still hold a pointer from a lookup); they are
 * moved to a retired list and their handle no longer finds them.
 * Must never: call the driver while holding `lock`. */
#define _GNU_SOURCE
#include "tracking/registry.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "core/log.h"

typedef struct record {
    ga_kernel_t k;
    UT_hash_handle hh;
    struct record *retired_next;
} record_t;

/* Handles the driver has accepted a launch of. */
typedef struct launched {
    const void *f;
    UT_hash_handle hh;
} launched_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static record_t *table;   /* guarded by lock */
static launched_t *launched; /* guarded by lock */
static record_t *retired; /* guarded by lock */
static char unknown_name[] = "?";

static CUresult func_param(const ga_rt_t *rt, const void *h, size_t i, size_t *o, size_t *s)
{
    __typeof__(&cuFuncGetParamInfo) f = GA_REAL(rt, GA_ID_cuFuncGetParamInfo, cuFuncGetParamInfo);
    return f ? f((CUfunction)h, i, o, s) : CUDA_ERROR_NOT_FOUND;
}

static CUresult kernel_param(const ga_rt_t *rt, const void *h, size_t i, size_t *o, size_t *s)
{
    __typeof__(&cuKernelGetParamInfo) f =
        GA_REAL(rt, GA_ID_cuKernelGetParamInfo, cuKernelGetParamInfo);
    return f ? f((CUkernel)h, i, o, s) : CUDA_ERROR_NOT_FOUND;
}

/* Kernels have at most 32764 bytes of parameters: a loop bound, not a limit
 * anyone reaches. */
enum { MAX_PARAMS = 8192 };

static void resolve_params(const ga_rt_t *rt, ga_kernel_t *k)
{
    CUresult (*get)(const ga_rt_t *, const void *, size_t, size_t *, size_t *) =
        k->is_library ? kernel_param : func_param;
    unsigned n = 0, cap = 0;
    size_t off, size;
    while (n < MAX_PARAMS && get(rt, k->handle, n, &off, &size) == CUDA_SUCCESS) {
        if (n == cap) {
            cap = cap ? 2 * cap : 8;
            uint32_t *o = realloc(k->offset, cap * sizeof *o);
            uint32_t *s = o ? realloc(k->size, cap * sizeof *s) : NULL;
            if (!o || !s) {
                k->offset = o;
                return; /* params_known stays false */
            }
            k->offset = o;
            k->size = s;
        }
        k->offset[n] = (uint32_t)off;
        k->size[n] = (uint32_t)size;
        if (off + size > k->param_bytes)
            k->param_bytes = off + size;
        n++;
    }
    k->nparams = n;
    k->params_known = true; /* a kernel may have no parameters at all */
}

static void resolve(const ga_rt_t *rt, ga_kernel_t *k)
{
    const char *name = NULL;
    __typeof__(&cuFuncGetName) fname = GA_REAL(rt, GA_ID_cuFuncGetName, cuFuncGetName);
    __typeof__(&cuKernelGetName) kname = GA_REAL(rt, GA_ID_cuKernelGetName, cuKernelGetName);
    if (fname && fname(&name, (CUfunction)k->handle) == CUDA_SUCCESS) {
        CUmodule mod = NULL;
        __typeof__(&cuFuncGetModule) fmod = GA_REAL(rt, GA_ID_cuFuncGetModule, cuFuncGetModule);
        if (fmod && fmod(&mod, (CUfunction)k->handle) == CUDA_SUCCESS)
            k->owner = mod;
    } else if (kname && kname(&name, (CUkernel)k->handle) == CUDA_SUCCESS) {
        CUlibrary lib = NULL;
        __typeof__(&cuKernelGetLibrary) klib =
            GA_REAL(rt, GA_ID_cuKernelGetLibrary, cuKernelGetLibrary);
        k->is_library = true;
        if (klib && klib(&lib, (CUkernel)k->handle) == CUDA_SUCCESS)
            k->owner = lib;
    } else {
        name = NULL; /* older driver or unknown handle kind */
    }
    k->name = strdup(name ? name : "?");
    if (!k->name)
        k->name = unknown_name;
    resolve_params(rt, k);
}

const ga_kernel_t *ga_kernel_info(const ga_rt_t *rt, CUfunction f)
{
    record_t *r;
    pthread_mutex_lock(&lock);
    HASH_FIND_PTR(table, &f, r);
    pthread_mutex_unlock(&lock);
    if (r)
        return &r->k;

    record_t *fresh = calloc(1, sizeof *fresh);
    if (!fresh)
        return NULL;
    fresh->k.handle = f;
    resolve(rt, &fresh->k); /* outside the lock: it calls the driver */

    pthread_mutex_lock(&lock);
    HASH_FIND_PTR(table, &f, r);
    if (!r) {
        HASH_ADD_PTR(table, k.handle, fresh);
        r = fresh;
        fresh = NULL;
    }
    pthread_mutex_unlock(&lock);
    if (fresh) { /* another thread resolved it first */
        if (fresh->k.name != unknown_name)
            free(fresh->k.name);
        free(fresh->k.offset);
        free(fresh->k.size);
        free(fresh);
    }
    ga_debug("kernel %p: %s, %u parameters", (const void *)f, r->k.name, r->k.nparams);
    return &r->k;
}

void ga_kernel_note_launched(CUfunction f)
{
    launched_t *l;
    pthread_mutex_lock(&lock);
    HASH_FIND_PTR(launched, &f, l);
    if (!l && (l = calloc(1, sizeof *l))) {
        l->f = f;
        HASH_ADD_PTR(launched, f, l);
    }
    pthread_mutex_unlock(&lock);
}

bool ga_kernel_was_launched(CUfunction f)
{
    launched_t *l;
    pthread_mutex_lock(&lock);
    HASH_FIND_PTR(launched, &f, l);
    pthread_mutex_unlock(&lock);
    return l != NULL;
}

void ga_registry_forget_owner(const void *owner)
{
    record_t *r, *tmp;
    pthread_mutex_lock(&lock);
    HASH_ITER(hh, table, r, tmp)
        if (r->k.owner == owner) {
            HASH_DEL(table, r);
            r->retired_next = retired;
            retired = r;
        }
    launched_t *l, *ltmp;
    HASH_ITER(hh, launched, l, ltmp) { /* their handles may be reused: launch them anew */
        HASH_DEL(launched, l);
        free(l);
    }
    pthread_mutex_unlock(&lock);
}

unsigned ga_registry_count(void)
{
    pthread_mutex_lock(&lock);
    unsigned n = HASH_COUNT(table);
    pthread_mutex_unlock(&lock);
    return n;
}

static void fork_child(void)
{
    /* Modules do not survive into a child: start empty (records leaked). */
    table = NULL;
    retired = NULL;
    launched = NULL;
}

const ga_fork_ops_t ga_registry_fork = {NULL, &lock, fork_child};
