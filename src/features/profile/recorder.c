/* recorder.c - the profile's event recorder: what the hooks report of copies,
 * allocations, launches and the features' counters, and the segments the
 * sequence detector (tracking/sequence.h) hands over, go into the state's
 * tables (copies by direction and size, live allocations and churn, kernels
 * and their configurations, each stream's GPU track, the sequences the
 * segments repeat, counters).
 *
 * With a window file (window.c), what feeds the totals and the estimates is
 * counted only inside a window (in_window, read once per event before the
 * lock); what pairs one event with another (the live allocations' sizes, the
 * sizes freed, the device work since the last small read and the blocks read
 * since it, the kernels' records, each stream's GPU track, the pools' peaks)
 * is kept whatever the window, so that an allocation made before a window and
 * freed inside it is still understood.
 *
 * Owns: those tables, under ga_prof_lock; the kernel table's lock-free lookup.
 * Must never: call the driver while holding ga_prof_lock (a kernel's first
 * launch asks the registry, which may, before taking it); allocate (the tables
 * are fixed at init, and a signal handler may read them at any time). */
#define _GNU_SOURCE
#include "features/profile/internal.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <string.h>

#include "core/hash.h"
#include "tracking/registry.h"

const uint64_t ga_prof_bucket_max[N_BUCKETS] = {256, 4096, 65536, 1u << 20, 0};
const char *const ga_prof_bucket_name[N_BUCKETS] = {"<=256 B", "<=4 KiB", "<=64 KiB",
                                                    "<=1 MiB", ">1 MiB"};
const char *const ga_prof_dir_name[N_DIRS] = {"htod", "dtoh", "dtod", "other"};

/* A slot for a pointer (or a size) in a table of mask + 1: the mix's top bits. */
static unsigned hash_ptr(const void *p, unsigned mask)
{
    return (unsigned)(ga_addr_mix((uint64_t)(uintptr_t)p) >> 40) & mask;
}

/* ---- copies and allocations ------------------------------------------------------ */
static unsigned bucket_of(size_t bytes)
{
    unsigned b = 0;
    while (b < N_BUCKETS - 1 && bytes > ga_prof_bucket_max[b])
        b++;
    return b;
}

/* A small read with no device work since the read before: does a window
 * (a 64 KiB block read since that work) hold it? The blocks are forgotten at
 * the next device work, as coalescing's windows are. Hits and misses count
 * only when `counted` (inside the profile's window); the blocks are kept
 * either way. */
static void window_read(CUdeviceptr dev, uint64_t ns, bool follows, bool counted)
{
    uint64_t block = (uint64_t)dev >> 16;
    if (ga_prof->win.work != ga_prof->follow.work) {
        ga_prof->win.work = ga_prof->follow.work;
        ga_prof->win.n = ga_prof->win.next = 0;
    }
    bool held = false;
    for (unsigned i = 0; i < ga_prof->win.n && !held; i++)
        held = ga_prof->win.block[i] == block;
    if (counted && follows && held)
        ga_prof->win.hits++, ga_prof->win.hit_ns += ns;
    else if (counted && follows)
        ga_prof->win.misses++, ga_prof->win.miss_ns += ns;
    if (!held) { /* a new window: the oldest goes when all are in use */
        ga_prof->win.block[ga_prof->win.next] = block;
        ga_prof->win.next = (ga_prof->win.next + 1) % WINDOW_BLOCKS;
        if (ga_prof->win.n < WINDOW_BLOCKS)
            ga_prof->win.n++;
    }
}

/* A large pageable copy as staging would take it (under the lock): its
 * rings follow the whole process's traffic; the copy's staged time, and a
 * ring made or grown for it, count inside the windows. */
static void staged_copy(unsigned d, size_t bytes, uint64_t ns, bool in)
{
    __typeof__(ga_prof->stg) *g = &ga_prof->stg;
    g->traffic += bytes;
    if (bytes > g->largest)
        g->largest = bytes;
    size_t chunk = ga_config_staging_slot(g->max, g->traffic, g->largest);
    if (chunk > g->chunk) {
        if (in)
            g->rings++, g->ring_ns += ga_prof_ring_ns(chunk, g->chunk == 0);
        g->chunk = chunk;
    }
    if (in) /* no ring yet: staging leaves the copy to the driver */
        g->est_ns[d] += chunk ? ga_prof_staged_ns(d, bytes, chunk) : ns;
}

void ga_profile_copy_at(ga_copy_dir_t dir, size_t bytes, uint64_t ns, CUdeviceptr dev, int host_kind)
{
    if (!ga_profiling || (unsigned)dir >= N_DIRS)
        return;
    bool in = in_window();
    pthread_mutex_lock(&ga_prof_lock);
    unsigned b = bucket_of(bytes);
    if (in) {
        acc_t *a = &ga_prof->copies[dir][b];
        a->count++, a->bytes += bytes, a->ns += ns;
    }
    if (in && host_kind >= 0 && (dir == GA_COPY_HTOD || dir == GA_COPY_DTOH)) {
        acc_t *l = &ga_prof->large[dir == GA_COPY_DTOH][host_kind > 0];
        l->count++, l->bytes += bytes, l->ns += ns;
    }
    if (host_kind == 0 && (dir == GA_COPY_HTOD || dir == GA_COPY_DTOH))
        staged_copy(dir == GA_COPY_DTOH, bytes, ns, in);
    if (dir == GA_COPY_DTOH && b == 0) {
        bool follows = ga_prof->follow.seen && ga_prof->follow.at_last_read == ga_prof->follow.work;
        if (in && follows)
            ga_prof->follow.n++, ga_prof->follow.ns += ns;
        window_read(dev, ns, follows, in);
        ga_prof->follow.seen = true, ga_prof->follow.at_last_read = ga_prof->follow.work;
    } else if (dir != GA_COPY_DTOH) {
        ga_prof->follow.work++;
    }
    pthread_mutex_unlock(&ga_prof_lock);
}

void ga_profile_untouched(uint64_t pages)
{
    if (!ga_profiling || !pages || !in_window())
        return;
    pthread_mutex_lock(&ga_prof_lock);
    ga_prof->untouched_pages += pages;
    pthread_mutex_unlock(&ga_prof_lock);
}

void ga_profile_set_fault_ns(uint64_t ns)
{
    if (ga_profiling)
        ga_prof->fault_ns = ns;
}

void ga_profile_copy(ga_copy_dir_t dir, size_t bytes, uint64_t ns)
{
    ga_profile_copy_at(dir, bytes, ns, 0, -1);
}

/* The pool's peak reservation so far (under lock); NULL when the table is full. */
static pool_peak_t *pool_peak(CUmemoryPool pool)
{
    for (unsigned i = 0; i < ga_prof->apool.npools; i++)
        if (ga_prof->apool.pools[i].pool == pool)
            return &ga_prof->apool.pools[i];
    if (ga_prof->apool.npools == MAX_POOLS)
        return NULL;
    pool_peak_t *p = &ga_prof->apool.pools[ga_prof->apool.npools++];
    *p = (pool_peak_t){pool, 0};
    return p;
}

void ga_profile_async_alloc(CUmemoryPool pool, uint64_t before, uint64_t after, uint64_t ns)
{
    if (!ga_profiling)
        return;
    bool in = in_window();
    pthread_mutex_lock(&ga_prof_lock);
    pool_peak_t *p = pool_peak(pool);
    if (in)
        ga_prof->apool.n++, ga_prof->apool.ns += ns;
    /* It mapped memory (the reservation grew) while below a peak the pool had
     * reached: memory it held before, released at a synchronization. */
    if (in && p && after > before && before < p->peak)
        ga_prof->apool.regrown++, ga_prof->apool.regrown_ns += ns;
    else if (in && after <= before)
        ga_prof->apool.reserved++, ga_prof->apool.reserved_ns += ns;
    if (p && after > p->peak)
        p->peak = after;
    pthread_mutex_unlock(&ga_prof_lock);
}

/* Linear probing with backward-shift deletion: no tombstones, so a program
 * that allocates and frees forever never fills the table. */
static live_t *live_slot(CUdeviceptr p)
{
    unsigned mask = MAX_LIVE - 1, i = hash_ptr((const void *)(uintptr_t)p, mask);
    while (ga_prof->live[i].p && ga_prof->live[i].p != p)
        i = (i + 1) & mask;
    return &ga_prof->live[i];
}

static void live_add(CUdeviceptr p, uint64_t bytes)
{
    if (ga_prof->nlive >= MAX_LIVE / 2) {
        ga_prof->mem.untracked++;
        return;
    }
    live_t *l = live_slot(p);
    if (!l->p)
        ga_prof->nlive++;
    l->p = p;
    l->bytes = bytes;
}

static uint64_t live_remove(CUdeviceptr p)
{
    unsigned mask = MAX_LIVE - 1;
    live_t *l = live_slot(p);
    if (!l->p)
        return 0;
    uint64_t bytes = l->bytes;
    unsigned i = (unsigned)(l - ga_prof->live), j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!ga_prof->live[j].p)
            break;
        unsigned home = hash_ptr((const void *)(uintptr_t)ga_prof->live[j].p, mask);
        /* move j back into the hole at i unless its home lies in (i, j] */
        if (i <= j ? (home <= i || home > j) : (home <= i && home > j)) {
            ga_prof->live[i] = ga_prof->live[j];
            i = j;
        }
    }
    ga_prof->live[i].p = 0;
    ga_prof->nlive--;
    return bytes;
}

static freed_t *freed_slot(uint64_t size)
{
    return &ga_prof->freed[hash_ptr((const void *)(uintptr_t)size, FREED_SLOTS - 1)];
}

/* The live bytes, their peak and the sizes freed are kept whatever the
 * window: a size freed before a window and asked for inside it is churn
 * inside it (a block cache would serve it there). */
void ga_profile_alloc(CUdeviceptr p, size_t bytes, uint64_t ns, CUresult r)
{
    if (!ga_profiling)
        return;
    bool in = in_window();
    pthread_mutex_lock(&ga_prof_lock);
    if (r != CUDA_SUCCESS) {
        if (in)
            ga_prof->mem.failed++, ga_prof->mem.failed_ns += ns;
    } else {
        if (in)
            ga_prof->mem.count++, ga_prof->mem.bytes += bytes, ga_prof->mem.ns += ns;
        ga_prof->mem.live += bytes;
        if (ga_prof->mem.live > ga_prof->mem.peak)
            ga_prof->mem.peak = ga_prof->mem.live;
        freed_t *f = freed_slot(bytes);
        if (f->size == bytes && f->n) { /* freed earlier, asked for again */
            f->n--;
            if (in)
                ga_prof->mem.churn++, ga_prof->mem.churn_ns += ns;
        }
        live_add(p, bytes);
    }
    pthread_mutex_unlock(&ga_prof_lock);
}

void ga_profile_free(CUdeviceptr p, size_t bytes, uint64_t ns)
{
    if (!ga_profiling)
        return;
    bool in = in_window();
    pthread_mutex_lock(&ga_prof_lock);
    uint64_t known = live_remove(p);
    if (!bytes)
        bytes = known;
    if (in) {
        ga_prof->mem.frees++, ga_prof->mem.free_ns += ns, ga_prof->mem.free_bytes += bytes;
        ga_prof->mem.frees_unknown += !bytes;
    }
    ga_prof->mem.live = ga_prof->mem.live > bytes ? ga_prof->mem.live - bytes : 0;
    if (bytes) {
        freed_t *f = freed_slot(bytes);
        if (f->size != bytes) { /* evict: churn is an estimate over recent sizes */
            f->size = bytes;
            f->n = 0;
        }
        f->n++;
    }
    pthread_mutex_unlock(&ga_prof_lock);
}

void ga_profile_counter(const char *feature, const char *name, uint64_t delta)
{
    if (!ga_profiling)
        return;
    pthread_mutex_lock(&ga_prof_lock);
    unsigned i = 0;
    const counter_t *c = ga_prof->counters;
    while (i < ga_prof->ncounters && (strcmp(c[i].feature, feature) || strcmp(c[i].name, name)))
        i++;
    if (i == ga_prof->ncounters && i < MAX_COUNTERS)
        ga_prof->counters[ga_prof->ncounters++] = (counter_t){feature, name, 0};
    if (i < MAX_COUNTERS)
        ga_prof->counters[i].value += delta;
    pthread_mutex_unlock(&ga_prof_lock);
}

/* ---- kernels, streams and sequences ---------------------------------------------- */

/* A known kernel's slot, lock-free; MAX_KERNELS (the overflow slot) if f is
 * not in the table. */
static unsigned kernel_find(const void *f)
{
    unsigned mask = MAX_KERNELS - 1, i = hash_ptr(f, mask);
    const void *h;
    while ((h = atomic_load_explicit(&ga_prof->kern[i].handle, memory_order_acquire)) != NULL) {
        if (h == f)
            return i;
        i = (i + 1) & mask;
    }
    return MAX_KERNELS;
}

/* A C++ kernel name as a person reads it ("void scale<float>(float*, int)"),
 * through the C++ ABI's __cxa_demangle when the program has loaded a C++
 * runtime (cudart, PyTorch and CuPy do; this library does not link one).
 * Kept for the process's life, like the registry's names; NULL if the name
 * is not a mangled one or no demangler is loaded. Never from a signal handler:
 * it allocates (the text writer reads what the first launch stored). */
static const char *demangled(const char *name)
{
    typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);
    if (!name || name[0] != '_' || name[1] != 'Z')
        return NULL;
    demangle_fn fn = (demangle_fn)dlsym(RTLD_DEFAULT, "__cxa_demangle");
    int status = -1;
    char *out = fn ? fn(name, NULL, NULL, &status) : NULL;
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/* Lock-free when the kernel is known; the first launch of a kernel asks the
 * registry (which may call the driver) before taking the lock to insert it. */
static unsigned kernel_index(const ga_rt_t *rt, CUfunction f)
{
    unsigned mask = MAX_KERNELS - 1, i = kernel_find(f);
    const void *h;
    if (i < MAX_KERNELS)
        return i;
    if (atomic_load_explicit(&ga_prof->nkern, memory_order_relaxed) >= MAX_KERNELS * 3 / 4)
        return MAX_KERNELS;
    const ga_kernel_t *k = ga_kernel_info(rt, f);
    const char *name = k && k->name ? k->name : "?";
    const char *pretty = demangled(name);
    pthread_mutex_lock(&ga_prof_lock);
    for (i = hash_ptr(f, mask); (h = atomic_load_explicit(&ga_prof->kern[i].handle,
                                                          memory_order_relaxed)) != NULL;
         i = (i + 1) & mask)
        if (h == f)
            break;
    if (!h) {
        ga_prof->kern[i].name = name;
        ga_prof->kern[i].pretty = pretty;
        pretty = NULL;
        atomic_store_explicit(&ga_prof->kern[i].handle, (const void *)f, memory_order_release);
        atomic_fetch_add_explicit(&ga_prof->nkern, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&ga_prof_lock);
    free((void *)pretty); /* another thread stored this kernel first */
    return i;
}

static void add_config(kern_t *k, const unsigned grid[3], const unsigned block[3],
                       unsigned shmem)
{
    for (unsigned i = 0; i < k->ncfg; i++) {
        kcfg_t *c = &k->cfg[i];
        if (!memcmp(c->grid, grid, sizeof c->grid) && !memcmp(c->block, block, sizeof c->block) &&
            c->shmem == shmem) {
            c->launches++;
            return;
        }
    }
    if (k->ncfg == MAX_CONFIGS) {
        k->cfg_dropped++;
        return;
    }
    kcfg_t *c = &k->cfg[k->ncfg++];
    memcpy(c->grid, grid, sizeof c->grid);
    memcpy(c->block, block, sizeof c->block);
    c->shmem = shmem;
    c->launches = 1;
}

bool ga_prof_per_thread(CUstream s, bool per_thread)
{
    return s == CU_STREAM_PER_THREAD || (per_thread && s == NULL);
}

/* The GPU track of stream `s` (under lock), or NULL when the table is full. */
static track_t *track_get(CUstream s, bool per_thread)
{
    uint32_t tid = 0;
    if (ga_prof_per_thread(s, per_thread)) {
        s = CU_STREAM_PER_THREAD;
        tid = ga_prof_thread_id();
    } else if (s == CU_STREAM_LEGACY) {
        s = NULL;
    }
    unsigned mask = MAX_STREAMS - 1, i = (hash_ptr(s, mask) + tid) & mask;
    for (unsigned n = 0; n < MAX_STREAMS; n++, i = (i + 1) & mask) {
        track_t *g = &ga_prof->track[i];
        if (g->used && g->s == s && g->tid == tid)
            return g;
        if (!g->used) {
            if (ga_prof->ntrack_used >= MAX_STREAMS * 3 / 4)
                break;
            *g = (track_t){.used = true, .s = s, .tid = tid};
            ga_prof->track_used[ga_prof->ntrack_used++] = (uint16_t)i;
            return g;
        }
    }
    ga_prof->track_dropped++;
    return NULL;
}

/* A segment ended (its nodes as the sequence detector hands them over): one
 * more sighting of its sequence, keyed by the nodes' hash, named by its first
 * kernels. Every node's kernel was recorded at its launch, before the
 * detector saw it. Only segments that end inside the window count: a
 * sequence seen only outside it is not in the table. */
void ga_prof_sequence(const ga_seq_node_t *nodes, unsigned n, CUstream s)
{
    (void)s;
    if (!ga_profiling || !n || !in_window())
        return;
    uint32_t first[SEQ_NAMES] = {0};
    for (unsigned i = 0; i < n && i < SEQ_NAMES; i++)
        first[i] = kernel_find(nodes[i].f);
    uint64_t h = n > 1 ? ga_seq_hash(nodes, n) | 1 : 0; /* never 0: 0 marks an empty slot */
    pthread_mutex_lock(&ga_prof_lock);
    ga_prof->segments++;
    if (n == 1) {
        ga_prof->singles++;
    } else {
        unsigned mask = MAX_SEQS - 1, i = (unsigned)(h >> 17) & mask;
        while (ga_prof->seq[i].hash && ga_prof->seq[i].hash != h)
            i = (i + 1) & mask;
        seq_t *q = &ga_prof->seq[i];
        if (q->hash) {
            q->repeats++;
        } else if (ga_prof->nseq < MAX_SEQS * 3 / 4) {
            q->len = n;
            q->repeats = 1;
            memcpy(q->first, first, sizeof q->first);
            q->hash = h;
            ga_prof->nseq++;
        } else {
            ga_prof->seq_dropped++;
        }
    }
    pthread_mutex_unlock(&ga_prof_lock);
}

/* The launch is counted under the lock; its end event (ktime.c) is recorded
 * after, outside it. Outside the window the kernel is still recorded (its
 * name) and the launch is still device work a later read waits for. */
void ga_profile_launch(const ga_rt_t *rt, CUfunction f, const unsigned grid[3],
                       const unsigned block[3], unsigned shmem, CUstream s, bool per_thread)
{
    if (!ga_profiling)
        return;
    bool in = in_window();
    unsigned k = kernel_index(rt, f);
    pthread_mutex_lock(&ga_prof_lock);
    ga_prof->follow.work++;
    kern_t *kr = &ga_prof->kern[k];
    if (in) {
        ga_prof->launches++;
        kr->launches++;
        if (k < MAX_KERNELS)
            add_config(kr, grid, block, shmem);
    }
    track_t *g = ga_prof->ktiming ? track_get(s, per_thread) : NULL;
    pthread_mutex_unlock(&ga_prof_lock);
    if (ga_prof->ktiming)
        ga_prof_kernel_end(k, g, s, per_thread, in);
}
