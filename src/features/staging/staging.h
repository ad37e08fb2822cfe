/* staging.h - large copies between pageable host memory and the device,
 * staged through pinned buffers (GPUACCEL_STAGING): what tests and reports
 * read of it. The feature itself is its descriptor, ga_feature_staging
 * (features/feature.h). */
#ifndef GA_STAGING_H
#define GA_STAGING_H

#include "core/runtime.h"

typedef struct ga_staging_stats {
    uint64_t htod, dtoh;   /* copies staged */
    uint64_t bytes;        /* their bytes */
    uint64_t declined;     /* large enough, but not pageable host memory, a device range
                            * the driver would refuse, or a stream of another context */
    uint64_t busy;         /* every engine in use (or tied to another context) */
    uint64_t fallbacks;    /* staging failed before the first chunk: the driver's own copy */
    uint64_t early;        /* left to the driver: too little pageable traffic yet to pay
                            * for a ring */
    uint64_t traffic;      /* bytes of the copies staging could serve, staged or not */
    uint64_t grown;        /* rings made again with larger slots */
    uint64_t driver;       /* sent to the driver: its copies of that kind and size ran
                            * faster (GPUACCEL_STAGING_ADAPT), or a probe of them */
} ga_staging_stats_t;
void ga_staging_stats(ga_staging_stats_t *s);

#endif
