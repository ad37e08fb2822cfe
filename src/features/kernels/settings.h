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
      "glob of kernel names never swapped")                                              \
    X(GPUACCEL_KERNELS_VERIFY, UINT, kernels_verify, "0", "GPUACCEL_KERNELS",            \
      "on the first N launches of each replacement whose table row says what it writes " \
      "(writes=), run the original too and compare the bytes; one that differs is "     \
      "dropped, the original's bytes kept")                                              \
    R(GPUACCEL_KERNELS_VERIFY, "0", "1000000")

#endif
