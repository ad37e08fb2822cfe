/* memkind.c - the driver's answer to "is this host memory?", cached.
 *
 * Owns: a small per-thread cache of page ranges found to be host memory, each
 * valid while the map epoch it was found in stands: a host range can only
 * become device or managed memory after the program unmaps it and a driver
 * call maps something there, and every such call moves the map epoch (every
 * call that may write memory does, but launches, copies and memsets, which
 * move bytes only: a program that launches a kernel or clears a buffer
 * before each read keeps its answer).
 * Must never: answer yes without the driver having said so in this epoch. */
#include "tracking/memkind.h"

#include "tracking/streams.h"

enum { SEEN = 4, PAGE = 4096 };

static GA_TLS struct {
    uintptr_t lo, hi; /* [lo, hi): whole pages */
    uint64_t epoch;
} seen[SEEN];
static GA_TLS unsigned seen_next;

/* cuPointerGetAttributes answers for any address (plain host memory gets
 * memory type 0), unlike cuPointerGetAttribute, which fails on it. */
bool ga_pointer_kind(const ga_rt_t *rt, uintptr_t a, unsigned *type, bool *managed)
{
    __typeof__(&cuPointerGetAttributes) get =
        GA_REAL(rt, GA_ID_cuPointerGetAttributes, cuPointerGetAttributes);
    CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                   CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned t = CU_MEMORYTYPE_DEVICE, m = 1;
    void *data[] = {&t, &m};
    if (!get || get(2, attrs, data, (CUdeviceptr)a) != CUDA_SUCCESS)
        return false;
    *type = t;
    *managed = m != 0;
    return true;
}

static bool host_byte(const ga_rt_t *rt, uintptr_t a)
{
    unsigned type;
    bool managed;
    if (!ga_pointer_kind(rt, a, &type, &managed))
        return false;
    return !managed && (type == 0 || type == CU_MEMORYTYPE_HOST);
}

/* Memory the driver does not know: cuPointerGetAttributes answers type 0 (and
 * success) for it, unlike cuPointerGetAttribute. */
static bool pageable_byte(const ga_rt_t *rt, uintptr_t a)
{
    unsigned type;
    bool managed;
    return ga_pointer_kind(rt, a, &type, &managed) && type == 0 && !managed;
}

bool ga_pageable_ends(const ga_rt_t *rt, const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p, last = a + n - 1;
    return p && n && last >= a && pageable_byte(rt, a) && pageable_byte(rt, last);
}

bool ga_host_memory(const ga_rt_t *rt, const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p, last = a + n - 1;
    if (!p || !n || last < a)
        return false;
    bool cached = ga_map_epoch_kept(rt);
    uint64_t epoch = cached ? ga_map_epoch_read() : 0;
    for (unsigned i = 0; cached && i < SEEN; i++)
        if (seen[i].epoch == epoch && a >= seen[i].lo && last < seen[i].hi)
            return true;
    if (!host_byte(rt, a) || (last / PAGE != a / PAGE && !host_byte(rt, last)))
        return false;
    if (cached) {
        unsigned i = seen_next++ % SEEN;
        seen[i].lo = a & ~(uintptr_t)(PAGE - 1);
        seen[i].hi = (last | (PAGE - 1)) + 1;
        seen[i].epoch = epoch;
    }
    return true;
}
