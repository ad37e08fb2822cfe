/* modules.c - hooks for loading modules and libraries from memory: features
 * see each image the driver accepted, with the handle it returned
 * (code_loaded); PTX text written for a newer CUDA than the driver's is
 * retried. Loads from files (cuModuleLoad, cuLibraryLoadFromFile) are not
 * hooked: the library never sees their code.
 *
 * The JIT refuses PTX whose `.version` is above the ISA the driver knows
 * (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), even when the code uses nothing newer;
 * users then lower the line by hand. When GPUACCEL_PTX_RETRY is on, such a load
 * is tried once more with `.version` set to the highest the driver takes; if
 * the JIT fails again (the code does use something newer), the program gets
 * the driver's first error, as without the library. Images that are not PTX
 * text (cubins, fatbins) are never touched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hooks.h"
#include "core/log.h"
#include "hooks/dispatch.h"

/* The PTX ISA each CUDA release's driver takes (the PTX ISA manual's release
 * table), newest first; a driver newer than the table gets no retry. */
static const struct { int cuda; unsigned major, minor; } isa_of[] = {
    {13010, 9, 1}, {13000, 9, 0}, {12090, 8, 8}, {12080, 8, 7}, {12070, 8, 6}, {12050, 8, 5},
    {12040, 8, 4}, {12030, 8, 3}, {12020, 8, 2}, {12010, 8, 1}, {12000, 8, 0}, {11080, 7, 8},
    {11070, 7, 7}, {11060, 7, 6}, {11050, 7, 5}, {11040, 7, 4}, {11030, 7, 3}, {11020, 7, 2},
    {11010, 7, 1}, {11000, 7, 0},
};

/* The highest PTX ISA the driver takes, as "M.m"; false if unknown. */
static bool driver_isa(const ga_rt_t *rt, char *buf, size_t cap)
{
    int v = 0;
    __typeof__(&cuDriverGetVersion) get = GA_REAL(rt, GA_ID_cuDriverGetVersion, cuDriverGetVersion);
    if (!get || get(&v) != CUDA_SUCCESS || v > isa_of[0].cuda + 9)
        return false;
    for (size_t i = 0; i < sizeof isa_of / sizeof isa_of[0]; i++)
        if (v >= isa_of[i].cuda) {
            snprintf(buf, cap, "%u.%u", isa_of[i].major, isa_of[i].minor);
            return true;
        }
    return false;
}

/* A copy of PTX text `image` with its `.version` set to `isa`, or NULL when the
 * image is not PTX text or already asks for no more than that. Kept for the
 * process's life: a library may be loaded lazily from it. */
static char *lowered(const void *image, const char *isa)
{
    const char *t = image, *v = strstr(t, ".version ");
    if (!v)
        return NULL;
    const char *num = v + strlen(".version "), *end = num + strspn(num, "0123456789.");
    unsigned have_major, have_minor, want_major, want_minor;
    if (sscanf(num, "%u.%u", &have_major, &have_minor) != 2 ||
        sscanf(isa, "%u.%u", &want_major, &want_minor) != 2 ||
        have_major * 100 + have_minor <= want_major * 100 + want_minor)
        return NULL;
    size_t head = (size_t)(num - t), tail = strlen(end);
    char *out = malloc(head + strlen(isa) + tail + 1);
    if (out)
        memcpy(out, t, head), strcpy(out + head, isa), strcpy(out + head + strlen(isa), end);
    return out;
}

/* The retry's common part: NULL if it does not apply (the first answer stands). */
static char *retry_image(const ga_rt_t *rt, CUresult r, const void *image, char *isa, size_t cap)
{
    if (r != CUDA_ERROR_UNSUPPORTED_PTX_VERSION || !rt->cfg.ptx_retry || !image ||
        !driver_isa(rt, isa, cap))
        return NULL;
    return lowered(image, isa);
}

static CUresult retried(CUresult first, CUresult again, char *copy, const char *isa)
{
    if (again != CUDA_SUCCESS) {
        free(copy);
        return first; /* the code needs the newer ISA: the driver's own error */
    }
    ga_info("PTX with a .version above this driver's loaded as .version %s "
            "(GPUACCEL_PTX_RETRY=0 turns this off)", isa);
    return CUDA_SUCCESS; /* the copy stays: the driver may read it later */
}

/* The driver accepted `image` as `owner`: the features see it before the
 * program has the handle. The program's own image, also when its retry with a
 * lowered .version loaded (the code is the same). */
static CUresult loaded(const ga_rt_t *rt, CUresult r, const void *owner, bool library,
                       const void *image)
{
    if (r == CUDA_SUCCESS && owner)
        GA_EACH(code_loaded, rt, owner, library, image);
    return r;
}

CUresult ga_hook_module_load(const ga_rt_t *rt, ga_id_t id, CUmodule *module, const void *image)
{
    __typeof__(&cuModuleLoadData) real = GA_REAL(rt, id, cuModuleLoadData);
    CUresult r = real(module, image);
    char isa[16], *copy = retry_image(rt, r, image, isa, sizeof isa);
    r = copy ? retried(r, real(module, copy), copy, isa) : r;
    return loaded(rt, r, module ? *module : NULL, false, image);
}

CUresult ga_hook_module_load_ex(const ga_rt_t *rt, ga_id_t id, CUmodule *module,
                                const void *image, unsigned int numOptions,
                                CUjit_option *options, void **optionValues)
{
    __typeof__(&cuModuleLoadDataEx) real = GA_REAL(rt, id, cuModuleLoadDataEx);
    CUresult r = real(module, image, numOptions, options, optionValues);
    char isa[16], *copy = retry_image(rt, r, image, isa, sizeof isa);
    r = copy ? retried(r, real(module, copy, numOptions, options, optionValues), copy, isa) : r;
    return loaded(rt, r, module ? *module : NULL, false, image);
}

CUresult ga_hook_module_load_fatbin(const ga_rt_t *rt, ga_id_t id, CUmodule *module,
                                    const void *fatCubin)
{
    CUresult r = GA_REAL(rt, id, cuModuleLoadFatBinary)(module, fatCubin);
    return loaded(rt, r, module ? *module : NULL, false, fatCubin);
}

CUresult ga_hook_library_load(const ga_rt_t *rt, ga_id_t id, CUlibrary *library,
                              const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
                              unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                              void **libraryOptionValues, unsigned int numLibraryOptions)
{
    __typeof__(&cuLibraryLoadData) real = GA_REAL(rt, id, cuLibraryLoadData);
    CUresult r = real(library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                      libraryOptionValues, numLibraryOptions);
    char isa[16], *copy = retry_image(rt, r, code, isa, sizeof isa);
    if (copy)
        r = retried(r, real(library, copy, jitOptions, jitOptionsValues, numJitOptions,
                            libraryOptions, libraryOptionValues, numLibraryOptions),
                    copy, isa);
    return loaded(rt, r, library ? *library : NULL, true, code);
}
