/* registry.h - what the library knows about a kernel handle: its mangled name
 * and the offsets and sizes of its parameters.
 *
 * cudart launches pass a CUkernel (library kernel) where cuLaunchKernel expects
 * a CUfunction; modules (CuPy, cudarc, numba) pass a real CUfunction. Both are
 * resolved on first use and cached by handle until their module or library is
 * unloaded. Only ask about handles the driver has already launched successfully:
 * the driver is not required to survive a garbage handle. Lookups take no lock
 * (they are on every launch of the features that read kernels). */
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

/* Per-handle decisions of the features (kernels: the replacement; tune: the
 * rules for the kernel), read without a lock on every launch. A feature takes
 * a slot at init; a decision, once made for a handle, stays until its module
 * or library is unloaded (a reused handle starts with none). */
enum { GA_KERNEL_SLOTS = 4 };
int ga_kernel_slot_new(void); /* -1 when none is left */
void *ga_kernel_decision(CUfunction f, int slot);
/* Record d for f unless a decision is there already; returns the one that
 * stands (d, or the earlier one: the caller then drops its own). */
void *ga_kernel_decide(CUfunction f, int slot, void *d);

/* A module or library is being unloaded: forget its kernels. */
void ga_registry_forget_owner(const void *owner);

/* A context is gone, and the modules loaded into it with it: forget every
 * module kernel (resolved anew at its next launch; a library's kernels stay). */
void ga_registry_forget_modules(void);

/* Number of kernels currently known (tests and profile). */
unsigned ga_registry_count(void);

extern const ga_fork_ops_t ga_registry_fork;

#endif
