/* settings.h - the page-locked cache's settings: the rows of core/config.h's table
 * that pinned/ owns (X: a setting; W: a switch, the setting it cannot act without,
 * and why; R: the range of a number; config.h explains the columns). autogen.sh
 * gathers every feature folder's settings.h into src/features/settings.h. */
#ifndef GA_SETTINGS_PINNED_H
#define GA_SETTINGS_PINNED_H

#define GA_SETTINGS_pinned(X, W, R)                                                      \
    X(GPUACCEL_PINNED, FEATURE, pinned, "1", "",                                         \
      "serve cuMemHostAlloc/cuMemFreeHost from a cache")                                 \
    X(GPUACCEL_PINNED_LIMIT, SIZE, pinned_limit, "4G", "GPUACCEL_PINNED",                \
      "most bytes of freed page-locked memory kept for reuse; an eighth of host memory " \
      "at most, whatever is set")

#endif
