/* settings.h - the stream cache's settings: the rows of core/config.h's table that
 * streams/ owns (X: a setting; W: a switch, the setting it cannot act without, and
 * why; R: the range of a number; config.h explains the columns). autogen.sh
 * gathers every feature folder's settings.h into src/features/settings.h. */
#ifndef GA_SETTINGS_STREAMS_H
#define GA_SETTINGS_STREAMS_H

#define GA_SETTINGS_streams(X, W, R)               \
    X(GPUACCEL_STREAMS, FEATURE, streams, "1", "", \
      "keep streams the program destroys and hand them to its next cuStreamCreate")

#endif
