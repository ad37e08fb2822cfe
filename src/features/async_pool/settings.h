/* settings.h - the stream-ordered pool's settings: the rows of core/config.h's
 * table that async_pool/ owns (X: a setting; W: a switch, the setting it cannot
 * act without, and why; R: the range of a number; config.h explains the columns).
 * autogen.sh gathers every feature folder's settings.h into
 * src/features/settings.h. */
#ifndef GA_SETTINGS_ASYNC_POOL_H
#define GA_SETTINGS_ASYNC_POOL_H

#define GA_SETTINGS_async_pool(X, W, R)                                    \
    X(GPUACCEL_ASYNC_POOL, FEATURE, async_pool, "1", "",                   \
      "stream-ordered allocations keep the default pool's memory between " \
      "synchronizations")                                                  \
    X(GPUACCEL_ASYNC_POOL_LIMIT, LIMIT, async_pool_limit, "50%",           \
      "GPUACCEL_ASYNC_POOL",                                               \
      "bytes (K/M/G suffix) or percent of device memory the default pool " \
      "keeps between synchronizations")

#endif
