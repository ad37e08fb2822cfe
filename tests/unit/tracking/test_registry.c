/* test_registry.c - kernel names and parameter layouts for CUfunction and
 * CUkernel handles over a stub driver, cached, and forgotten on unload and
 * (module kernels) when a context goes. */
#include <string.h>

#include "check.h"
#include "tracking/registry.h"
#include "stub_driver.h"

static int mod_a, lib_b, func_x, kern_y, calls;

static CUresult func_get_name(const char **name, CUfunction f)
{
    calls++;
    if (f != (CUfunction)&func_x)
        return CUDA_ERROR_INVALID_HANDLE; /* what the driver says of a CUkernel */
    *name = "_Z6kernelPjj";
    return CUDA_SUCCESS;
}

static CUresult kernel_get_name(const char **name, CUkernel k)
{
    if (k != (CUkernel)&kern_y)
        return CUDA_ERROR_INVALID_HANDLE;
    *name = "_Z4lib_kPfS_i";
    return CUDA_SUCCESS;
}

static CUresult func_param(CUfunction f, size_t i, size_t *off, size_t *size)
{
    if (f != (CUfunction)&func_x || i >= 2)
        return CUDA_ERROR_INVALID_VALUE;
    *off = i * 8;
    *size = i ? 4 : 8;
    return CUDA_SUCCESS;
}

static CUresult kernel_param(CUkernel k, size_t i, size_t *off, size_t *size)
{
    static const size_t offs[] = {0, 8, 16}, sizes[] = {8, 8, 4};
    if (k != (CUkernel)&kern_y || i >= 3)
        return CUDA_ERROR_INVALID_VALUE;
    *off = offs[i];
    *size = sizes[i];
    return CUDA_SUCCESS;
}

static CUresult func_module(CUmodule *m, CUfunction f)
{
    (void)f;
    *m = (CUmodule)&mod_a;
    return CUDA_SUCCESS;
}

static CUresult kernel_library(CUlibrary *l, CUkernel k)
{
    (void)k;
    *l = (CUlibrary)&lib_b;
    return CUDA_SUCCESS;
}

int main(void)
{
    static ga_rt_t rt;
    stub_runtime(&rt);
    rt.drv.fn[GA_ID_cuFuncGetName] = (void *)func_get_name;
    rt.drv.fn[GA_ID_cuKernelGetName] = (void *)kernel_get_name;
    rt.drv.fn[GA_ID_cuFuncGetParamInfo] = (void *)func_param;
    rt.drv.fn[GA_ID_cuKernelGetParamInfo] = (void *)kernel_param;
    rt.drv.fn[GA_ID_cuFuncGetModule] = (void *)func_module;
    rt.drv.fn[GA_ID_cuKernelGetLibrary] = (void *)kernel_library;

    const ga_kernel_t *x = ga_kernel_info(&rt, (CUfunction)&func_x);
    CHECK(x && !strcmp(x->name, "_Z6kernelPjj") && !x->is_library);
    CHECK(x->params_known && x->nparams == 2 && x->param_bytes == 12);
    CHECK(x->offset[1] == 8 && x->size[1] == 4);
    CHECK(x->owner == &mod_a);
    int before = calls;
    CHECK(ga_kernel_info(&rt, (CUfunction)&func_x) == x && calls == before); /* cached */

    const ga_kernel_t *y = ga_kernel_info(&rt, (CUfunction)&kern_y);
    CHECK(y && y->is_library && !strcmp(y->name, "_Z4lib_kPfS_i"));
    CHECK(y->nparams == 3 && y->param_bytes == 20 && y->owner == &lib_b);

    int junk;
    const ga_kernel_t *z = ga_kernel_info(&rt, (CUfunction)&junk);
    CHECK(z && !strcmp(z->name, "?") && z->nparams == 0);
    CHECK(ga_registry_count() == 3);

    ga_registry_forget_owner(&mod_a);
    CHECK(ga_registry_count() == 2);
    CHECK(!strcmp(x->name, "_Z6kernelPjj")); /* a retired record stays readable */
    const ga_kernel_t *x2 = ga_kernel_info(&rt, (CUfunction)&func_x);
    CHECK(x2 && x2 != x && calls > before); /* resolved afresh */
    ga_registry_forget_owner(&lib_b);
    CHECK(ga_registry_count() == 2);

    /* A context destroyed: its modules' kernels go (their handles may come back
     * as another module's), a library's stay. */
    const ga_kernel_t *y2 = ga_kernel_info(&rt, (CUfunction)&kern_y);
    CHECK(y2 && y2 != y && ga_registry_count() == 3);
    ga_registry_forget_modules();
    CHECK(ga_registry_count() == 1);
    CHECK(ga_kernel_info(&rt, (CUfunction)&kern_y) == y2);
    CHECK(ga_kernel_info(&rt, (CUfunction)&func_x) != x2);
    return check_done("test_registry");
}
