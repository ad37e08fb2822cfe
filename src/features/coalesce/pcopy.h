/* pcopy.h - coalesce's large host copies (a column served from a mirror),
 * split over a few helper threads.
 *
 * One thread's memcpy of a 256 KiB column from a kept copy took 12 us on an
 * H100 host, two threads 6 us, four 4 us (bench/probes/colprobe.c); a 4 MiB one
 * 359 us (no faster than the driver's own copy), 110 us on four threads. */
#ifndef GA_COALESCE_PCOPY_H
#define GA_COALESCE_PCOPY_H

#include <stddef.h>

enum { GA_PCOPY_MAX_THREADS = 8 }; /* the caller and seven helpers */

/* memcpy(dst, src, n), shared with the helpers when n is large and helpers
 * can be had; the caller copies whatever no helper took, so it never waits
 * for one to wake. Returns when every byte is copied. `threads` (the caller
 * included) sizes the helpers at the first large copy: 0, one for every four
 * processors; later calls keep them. */
void ga_pcopy(void *dst, const void *src, size_t n, unsigned threads);

/* Tests: start n helpers now (at most GA_PCOPY_MAX_THREADS - 1), whatever
 * the processor count; returns how many there are. */
unsigned ga_pcopy_start(unsigned n);

/* In a fork's child: no helper exists there; they are made again on use. */
void ga_pcopy_fork_child(void);

#endif
