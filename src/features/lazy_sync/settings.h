/* settings.h - lazy synchronization's settings: the rows of core/config.h's table
 * that lazy_sync/ owns (X: a setting; W: a switch, the setting it cannot act
 * without, and why; R: the range of a number; config.h explains the columns).
 * autogen.sh gathers every feature folder's settings.h into
 * src/features/settings.h. */
#ifndef GA_SETTINGS_LAZY_SYNC_H
#define GA_SETTINGS_LAZY_SYNC_H

#define GA_SETTINGS_lazy_sync(X, W, R)                                               \
    X(GPUACCEL_LAZY_SYNC, FEATURE, lazy_sync, "0", "",                               \
      "synchronizations nothing on the host could observe return at once; the wait " \
      "comes at the next call that observes the device")

#endif
