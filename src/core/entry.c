/* entry.c - static facts about every wrapped entry point, from entries.def.
 *
 * entries.def is sorted by name (the generator guarantees it; a unit test
 * checks it), so ids are in strcmp order and lookups by name are a binary
 * search with no index to build. */
#include <string.h>

#include "core/common.h"

const ga_entry_info_t ga_entries[GA_N_ENTRIES] = {
#define GA_ENTRY(name, cls, pt, stream, params, args)                                   \
    {#name, GA_WRITES_##cls, GA_MAPS_##cls, pt, false},
#define GA_HOOKED(name, fam, cls, pt, stream, params, args, hparams)                    \
    {#name, GA_WRITES_##cls, GA_MAPS_##cls, pt, true},
#include "core/entries.def"
#undef GA_ENTRY
#undef GA_HOOKED
};

/* First id whose name is >= key. */
static int lower_bound(const char *key)
{
    int lo = 0, hi = GA_N_ENTRIES;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (strcmp(ga_entries[mid].name, key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int ga_entry_by_name(const char *name)
{
    int i = lower_bound(name);
    return i < GA_N_ENTRIES && !strcmp(ga_entries[i].name, name) ? i : -1;
}

bool ga_name_read_only(const char *base)
{
    size_t n = strlen(base);
    bool seen = false;
    for (int i = lower_bound(base); i < GA_N_ENTRIES; i++) {
        const char *name = ga_entries[i].name;
        if (strncmp(name, base, n) != 0)
            break;
        if (name[n] != '\0' && name[n] != '_')
            continue; /* cuMemcpyAsync is not a variant of cuMemcpy */
        if (ga_entries[i].writes)
            return false;
        seen = true;
    }
    return seen;
}

/* Graphics-interop entry points live in cudaGL.h, cudaEGL.h, cudaVDPAU.h and
 * the Direct3D headers, and the profiler controls in cudaProfiler.h, not
 * cuda.h, so the table does not know them; cudart 13 fetches them all at
 * start-up (seen on an H200: 27 interop names and 3 profiler names). They register and map graphics resources;
 * what a mapped resource holds only changes through cuGraphicsMapResources
 * (in cuda.h: a tracked writer) or the graphics API itself, which no CUDA
 * feature of this library can see either way. */
bool ga_name_outside_cuda_h(const char *name)
{
    /* cuGLCtxCreate, cuEGLStreamConsumerConnect, cuGraphicsResourceGetMappedEglFrame,
     * cuVDPAUGetDevice, cuD3D11GetDevice, cuWGLGetDevice... */
    static const char *const marks[] = {"GL", "Egl", "VDPAU", "D3D"};
    for (size_t i = 0; i < GA_ARRAY_LEN(marks); i++)
        if (strstr(name, marks[i]))
            return true;
    /* cudaProfiler.h: cuProfilerInitialize, cuProfilerStart, cuProfilerStop */
    return !strncmp(name, "cuProfiler", 10);
}
