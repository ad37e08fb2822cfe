/* admit.h - which way a pageable copy goes, staged or the driver's own, by
 * what each way has measured in this process (admit.c). */
#ifndef GA_STAGING_ADMIT_H
#define GA_STAGING_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { GA_WAY_DRIVER, GA_WAY_STAGED } ga_way_t;

/* The way for the next copy of n bytes (dir: 0 host to device, 1 device to
 * host; sync: a synchronous entry point). */
ga_way_t ga_admit_choose(unsigned dir, bool sync, size_t n);

/* A copy of n bytes that went `way` and succeeded took ns (not counted when
 * the last copy of its kind and size went the other way). */
void ga_admit_record(unsigned dir, bool sync, size_t n, ga_way_t way, uint64_t ns);

/* Forget every measurement (a forked child; tests). */
void ga_admit_reset(void);

#endif
