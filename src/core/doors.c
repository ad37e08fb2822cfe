/* doors.c - the two doors through which programs obtain driver entry points
 * by name: dlsym/dlvsym (exported, under glibc's symbol versions) and
 * cuGetProcAddress (4 and 5 arguments).
 *
 * Both ask the real loader or driver first, with the caller's own arguments,
 * then map the pointer that came back to the exact ELF variant by identity and
 * hand out that variant's wrapper. A pointer the table does not know is handed
 * out unchanged: never substitute by base name, since one name can stand for
 * several ABIs (_v2, _v3, _ptsz).
 * Must never: change what a non-cu name resolves to, or the caller position
 * that RTLD_NEXT is relative to (the real dlsym is reached by a tail call). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "core/hooks.h"
#include "core/log.h"
#include "core/fault.h"
#include "core/wrappers.h"

#if defined(__has_attribute)
#if __has_attribute(musttail)
#define GA_MUSTTAIL __attribute__((musttail))
#endif
#endif
#ifndef GA_MUSTTAIL
#define GA_MUSTTAIL /* GCC: the optimize attribute below makes it a sibling call */
#endif
/* Even in a -O0 build the exported dlsym must end in a jump, not a call:
 * tests/bats/loader.bats checks RTLD_NEXT. */
#if defined(__GNUC__) && !defined(__clang__)
#define GA_SIBCALL __attribute__((optimize("O2", "omit-frame-pointer")))
#else
#define GA_SIBCALL
#endif

static inline bool is_cu_name(const char *name)
{
    return name && name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z';
}

static bool from_libcuda(const void *p)
{
    Dl_info info;
    return dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "libcuda");
}

/* One of this library's own wrappers? (A driver whose internal references
 * bind through the global scope hands those out: we are first in it.) */
static bool is_ours(const void *p)
{
    Dl_info mine, theirs;
    return dladdr((void *)is_ours, &mine) && dladdr(p, &theirs) &&
           mine.dli_fbase == theirs.dli_fbase;
}

/* A driver pointer for `base` with no entry in this build's table. */
static void *unknown_driver_ptr(void *p, const char *base)
{
    bool interop = ga_name_outside_cuda_h(base);
    ga_debug("entry point %s is not in this build's table%s", base,
             interop ? " (graphics interop)" : "");
    if (!ga_name_read_only(base) && !interop) {
        char why[160];
        snprintf(why, sizeof why, "entry point %s is unknown to this build", base);
        ga_note_untracked(why);
    }
    return p;
}

/* What the program gets for `name` when the real loader returned `p`. */
static void *route_dlsym(const char *name, void *p)
{
    if (!p)
        return NULL;
    int id = ga_entry_by_name(name);
    bool ours = id >= 0 && p == ga_wrappers[id];
    const ga_rt_t *rt = ga_rt();
    if (!rt) /* no libcuda loaded (a probe for CUDA), or initialization under way */
        return ours ? ga_real_slow((ga_id_t)id) : p;
    bool wrap = rt->active && !rt->direct;
    if (ours) /* RTLD_DEFAULT found our export: valid only if the driver has it */
        return rt->drv.fn[id] ? (wrap ? p : rt->drv.fn[id]) : NULL;
    if (!wrap)
        return p;
    int rid = ga_driver_id_of(&rt->drv, p, name);
    if (rid >= 0)
        return ga_wrappers[rid];
    return from_libcuda(p) ? unknown_driver_ptr(p, name) : p;
}

/* The body of both exported dlsym versions. Non-cu names end in a tail call so
 * that glibc sees the program's return address (RTLD_NEXT is relative to it). */
static inline __attribute__((always_inline)) void *dlsym_body(void *handle, const char *name)
{
    ga_dlsym_fn real = ga_real_dlsym_ptr();
    if (GA_UNLIKELY(!real))
        return NULL;
    if (GA_LIKELY(!is_cu_name(name)))
        GA_MUSTTAIL return real(handle, name);
    return route_dlsym(name, real(handle, name));
}

static inline __attribute__((always_inline)) void *dlvsym_body(void *handle, const char *name,
                                                               const char *version)
{
    ga_dlvsym_fn real = ga_real_dlvsym_ptr();
    if (GA_UNLIKELY(!real))
        return NULL;
    if (GA_LIKELY(!is_cu_name(name)))
        GA_MUSTTAIL return real(handle, name, version);
    return route_dlsym(name, real(handle, name, version));
}

/* glibc 2.34 moved dlsym into libc under a new version; binaries built before
 * reference the base version. Export both, like libc does (libgpuaccel.map). */
#if defined(__x86_64__)
#define GA_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define GA_GLIBC_BASE "GLIBC_2.17"
#else
#error "unsupported architecture: add its glibc base symbol version"
#endif

void *ga_dlsym_new(void *handle, const char *name);
void *ga_dlsym_old(void *handle, const char *name);
void *ga_dlvsym_new(void *handle, const char *name, const char *version);
void *ga_dlvsym_old(void *handle, const char *name, const char *version);

GA_EXPORT GA_SIBCALL void *ga_dlsym_new(void *handle, const char *name)
{
    return dlsym_body(handle, name);
}
GA_EXPORT GA_SIBCALL void *ga_dlsym_old(void *handle, const char *name)
{
    return dlsym_body(handle, name);
}
GA_EXPORT GA_SIBCALL void *ga_dlvsym_new(void *handle, const char *name, const char *version)
{
    return dlvsym_body(handle, name, version);
}
GA_EXPORT GA_SIBCALL void *ga_dlvsym_old(void *handle, const char *name, const char *version)
{
    return dlvsym_body(handle, name, version);
}
/* GA_NO_DLSYM_DOOR: for the ThreadSanitizer build only (tools/tsan-stress).
 * TSan resolves its interceptors with dlsym while it starts, before anything
 * it would instrument may run; an exported dlsym would be called then. */
#ifndef GA_NO_DLSYM_DOOR
__asm__(".symver ga_dlsym_new, dlsym@@GLIBC_2.34");
__asm__(".symver ga_dlsym_old, dlsym@" GA_GLIBC_BASE);
__asm__(".symver ga_dlvsym_new, dlvsym@@GLIBC_2.34");
__asm__(".symver ga_dlvsym_old, dlvsym@" GA_GLIBC_BASE);
#endif

/* ---- cuGetProcAddress ------------------------------------------------------- */

static void route_proc(const ga_rt_t *rt, const char *symbol, void **pfn)
{
    if (!pfn || !*pfn || !symbol)
        return;
    if (is_ours(*pfn))
        return;
    int id = ga_driver_id_of(&rt->drv, *pfn, symbol);
    *pfn = id >= 0 ? ga_wrappers[id] : unknown_driver_ptr(*pfn, symbol);
    if (id >= 0)
        ga_debug("cuGetProcAddress(%s) -> %s", symbol, ga_entries[id].name);
}

CUresult ga_hook_getproc4(const ga_rt_t *rt, ga_id_t id, const char *symbol, void **pfn,
                          int cudaVersion, cuuint64_t flags)
{
    __typeof__(&cuGetProcAddress) real = GA_REAL(rt, id, cuGetProcAddress);
    CUresult r = real(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS)
        route_proc(rt, symbol, pfn);
    return r;
}

CUresult ga_hook_getproc5(const ga_rt_t *rt, ga_id_t id, const char *symbol, void **pfn,
                          int cudaVersion, cuuint64_t flags,
                          CUdriverProcAddressQueryResult *symbolStatus)
{
    __typeof__(&cuGetProcAddress_v2) real = GA_REAL(rt, id, cuGetProcAddress_v2);
    CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS)
        route_proc(rt, symbol, pfn);
    return r;
}
