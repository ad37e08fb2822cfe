/* registry.h - what the library knows about a kernel handle: its mangled name
 * and the offsets and sizes of its parameters.
 *
 * cudart launches pass a CUkernel (library kernel) where cuLaunchKernel expects
 * a CUfunction; modules (CuPy, cudarc, numba) pass a real CUfunction. Both are
 * resolved on first use and cached by handle until their module or library is
 * unloaded. Only ask about handles the driver has already launched successfully:
 * the driver is not required to survive a garbage handle. */
#ifndef GA_REGISTRY_H
#define GA_REGISTRY_H

#include "core/runtime.h"

typedef struct ga_kernel {
    const void *handle;  /* as passed to cuLaunchKernel */
    bool is_library;     /* a CUkernel of a CUlibrary, not a module CUfunction */
    const void *owner;   /* its CUmodule or CUlibrary */
    char *name;          /* mangled name, or "?" when the driver cannot say */
    bool params_known;   /* offsets/sizes below are valid */
    unsigned nparams;
    uint32_t *offset, *size;
    size_t param_bytes;  /* offset + size of the last parameter */
} ga_kernel_t;

/* The record for a launched handle, resolving it on first use. Never NULL for
 * a valid handle; the record stays readable for the life of the process. */
const ga_kernel_t *ga_kernel_info(const ga_rt_t *rt, CUfunction f);

/* The driver accepted a launch of f (from the launch hook): from now on f may
 * be asked about. was_launched tells whether it has been. */
void ga_kernel_note_launched(CUfunction f);
bool ga_kernel_was_launched(CUfunction f);

/* A module or library is being unloaded: forget its kernels. */
void ga_registry_forget_owner(const void *owner);

/* Number of kernels currently known (tests and profile). */
unsigned ga_registry_count(void);

extern const ga_fork_ops_t ga_registry_fork;

#endif
