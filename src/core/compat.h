/* compat.h - the driver entry points that the library itself calls or must
 * see, declared here as well as in cuda.h, so that it builds against CUDA
 * headers older than the release that introduced them (12.0 on).
 *
 * Included after cuda.h in its exact-ELF-name mode. Where cuda.h declares a
 * function too, the two declarations must agree (the compiler checks), so
 * nothing here can drift from NVIDIA's ABI unseen; where it does not (older
 * headers), this is the declaration tools/gen-entries.py reads, and the entry
 * table has the function all the same. Only functions whose parameter types
 * every 12.x cuda.h defines belong here. Whether a driver has one is still
 * found at run time (real.h): on an older driver it stays missing. Likewise
 * the error codes the library names that some 12.x headers lack.
 * Must never: define anything but those codes, or declare a function cuda.h
 * never had. */
#ifndef GA_COMPAT_H
#define GA_COMPAT_H

#include <cuda.h>

/* CUDA 12.3: kernel names (profile, tune, tuner, kernels). */
CUresult cuFuncGetName(const char **name, CUfunction hfunc);
CUresult cuKernelGetName(const char **name, CUkernel hfunc);

/* CUDA 12.4: parameter layouts (graphs, kernels, tuner). */
CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset,
                            size_t *paramSize);
CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t *paramOffset,
                              size_t *paramSize);

/* CUDA 12.5: which library a kernel came from (dropped at unload). */
CUresult cuKernelGetLibrary(CUlibrary *pLib, CUkernel kernel);

/* CUDA 12.8: the event timer's second ABI (runtime.h: ga_real_elapsed). */
CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd);

/* CUDA 13.0: a context-wide wait on a context named by argument (hooked). */
CUresult cuCtxSynchronize_v2(CUcontext ctx);

/* Sticky errors (core/fault.h) that the 12.6 headers do not name yet; a driver
 * returns the same numbers whatever headers the library was built with. */
#define GA_ERROR_CONTAINED ((CUresult)226)
#define GA_ERROR_TENSOR_MEMORY_LEAK ((CUresult)721)
#if CUDA_VERSION >= 13000
_Static_assert(GA_ERROR_CONTAINED == CUDA_ERROR_CONTAINED &&
                   GA_ERROR_TENSOR_MEMORY_LEAK == CUDA_ERROR_TENSOR_MEMORY_LEAK,
               "error codes differ from cuda.h's");
#endif

#endif
