/* device.h - what the library asks the driver about the current context, its
 * device and a kernel, written once for every feature: the context it runs
 * its own calls in, the device's attributes (compute capability, SM count),
 * and a kernel's attributes (its __launch_bounds__ limit, shared memory). */
#ifndef GA_DEVICE_H
#define GA_DEVICE_H

#include "core/runtime.h"
#include "tracking/registry.h"

/* The current context, or NULL (none, or the driver would not say). */
CUcontext ga_current_ctx(const ga_rt_t *rt);

/* Make `want` current for a stretch of the library's own calls (pushing it
 * only when another is current); false, with nothing changed, if it cannot. */
typedef struct ga_ctx_scope {
    bool pushed;
} ga_ctx_scope_t;
bool ga_ctx_enter(const ga_rt_t *rt, CUcontext want, ga_ctx_scope_t *scope);
void ga_ctx_leave(const ga_rt_t *rt, ga_ctx_scope_t *scope);

/* The current context's device (its ordinal), or -1 when it cannot be had. */
int ga_current_device(const ga_rt_t *rt);

/* An attribute of the current context's device; -1 when it cannot be had. */
int ga_device_attr(const ga_rt_t *rt, CUdevice_attribute a);

/* The current device's compute capability as 10*major+minor (0 if unknown),
 * remembered per thread for its last context. */
int ga_device_cc(const ga_rt_t *rt);

/* An attribute of a kernel (a module CUfunction or a library CUkernel, on the
 * current device); -1 when it cannot be had. */
int ga_kernel_attr(const ga_rt_t *rt, const ga_kernel_t *k, CUfunction_attribute a);

#endif
