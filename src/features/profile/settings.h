/* settings.h - the profiler's settings: the rows of core/config.h's table that
 * profile/ owns (X: a setting; W: a switch, the setting it cannot act without, and
 * why; R: the range of a number; config.h explains the columns). autogen.sh
 * gathers every feature folder's settings.h into src/features/settings.h. */
#ifndef GA_SETTINGS_PROFILE_H
#define GA_SETTINGS_PROFILE_H

#define GA_SETTINGS_profile(X, W, R)                                               \
    X(GPUACCEL_PROFILE, STR, profile, "", "",                                      \
      "write a profile to FILE.txt, FILE.json, FILE.trace.json (other processes: " \
      "FILE.<pid>.*, or FILE.rank<R>.<pid>.* with a launcher's rank)")             \
    X(GPUACCEL_PROFILE_KERNELS, BOOL, profile_kernels, "0", "GPUACCEL_PROFILE",    \
      "1 times every kernel with events")                                          \
    X(GPUACCEL_PROFILE_WINDOW, STR, profile_window, "", "GPUACCEL_PROFILE",        \
      "a window file (gpuaccel profile --phase makes it): copies, allocations, "   \
      "kernels and the estimates count only inside the program's windows; "        \
      "unset: the whole process")

#endif
