/* settings.h - coalescing's settings: the rows of core/config.h's table that
 * coalesce/ owns (X: a setting; W: a switch, the setting it cannot act without,
 * and why; R: the range of a number; config.h explains the columns). autogen.sh
 * gathers every feature folder's settings.h into src/features/settings.h. */
#ifndef GA_SETTINGS_COALESCE_H
#define GA_SETTINGS_COALESCE_H

#define GA_SETTINGS_coalesce(X, W, R)                                                      \
    X(GPUACCEL_COALESCE, FEATURE, coalesce, "0", "",                                       \
      "serve small device-to-host reads from one transfer")                                \
    X(GPUACCEL_COALESCE_MAX, SIZE, coalesce_max, "256", "GPUACCEL_COALESCE",               \
      "largest read served from a window, bytes")                                          \
    R(GPUACCEL_COALESCE_MAX, "1", "")                                                      \
    X(GPUACCEL_COALESCE_WINDOW, SIZE, coalesce_window, "64K", "GPUACCEL_COALESCE",         \
      "initial window size, bytes")                                                        \
    R(GPUACCEL_COALESCE_WINDOW, "1", "")                                                   \
    X(GPUACCEL_COALESCE_MIRRORS, BOOL, coalesce_mirrors, "0", "GPUACCEL_COALESCE",         \
      "1 copies a whole allocation to host memory when reads keep missing in it and the"   \
      " copy pays")                                                                        \
    X(GPUACCEL_COALESCE_BUDGET, SIZE, coalesce_budget, "0", "GPUACCEL_COALESCE",           \
      "most host bytes mirrors and large reads' copies hold; 0: a quarter of the host "   \
      "memory available at their first use, at most an eighth of all of it, 64M at least")\
    X(GPUACCEL_COALESCE_GATHER, BOOL, coalesce_gather, "1", "GPUACCEL_COALESCE",           \
      "1 learns a query phase's read pattern and fetches each query's reads with one"      \
      " kernel launch")                                                                   \
    X(GPUACCEL_COALESCE_THREADS, UINT, coalesce_threads, "0", "GPUACCEL_COALESCE",          \
      "threads that copy a large read from host memory, the caller included; 0: one for "  \
      "every four CPUs and the caller, 8 at most")                                         \
    R(GPUACCEL_COALESCE_THREADS, "0", "8")

#endif
