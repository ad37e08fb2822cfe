/* crew.h - a few helper threads that split one large memcpy with the thread
 * that asks for it (the staging feature's copies between pageable memory and
 * its pinned buffers).
 *
 * Why threads of our own: one core copies 8-12 GB/s; a PCIe 5 DMA moves 52-55
 * GB/s. Nothing in the platform splits a memcpy over cores (glibc has no
 * parallel memcpy), and OpenMP or another runtime would add its thread pool,
 * its environment variables and its fork rules to a host program that never
 * asked for them (and may use a different OpenMP itself). A crew is a handful
 * of threads that do nothing but memcpy between two buffers they are handed.
 *
 * Rules: a helper never calls the driver and never calls into the program (it
 * runs only memcpy, with every signal blocked, so no handler of the program
 * runs on it); one thread at a time posts work to a crew (its owner holds the
 * lock that guards the crew, staging.c's engine lock); helpers spin a little
 * after a job, for the next chunk of the same copy, then sleep. */
#ifndef GA_STAGING_CREW_H
#define GA_STAGING_CREW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum { GA_CREW_MAX = 63 }; /* helpers a crew may have */

typedef struct ga_crew {
    /* Bumped to wake sleeping helpers: the futex word they sleep on. */
    _Atomic uint32_t epoch;
    /* The job: (generation << 32) | next piece to claim. A helper claims a
     * piece with a compare-and-swap, so one still looking at a finished job
     * can never take a piece of the next one. */
    _Atomic uint64_t claim;
    /* (generation << 32) | pieces of that job: a piece count is trusted only
     * beside a claim word of the same generation. */
    _Atomic uint64_t limit;
    _Atomic unsigned done; /* pieces of the current job finished */
    /* The current job, written by the owner before it bumps the generation
     * (atomics only so that a late reader is not a data race: a reader acts
     * on them only after its claim succeeded, which proves them current). */
    _Atomic uintptr_t dst, src;
    _Atomic size_t len, piece;
    _Atomic int how;          /* a ga_crew_store_t */
    _Atomic uint64_t alarm;   /* bumped to wake sleeping helpers early */
    _Atomic unsigned sleepers;
    _Atomic unsigned long wakes; /* times a helper left the sleeping side (tests read it) */
    unsigned started;         /* helpers running; owner's only */
} ga_crew_t;

/* A crew with no helpers yet (also in a fork child: its helpers are gone). */
void ga_crew_init(ga_crew_t *c);

/* Start helpers until there are `helpers` (lazily, at first use; fewer if
 * threads cannot be created). Returns how many run. Owner only. */
unsigned ga_crew_start(ga_crew_t *c, unsigned helpers);

/* Work is coming: sleeping helpers get up and spin, so that the first job
 * does not wait for them to wake. Owner only. */
void ga_crew_wake(ga_crew_t *c);

/* How a copy's bytes are stored: through the caches (the program reads them
 * next: a download's copy out), or around them (a DMA reads them next: an
 * upload's copy into page-locked memory, which then has no dirty line for
 * the device's reads to snoop, and whose stores read no line first). */
typedef enum { GA_CREW_CACHED, GA_CREW_AROUND } ga_crew_store_t;

/* memcpy(dst, src, n), split between the helpers and the calling thread;
 * returns when every byte is copied (stored `how`, and visible to a device
 * the caller then starts). Owner only. */
void ga_crew_copy(ga_crew_t *c, void *dst, const void *src, size_t n, ga_crew_store_t how);

#endif
