/* settings.h - the replacement kernels' settings: the rows of core/config.h's
 * table that kernels/ owns (X: a setting; W: a switch, the setting it cannot act
 * without, and why; R: the range of a number; config.h explains the columns).
 * autogen.sh gathers every feature folder's settings.h into
 * src/features/settings.h. */
#ifndef GA_SETTINGS_KERNELS_H
#define GA_SETTINGS_KERNELS_H

#define GA_SETTINGS_kernels(X, W, R)                                                        \
    X(GPUACCEL_KERNELS, FEATURE, kernels, "1", "", "launch shipped replacement kernels") \
    X(GPUACCEL_KERNELS_EXTRA, STR, kernels_extra, "", "GPUACCEL_KERNELS",                \
      "FATBIN:TABLE of user replacement kernels")                                        \
    X(GPUACCEL_KERNELS_DENY, STR, kernels_deny, "", "GPUACCEL_KERNELS",                  \
      "glob of kernel names never swapped")

#endif
