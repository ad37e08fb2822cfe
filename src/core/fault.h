/* fault.h - what the library can no longer rely on. Sticky errors: after one, the driver answers every call with it,
 * and the library stops answering anything itself (pool hits, coalesced
 * reads, held launches) for the rest of the process, so that the driver's
 * error reaches the program. Noted by every wrapper. */
#ifndef GA_FAULT_H
#define GA_FAULT_H

#include "core/common.h"

/* Errors after which the context is unusable and every later call returns them
 * (cuda.h: "the process must be terminated and relaunched", or the context
 * destroyed), and uncorrectable memory errors (taken as such, to be safe). */
static inline bool ga_sticky_error(CUresult r)
{
    switch ((int)r) { /* int: two codes may be numbers only (core/compat.h) */
    case GA_ERROR_CONTAINED: case CUDA_ERROR_ILLEGAL_ADDRESS: case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT: case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION: case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE: case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED: case GA_ERROR_TENSOR_MEMORY_LEAK:
    case CUDA_ERROR_MPS_CLIENT_TERMINATED: case CUDA_ERROR_EXTERNAL_DEVICE:
    case CUDA_ERROR_ECC_UNCORRECTABLE: case CUDA_ERROR_NVLINK_UNCORRECTABLE:
        return true;
    default:
        return false;
    }
}

/* Every wrapper hands a sticky error here. The driver then answers every call
 * with it, so the library stops answering for the driver (pool hits, coalesced
 * reads, held launches) for the rest of the process. ga_fault_code: that
 * error, 0 before. */
void ga_fault_note(CUresult r);
bool ga_faulted(void);
CUresult ga_fault_code(void);

/* Work was (or may be) enqueued where the library cannot see it, for the
 * reason `why` (an unknown entry point handed out by a door, a launch on
 * streams named inside its parameters): from now on every stream is presumed
 * busy. Process-wide, never cleared (but in a fork child). */
void ga_note_untracked(const char *why);
bool ga_untracked(void);
void ga_untracked_reset(void);

#endif
