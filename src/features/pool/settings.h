/* settings.h - the pool's settings: the rows of core/config.h's table that pool/
 * owns (X: a setting; W: a switch, the setting it cannot act without, and why; R:
 * the range of a number; config.h explains the columns). autogen.sh gathers every
 * feature folder's settings.h into src/features/settings.h. */
#ifndef GA_SETTINGS_POOL_H
#define GA_SETTINGS_POOL_H

#define GA_SETTINGS_pool(X, W, R)                                                             \
    X(GPUACCEL_POOL, FEATURE, pool, "1", "", "serve cuMemAlloc/cuMemFree from a block cache") \
    X(GPUACCEL_POOL_LIMIT, LIMIT, pool_limit, "50%", "GPUACCEL_POOL",                         \
      "bytes (K/M/G suffix) or percent of device memory the cache may hold (each "            \
      "thread's own cache holds up to 1/16 of it more, 4 MiB at most)")                       \
    X(GPUACCEL_POOL_POISON, BOOL, pool_poison, "0", "GPUACCEL_POOL",                          \
      "1 fills reused blocks with 0xA5 (debug)")

#endif
