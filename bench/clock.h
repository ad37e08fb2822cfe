/* clock.h - the host clock every benchmark and probe reads: monotonic time in
 * microseconds. Its own header so that driver-only programs (bench_driver.cu,
 * probes/) need not pull in common.h's CUDA runtime. */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <time.h>

static inline double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

#endif
