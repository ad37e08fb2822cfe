/* device.c - the context, device and kernel queries every feature shares
 * (device.h). Stateless but for a per-thread memo of the last context's
 * compute capability. */
#include "tracking/device.h"

CUcontext ga_current_ctx(const ga_rt_t *rt)
{
    CUcontext ctx = NULL;
    __typeof__(&cuCtxGetCurrent) get = GA_REAL(rt, GA_ID_cuCtxGetCurrent, cuCtxGetCurrent);
    if (!get || get(&ctx) != CUDA_SUCCESS)
        return NULL;
    return ctx;
}

bool ga_ctx_enter(const ga_rt_t *rt, CUcontext want, ga_ctx_scope_t *scope)
{
    scope->pushed = false;
    if (ga_current_ctx(rt) == want)
        return true;
    __typeof__(&cuCtxPushCurrent_v2) push =
        GA_REAL(rt, GA_ID_cuCtxPushCurrent_v2, cuCtxPushCurrent_v2);
    __typeof__(&cuCtxPopCurrent_v2) pop = GA_REAL(rt, GA_ID_cuCtxPopCurrent_v2, cuCtxPopCurrent_v2);
    scope->pushed = want && push && pop && push(want) == CUDA_SUCCESS;
    return scope->pushed;
}

void ga_ctx_leave(const ga_rt_t *rt, ga_ctx_scope_t *scope)
{
    __typeof__(&cuCtxPopCurrent_v2) pop = GA_REAL(rt, GA_ID_cuCtxPopCurrent_v2, cuCtxPopCurrent_v2);
    CUcontext dummy;
    if (scope->pushed && pop)
        pop(&dummy);
    scope->pushed = false;
}

int ga_current_device(const ga_rt_t *rt)
{
    __typeof__(&cuCtxGetDevice) get = GA_REAL(rt, GA_ID_cuCtxGetDevice, cuCtxGetDevice);
    CUdevice d;
    return get && get(&d) == CUDA_SUCCESS ? (int)d : -1;
}

int ga_device_attr(const ga_rt_t *rt, CUdevice_attribute a)
{
    __typeof__(&cuDeviceGetAttribute) attr =
        GA_REAL(rt, GA_ID_cuDeviceGetAttribute, cuDeviceGetAttribute);
    int d = ga_current_device(rt), v = -1;
    if (d < 0 || !attr || attr(&v, a, (CUdevice)d) != CUDA_SUCCESS)
        return -1;
    return v;
}

int ga_device_cc(const ga_rt_t *rt)
{
    static GA_TLS CUcontext last_ctx;
    static GA_TLS int last_cc;
    CUcontext ctx = ga_current_ctx(rt);
    if (ctx != last_ctx || !last_cc) {
        int major = ga_device_attr(rt, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        int minor = ga_device_attr(rt, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        last_cc = major > 0 && minor >= 0 ? major * 10 + minor : 0;
        last_ctx = ctx;
    }
    return last_cc;
}

int ga_kernel_attr(const ga_rt_t *rt, const ga_kernel_t *k, CUfunction_attribute a)
{
    int v = -1;
    if (k->is_library) {
        __typeof__(&cuKernelGetAttribute) get =
            GA_REAL(rt, GA_ID_cuKernelGetAttribute, cuKernelGetAttribute);
        int d = ga_current_device(rt);
        if (!get || d < 0 || get(&v, a, (CUkernel)k->handle, (CUdevice)d) != CUDA_SUCCESS)
            return -1;
        return v;
    }
    __typeof__(&cuFuncGetAttribute) get = GA_REAL(rt, GA_ID_cuFuncGetAttribute, cuFuncGetAttribute);
    return get && get(&v, a, (CUfunction)k->handle) == CUDA_SUCCESS ? v : -1;
}
