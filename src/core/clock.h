/* clock.h - the library's one clock: monotonic nanoseconds (timed driver
 * calls, the profile's timeline, the graphs watchdog's deadlines). */
#ifndef GA_CLOCK_H
#define GA_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t ga_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
