/* gpuaccel.h - the small public API of libgpuaccel.
 *
 * Programs never need it: the library works through LD_PRELOAD on unmodified
 * binaries. It is for tools and tests that want to ask a loaded library what
 * it saw. Resolve these with dlsym(RTLD_DEFAULT, ...) to stay optional. */
#ifndef GPUACCEL_H
#define GPUACCEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the loaded library. */
const char *gpuaccel_version(void);

/* The table of the replacement kernels shipped inside this library (see
 * kernels/table.txt), or "" when it was built without them. */
const char *gpuaccel_kernels_table(void);

/* Calls the library intercepted for the driver entry point with this exact
 * ELF name (e.g. "cuLaunchKernel_ptsz"); 0 for unknown names. */
uint64_t gpuaccel_calls(const char *entry_point);

#ifdef __cplusplus
}
#endif

#endif
