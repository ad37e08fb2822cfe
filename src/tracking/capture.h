/* capture.h - stream capture as the library must see it: which streams are
 * capturing, and the gate that keeps the library's own capture-unsafe driver
 * calls out of any capture.
 *
 * The rule (doc/capture.md): while any stream of the process captures, in any
 * mode, the library makes none of the calls the CUDA programming guide lists
 * as unsafe during capture (synchronous allocation and free, page-locked host
 * allocation, stream and event queries and synchronizations, synchronous
 * copies and memsets, and any work on the legacy stream), and it answers no
 * call itself: the program's calls reach the driver, and so the graph,
 * unchanged. Bookkeeping that needs such a call waits for the capture to end
 * or is skipped. Capturing in global mode forbids these calls to every
 * thread, thread-local mode to the capturing thread; relaxed mode to none:
 * the library treats every mode as global, the one rule that is right in all.
 *
 * The gate: every stretch of the library's own unsafe calls is bracketed by
 * ga_own_calls_enter/leave; a capture is opened only after every such stretch
 * in flight has left (ga_capture_opening waits for them), and no stretch
 * enters while one is open. So no stretch can overlap a capture even when the
 * capture starts on another thread in the middle of it. */
#ifndef GA_CAPTURE_H
#define GA_CAPTURE_H

#include <stdatomic.h>

#include "core/runtime.h"

/* Captures opening or open in the process: read without a lock on every path
 * that may serve a call (one relaxed load). */
extern _Atomic int ga_captures;

static inline bool ga_capture_active(void)
{
    return atomic_load_explicit(&ga_captures, memory_order_relaxed) > 0;
}

/* Enter a stretch of the library's own capture-unsafe driver calls: false
 * (and nothing entered) while a capture is opening or open. */
bool ga_own_calls_enter(void);
void ga_own_calls_leave(void);

/* Around the program's cuStreamBeginCapture*: `opening` counts the capture
 * and waits until no stretch of own calls is in flight; `opened` keeps its
 * record if the driver began it (h and pt as the program named the stream),
 * and takes the count back if not. */
void ga_capture_opening(void);
void ga_capture_opened(const ga_rt_t *rt, CUstream h, bool pt, CUresult r);

/* After the program's cuStreamEndCapture on h: the capture's record goes when
 * the driver says the stream no longer captures (an end that failed with
 * CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD leaves it open; one that failed
 * because the capture was invalidated ends it). */
void ga_capture_ended(const ga_rt_t *rt, CUstream h, bool pt);

/* Stream h was destroyed: a capture it was the origin of is over. */
void ga_capture_stream_gone(CUstream h);

/* Is stream h (as the program named it) capturing now? Asks the driver
 * (cuStreamIsCapturing, which is safe during capture) only while some
 * capture is open; an unanswerable question counts as capturing. */
bool ga_stream_capturing(const ga_rt_t *rt, CUstream h, bool pt);

extern const ga_fork_ops_t ga_capture_fork;

#endif
