/* settings.h - staging's settings: the rows of core/config.h's table that staging/
 * owns (X: a setting; W: a switch, the setting it cannot act without, and why; R:
 * the range of a number; config.h explains the columns). autogen.sh gathers every
 * feature folder's settings.h into src/features/settings.h. */
#ifndef GA_SETTINGS_STAGING_H
#define GA_SETTINGS_STAGING_H

#define GA_SETTINGS_staging(X, W, R)                                                     \
    X(GPUACCEL_STAGING, FEATURE, staging, "1", "",                                       \
      "copy large pageable host buffers through pinned buffers, with several threads")   \
    X(GPUACCEL_STAGING_MIN, SIZE, staging_min, "64K", "GPUACCEL_STAGING",                 \
      "smallest copy staged, bytes")                                                     \
    R(GPUACCEL_STAGING_MIN, "1", "")                                                     \
    X(GPUACCEL_STAGING_UPLOAD_MIN, SIZE, staging_upload_min, "256K", "GPUACCEL_STAGING",  \
      "smallest upload (host to device) staged while GPUACCEL_STAGING_ADAPT is on, "    \
      "bytes; smaller ones go to the driver")                                            \
    R(GPUACCEL_STAGING_UPLOAD_MIN, "1", "")                                              \
    X(GPUACCEL_STAGING_CHUNK, SIZE, staging_chunk, "8M", "GPUACCEL_STAGING",             \
      "largest piece staged at a time, bytes, rounded up to a multiple of 4K (4 pinned " \
      "buffers of up to it per engine, grown with the pageable bytes copied)")          \
    R(GPUACCEL_STAGING_CHUNK, "64K", "1G")                                               \
    X(GPUACCEL_STAGING_ADAPT, BOOL, staging_adapt, "1", "GPUACCEL_STAGING",               \
      "stage a kind and size of copy only where staged copies ran an eighth faster "   \
      "than the driver's in this process (two of every 16 go the other way, fewer while "  \
      "the choice holds); "  \
      "0: stage every one")                                                              \
    X(GPUACCEL_STAGING_THREADS, UINT, staging_threads, "0", "GPUACCEL_STAGING",          \
      "threads that copy host memory, the caller included; 0: three quarters of the "    \
      "CPUs, 12 at most")                                                                \
    R(GPUACCEL_STAGING_THREADS, "0", "64")

#endif
