/* settings.h - the tuned table's and the tuner's settings: the rows of
 * core/config.h's table that tune/ owns (X: a setting; W: a switch, the setting it
 * cannot act without, and why; R: the range of a number; config.h explains the
 * columns). autogen.sh gathers every feature folder's settings.h into
 * src/features/settings.h. */
#ifndef GA_SETTINGS_TUNE_H
#define GA_SETTINGS_TUNE_H

#define GA_SETTINGS_tune(X, W, R)                                                      \
    X(GPUACCEL_TUNE, FEATURE, tune, "0", "",                                           \
      "rewrite launch configurations from the tuned table")                            \
    X(GPUACCEL_TUNE_TABLE, STR, tune_table, "", "GPUACCEL_TUNE",                       \
      "tuned-configuration table file")                                                \
    X(GPUACCEL_TUNER, STR, tuner, "", "",                                              \
      "tuner mode: verify and time configurations, write FILE")                        \
    X(GPUACCEL_TUNER_KERNEL, STR, tuner_kernel, "*", "GPUACCEL_TUNER",                 \
      "comma-separated globs of kernel names the tuner tries")                         \
    X(GPUACCEL_TUNER_SKIP, STR, tuner_skip, "", "GPUACCEL_TUNER",                     \
      "a table of an earlier tuner run: launches it marks faulted are left alone")      \
    X(GPUACCEL_TUNER_EXHAUSTIVE, BOOL, tuner_exhaustive, "0", "GPUACCEL_TUNER",        \
      "tuner tries every multiple of 32 that divides the threads, not only powers of two") \
    W(GPUACCEL_TUNE, GPUACCEL_TUNE_TABLE,                                              \
      "there is no table, so no launch is rewritten (gpuaccel tune writes one)")

#endif
