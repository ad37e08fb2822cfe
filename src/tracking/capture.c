/* capture.c - which streams capture, and the gate for the library's own
 * capture-unsafe calls (capture.h says the rule).
 *
 * Owns: the list of open captures (under `lock`, touched only when a capture
 * begins or ends: rare), the count of captures opening or open and the count
 * of own-call stretches in flight (atomics, read on hot paths).
 * Must never: call the driver holding `lock`; let a stretch of own calls and
 * a capture overlap (both counts are sequentially consistent: a stretch that
 * enters sees the capture's count, or the capture sees the stretch's). */
#define _GNU_SOURCE
#include "tracking/capture.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

_Atomic int ga_captures;
static _Atomic int own_calls;

typedef struct open_capture {
    CUstream handle;  /* a created stream, or CU_STREAM_PER_THREAD */
    uintptr_t thread; /* the owner of a per-thread stream, else 0 */
    struct open_capture *next;
} open_capture_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static open_capture_t *open_list; /* guarded by lock */

bool ga_own_calls_enter(void)
{
    if (atomic_load(&ga_captures) > 0) /* the common refusal costs no write */
        return false;
    atomic_fetch_add(&own_calls, 1);
    if (atomic_load(&ga_captures) == 0)
        return true;
    atomic_fetch_sub(&own_calls, 1);
    return false;
}

void ga_own_calls_leave(void)
{
    atomic_fetch_sub(&own_calls, 1);
}

/* A stretch is a few driver calls that never wait for another thread of the
 * library, so this wait is short; stretches that try to enter meanwhile are
 * refused, so it ends. */
void ga_capture_opening(void)
{
    atomic_fetch_add(&ga_captures, 1);
    while (atomic_load(&own_calls) > 0)
        sched_yield();
}

/* The stream as the driver knows it: the default stream named by NULL is the
 * per-thread one through a _ptsz entry point, else the legacy one. */
static void resolve(CUstream h, bool pt, CUstream *handle, uintptr_t *thread)
{
    if (h == NULL)
        h = pt ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    *handle = h;
    *thread = h == CU_STREAM_PER_THREAD ? (uintptr_t)pthread_self() : 0;
}

void ga_capture_opened(const ga_rt_t *rt, CUstream h, bool pt, CUresult r)
{
    (void)rt;
    open_capture_t *c = r == CUDA_SUCCESS ? calloc(1, sizeof *c) : NULL;
    if (r != CUDA_SUCCESS || !c) {
        /* Not begun; or begun but unrecordable, and then the count stays up
         * for good: the library stands aside for the rest of the process
         * rather than guess when the capture ends. */
        if (r != CUDA_SUCCESS)
            atomic_fetch_sub(&ga_captures, 1);
        return;
    }
    resolve(h, pt, &c->handle, &c->thread);
    pthread_mutex_lock(&lock);
    c->next = open_list;
    open_list = c;
    pthread_mutex_unlock(&lock);
}

/* Remove the record of (handle, thread); true if there was one. */
static bool forget(CUstream handle, uintptr_t thread)
{
    open_capture_t *gone = NULL;
    pthread_mutex_lock(&lock);
    for (open_capture_t **pp = &open_list; *pp; pp = &(*pp)->next)
        if ((*pp)->handle == handle && (*pp)->thread == thread) {
            gone = *pp;
            *pp = gone->next;
            break;
        }
    pthread_mutex_unlock(&lock);
    if (gone) {
        free(gone);
        atomic_fetch_sub(&ga_captures, 1);
    }
    return gone != NULL;
}

static bool ask_capturing(const ga_rt_t *rt, CUstream handle, CUstreamCaptureStatus *st)
{
    __typeof__(&cuStreamIsCapturing) q = GA_REAL(rt, GA_ID_cuStreamIsCapturing, cuStreamIsCapturing);
    *st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return q && q(handle, st) == CUDA_SUCCESS;
}

void ga_capture_ended(const ga_rt_t *rt, CUstream h, bool pt)
{
    CUstream handle;
    uintptr_t thread;
    resolve(h, pt, &handle, &thread);
    CUstreamCaptureStatus st;
    /* An unanswerable stream (destroyed, or another thread's) counts as no
     * longer capturing only if we hold no record of it anyway. */
    if (ask_capturing(rt, handle, &st) && st == CU_STREAM_CAPTURE_STATUS_NONE)
        forget(handle, thread);
}

void ga_capture_stream_gone(CUstream h)
{
    if (ga_capture_active())
        forget(h, 0);
}

bool ga_stream_capturing(const ga_rt_t *rt, CUstream h, bool pt)
{
    if (!ga_capture_active())
        return false;
    CUstream handle;
    uintptr_t thread;
    resolve(h, pt, &handle, &thread);
    CUstreamCaptureStatus st;
    return !ask_capturing(rt, handle, &st) || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static void fork_child(void)
{
    open_list = NULL; /* leaked on purpose: the child has no CUDA state */
    atomic_store(&ga_captures, 0);
    atomic_store(&own_calls, 0);
}

const ga_fork_ops_t ga_capture_fork = {NULL, &lock, fork_child};
