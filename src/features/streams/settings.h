/* settings.h - the stream cache's settings: the rows of core/config.h's table that
 * streams/ owns (X: a setting; W: a switch, the setting it cannot act without, and
 * why; config.h explains the columns). autogen.sh gathers every feature folder's
 * settings.h into src/features/settings.h. */
#ifndef GA_SETTINGS_STREAMS_H
#define GA_SETTINGS_STREAMS_H

#define GA_SETTINGS_streams(X, W)                                                    \
    X(GPUACCEL_STREAMS, FEATURE, streams, "1", "",                                   \
      "keep streams the program destroys and hand them to its next cuStreamCreate")

#endif
