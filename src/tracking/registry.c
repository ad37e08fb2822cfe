/* registry.c - the kernel registry: handle -> name, parameter layout, whether
 * the driver accepted a launch of it, and the features' per-handle decisions.
 *
 * Read on every launch, so reads take no lock: a handle is found through a
 * one-entry per-thread cache, else an open-addressing map published by atomic
 * pointer (entries are only added: a record is retired in place, and a later
 * record for a reused handle takes another entry). Writers (a new handle, an
 * unload) hold `lock`; growing the map publishes a copy and leaks the old one,
 * which readers may still be probing (at most twice the final size, in all).
 * Records are never freed: a thread may hold one from a lookup.
 * Owns: the map, every record, the retire generation.
 * Must never: call the driver while holding `lock`. */
#define _GNU_SOURCE
#include "tracking/registry.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/log.h"

enum { UNRESOLVED, RESOLVING, RESOLVED };

typedef struct record {
    ga_kernel_t k;
    _Atomic int state;     /* the fields of k beyond handle are set once: RESOLVED */
    _Atomic bool launched; /* the driver accepted a launch since the last unload */
    _Atomic bool retired;  /* its module or library was unloaded */
    _Atomic(void *) decision[GA_KERNEL_SLOTS];
    struct record *next_all; /* guarded by lock: every record ever made */
} record_t;

typedef struct entry {
    _Atomic(const void *) key;
    _Atomic(record_t *) rec;
} entry_t;

typedef struct map {
    size_t cap; /* a power of two */
    entry_t e[];
} map_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(map_t *) map;     /* written under lock, read without */
static size_t used;              /* guarded by lock: entries taken in map */
static record_t *all;            /* guarded by lock */
static _Atomic unsigned retire_gen; /* moves when records retire: per-thread caches drop */
static _Atomic int slots_taken;
static char unknown_name[] = "?";

/* The last handle this thread found. */
static GA_TLS struct {
    const void *f;
    record_t *r;
    unsigned gen;
} last;

static size_t slot_of(const map_t *m, const void *f)
{
    return (size_t)(ga_addr_mix((uintptr_t)f) >> 32) & (m->cap - 1);
}

static record_t *find(const void *f)
{
    unsigned gen = atomic_load_explicit(&retire_gen, memory_order_acquire);
    if (last.f == f && last.gen == gen && last.r)
        return last.r;
    map_t *m = atomic_load_explicit(&map, memory_order_acquire);
    for (size_t i = m ? slot_of(m, f) : 0; m; i = (i + 1) & (m->cap - 1)) {
        const void *k = atomic_load_explicit(&m->e[i].key, memory_order_acquire);
        if (!k)
            return NULL;
        record_t *r = k == f ? atomic_load_explicit(&m->e[i].rec, memory_order_acquire) : NULL;
        if (r && !atomic_load_explicit(&r->retired, memory_order_acquire)) {
            last.f = f, last.r = r, last.gen = gen;
            return r;
        }
    }
    return NULL;
}

/* Into m, which has room (under lock). The record goes in before its key:
 * a reader that sees the key sees the record. */
static void put_locked(map_t *m, record_t *r)
{
    size_t i = slot_of(m, r->k.handle);
    while (atomic_load_explicit(&m->e[i].key, memory_order_relaxed))
        i = (i + 1) & (m->cap - 1);
    atomic_store_explicit(&m->e[i].rec, r, memory_order_release);
    atomic_store_explicit(&m->e[i].key, r->k.handle, memory_order_release);
}

/* Room for one more: a map twice the size, holding the live records. */
static bool reserve_locked(void)
{
    map_t *m = atomic_load_explicit(&map, memory_order_relaxed);
    if (m && 2 * (used + 1) <= m->cap)
        return true;
    size_t cap = m ? 2 * m->cap : 64;
    map_t *bigger = calloc(1, sizeof *bigger + cap * sizeof bigger->e[0]);
    if (!bigger)
        return false;
    bigger->cap = cap;
    used = 0;
    for (record_t *r = all; r; r = r->next_all)
        if (!atomic_load_explicit(&r->retired, memory_order_relaxed))
            put_locked(bigger, r), used++;
    atomic_store_explicit(&map, bigger, memory_order_release); /* the old one stays readable */
    return true;
}

/* The record of f, made (unresolved) if there is none. */
static record_t *find_or_add(const void *f)
{
    record_t *r = find(f);
    if (r)
        return r;
    record_t *fresh = calloc(1, sizeof *fresh);
    if (!fresh)
        return NULL;
    fresh->k.handle = f;
    pthread_mutex_lock(&lock);
    r = find(f);
    if (!r && reserve_locked()) {
        fresh->next_all = all;
        all = fresh;
        put_locked(atomic_load_explicit(&map, memory_order_relaxed), fresh);
        used++;
        r = fresh;
        fresh = NULL;
    }
    pthread_mutex_unlock(&lock);
    free(fresh);
    return r;
}

/* ---- resolving a handle (driver calls, no lock) ------------------------------- */

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
    record_t *r = find_or_add(f);
    if (!r)
        return NULL;
    int s = atomic_load_explicit(&r->state, memory_order_acquire);
    if (s == RESOLVED)
        return &r->k;
    int expected = UNRESOLVED;
    if (atomic_compare_exchange_strong(&r->state, &expected, RESOLVING)) {
        resolve(rt, &r->k);
        atomic_store_explicit(&r->state, RESOLVED, memory_order_release);
        ga_debug("kernel %p: %s, %u parameters", (const void *)f, r->k.name, r->k.nparams);
    }
    while (atomic_load_explicit(&r->state, memory_order_acquire) != RESOLVED)
        sched_yield(); /* another thread is asking the driver: a few calls */
    return &r->k;
}

void ga_kernel_note_launched(CUfunction f)
{
    record_t *r = find(f);
    if (r && atomic_load_explicit(&r->launched, memory_order_relaxed))
        return; /* the common case: no write */
    if ((r = r ? r : find_or_add(f)))
        atomic_store_explicit(&r->launched, true, memory_order_release);
}

bool ga_kernel_was_launched(CUfunction f)
{
    record_t *r = find(f);
    return r && atomic_load_explicit(&r->launched, memory_order_acquire);
}

/* ---- the features' decisions ---------------------------------------------------- */

int ga_kernel_slot_new(void)
{
    int s = atomic_fetch_add(&slots_taken, 1);
    return s < GA_KERNEL_SLOTS ? s : -1;
}

void *ga_kernel_decision(CUfunction f, int slot)
{
    record_t *r = slot >= 0 ? find(f) : NULL;
    return r ? atomic_load_explicit(&r->decision[slot], memory_order_acquire) : NULL;
}

void *ga_kernel_decide(CUfunction f, int slot, void *d)
{
    record_t *r = slot >= 0 ? find_or_add(f) : NULL;
    if (!r)
        return NULL;
    void *expected = NULL;
    if (atomic_compare_exchange_strong(&r->decision[slot], &expected, d))
        return d;
    return expected; /* another thread decided first */
}

/* ---- unloading ---------------------------------------------------------------- */

/* Retire the resolved records `which` selects (all modules' when owner is
 * NULL and modules is set). */
static void forget(const void *owner, bool modules)
{
    pthread_mutex_lock(&lock);
    for (record_t *r = all; r; r = r->next_all) {
        bool resolved = atomic_load_explicit(&r->state, memory_order_acquire) == RESOLVED;
        if (resolved && (modules ? !r->k.is_library : r->k.owner == owner))
            atomic_store_explicit(&r->retired, true, memory_order_release);
        /* Handles may be reused after an unload: launched anew before asked about. */
        atomic_store_explicit(&r->launched, false, memory_order_release);
    }
    atomic_fetch_add_explicit(&retire_gen, 1, memory_order_acq_rel);
    pthread_mutex_unlock(&lock);
}

void ga_registry_forget_owner(const void *owner)
{
    forget(owner, false);
}

void ga_registry_forget_modules(void)
{
    forget(NULL, true);
}

unsigned ga_registry_count(void)
{
    unsigned n = 0;
    pthread_mutex_lock(&lock);
    for (record_t *r = all; r; r = r->next_all)
        n += !atomic_load_explicit(&r->retired, memory_order_relaxed) &&
             atomic_load_explicit(&r->state, memory_order_relaxed) == RESOLVED;
    pthread_mutex_unlock(&lock);
    return n;
}

static void fork_child(void)
{
    /* Modules do not survive into a child: start empty (records leaked). */
    atomic_store(&map, NULL);
    all = NULL;
    used = 0;
    atomic_fetch_add(&retire_gen, 1);
}

const ga_fork_ops_t ga_registry_fork = {NULL, &lock, fork_child};
