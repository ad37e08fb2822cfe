/* test_streams.c - the stream tracker and fences over a stub driver: work
 * makes a stream busy, a wait declares idle only what was enqueued before it,
 * fences are empty on an idle context, else cover the legacy stream plus busy
 * non-blocking streams and declare them idle on completion, and forgetting
 * a context drops its streams; before a copy, only the streams it does not
 * wait for are asked about. */
#include "check.h"
#include "tracking/streams.h"
#include "stub_driver.h"

/* Work on the blocking stream, enqueued by a thread of its own. */
static void *work_elsewhere(void *arg)
{
    ga_stream_note_work(arg, (CUstream)&stub_streams[0], false);
    return NULL;
}

/* The cases below are steps of one story over one tracker, in the order main
 * runs them: each starts from the streams' state the one before left. */
static ga_rt_t rt;
static CUstream s_block = (CUstream)&stub_streams[0], s_nb = (CUstream)&stub_streams[1];
static ga_stream_t *pt, *nb; /* the per-thread and the non-blocking stream */

/* each handle names one stream: the legacy stream however named, the per-thread
 * one apart, foreign handles refused; a context starts idle */
TEST_CASE(handles)
{
    ga_stream_t *legacy = ga_stream_get(&rt, NULL, false);
    ga_stream_t *legacy2 = ga_stream_get(&rt, CU_STREAM_LEGACY, true);
    pt = ga_stream_get(&rt, NULL, true);
    CHECK(legacy && legacy == legacy2);
    CHECK(pt && pt != legacy);
    CHECK(ga_stream_get(&rt, (CUstream)&stub_ctx_b, false) == NULL); /* rejected handle */
    nb = ga_stream_get(&rt, s_nb, false);
    CHECK(nb && ga_stream_nonblocking(nb));
    CHECK(!ga_stream_nonblocking(ga_stream_get(&rt, s_block, false)));
    CHECK(ga_ctx_idle(stub_current));
}

/* work, then a wait that started before more work: stays busy */
TEST_CASE(wait_before_work)
{
    ga_stream_note_work(&rt, s_nb, false);
    CHECK(ga_stream_busy(nb) && !ga_ctx_idle(stub_current));
    ga_stream_mark_t m = ga_stream_mark(&rt, s_nb, false);
    ga_stream_note_work(&rt, s_nb, false);
    ga_stream_mark_idle(m);
    CHECK(ga_stream_busy(nb));
    ga_stream_mark_idle(ga_stream_mark(&rt, s_nb, false));
    CHECK(!ga_stream_busy(nb));
}

/* an older mark never undoes a newer idle */
TEST_CASE(older_mark)
{
    ga_stream_note_work(&rt, NULL, true);
    ga_stream_mark_t old = ga_stream_mark(&rt, NULL, true);
    ga_stream_note_work(&rt, NULL, true);
    ga_stream_mark_idle(ga_stream_mark(&rt, NULL, true));
    ga_stream_mark_idle(old);
    CHECK(!ga_stream_busy(pt));
}

/* a context-wide wait declares every stream idle, unless it failed */
TEST_CASE(context_wait)
{
    ga_stream_note_work(&rt, s_block, false);
    ga_stream_note_work(&rt, s_nb, false);
    ga_ctx_mark_t cm = ga_ctx_mark(&rt, stub_current);
    ga_ctx_mark_idle(&cm, false); /* a failed sync proves nothing */
    CHECK(!ga_ctx_idle(stub_current));
    cm = ga_ctx_mark(&rt, stub_current);
    ga_ctx_mark_idle(&cm, true);
    CHECK(ga_ctx_idle(stub_current));
}

/* before a copy on a stream: the streams it waits for are not asked (its
 * own; for the legacy stream, the blocking ones), any other busy one makes
 * the answer no (the stub driver has no cuStreamQuery: a stream asked about
 * stays busy) */
TEST_CASE(settle_for_a_copy)
{
    CUcontext ctx = stub_current;
    ga_stream_t *legacy = ga_stream_get(&rt, NULL, false);
    ga_stream_note_work(&rt, s_block, false);
    CHECK(ga_ctx_settle_for(&rt, ctx, legacy, true));
    CHECK(!ga_ctx_settle_for(&rt, ctx, pt, false) && !ga_ctx_settle(&rt, ctx));
    ga_stream_note_work(&rt, s_nb, false);
    CHECK(!ga_ctx_settle_for(&rt, ctx, legacy, true) && !ga_ctx_settle_for(&rt, ctx, nb, false));
    ga_stream_mark_idle(ga_stream_mark(&rt, s_block, false));
    CHECK(ga_ctx_settle_for(&rt, ctx, nb, false) && !ga_ctx_settle_for(&rt, ctx, legacy, true));
    ga_ctx_mark_t cm = ga_ctx_mark(&rt, ctx);
    ga_ctx_mark_idle(&cm, true);
    CHECK(ga_ctx_settle_for(&rt, ctx, pt, false) && ga_ctx_settle(&rt, ctx));
}

/* this thread's idle answer is cached: work from another thread voids it */
TEST_CASE(idle_cache)
{
    CHECK(ga_ctx_idle(stub_current));
    pthread_t other;
    CHECK(pthread_create(&other, NULL, work_elsewhere, &rt) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    CHECK(!ga_ctx_idle(stub_current));
    ga_fence_t busy_f;
    memset(&busy_f, 0x5a, sizeof busy_f);
    CHECK(!ga_fence_idle(stub_current, &busy_f) && busy_f.n == 0x5a5a5a5au); /* untouched */
    ga_ctx_mark_t cm = ga_ctx_mark(&rt, stub_current);
    ga_ctx_mark_idle(&cm, true);
    CHECK(ga_fence_idle(stub_current, &busy_f) && ga_fence_empty(&busy_f));
    CHECK(busy_f.ctx == stub_current);
}

/* fences: empty on an idle context */
TEST_CASE(fence_idle_context)
{
    ga_fence_t f;
    stub_events_recorded = 0;
    CHECK(ga_fence_init(&rt, ga_current_ctx(&rt), &f));
    CHECK(stub_events_recorded == 0 && f.n == 0);
    CHECK(ga_fence_done(&rt, &f));
    ga_fence_release(&rt, &f);
}

/* legacy work: the legacy event alone */
TEST_CASE(fence_legacy)
{
    ga_stream_note_work(&rt, NULL, false);
    ga_fence_t f;
    CHECK(ga_fence_init(&rt, ga_current_ctx(&rt), &f));
    CHECK(stub_events_recorded == 1 && stub_recorded_on[0] == CU_STREAM_LEGACY);
    CHECK(ga_fence_done(&rt, &f));
    ga_fence_release(&rt, &f);
    CHECK(ga_ctx_idle(stub_current)); /* its completion showed the stream idle */
}

/* a busy non-blocking stream gets its own event, a blocking one is covered by
 * the legacy event; both are idle once the fence completed, not before */
TEST_CASE(fence_busy_streams)
{
    ga_stream_note_work(&rt, s_nb, false);
    ga_stream_note_work(&rt, s_block, false);
    stub_events_recorded = 0;
    ga_fence_t f;
    CHECK(ga_fence_init(&rt, ga_current_ctx(&rt), &f));
    CHECK(stub_events_recorded == 2 && stub_recorded_on[0] == CU_STREAM_LEGACY &&
          stub_recorded_on[1] == s_nb);
    ga_stream_note_work(&rt, s_block, false); /* after the fence: not covered by it */
    stub_event_pending = 1;
    CHECK(!ga_fence_done(&rt, &f) && ga_stream_busy(nb));
    stub_event_pending = 0;
    CHECK(ga_fence_done(&rt, &f));
    ga_fence_release(&rt, &f);
    CHECK(!ga_stream_busy(nb) && ga_stream_busy(ga_stream_get(&rt, s_block, false)));
    int events_before = stub_nevents;
    CHECK(ga_fence_init(&rt, ga_current_ctx(&rt), &f)); /* events are reused, not created again */
    CHECK(stub_nevents == events_before && f.n == 1);
    ga_fence_release(&rt, &f);
}

/* a busy blocking stream destroyed before the free: still covered */
TEST_CASE(fence_destroyed_stream)
{
    ga_stream_t *gone = ga_stream_get(&rt, s_block, false);
    ga_ctx_mark_t all = ga_ctx_mark(&rt, stub_current);
    ga_ctx_mark_idle(&all, true);
    CHECK(ga_ctx_idle(stub_current));
    ga_stream_note_work(&rt, s_block, false);
    CHECK(gone && ga_stream_busy(gone));
    ga_stream_outlive(&rt, s_block);
    ga_stream_forget(s_block);
    stub_events_recorded = 0;
    ga_fence_t f;
    CHECK(ga_fence_init(&rt, ga_current_ctx(&rt), &f));
    CHECK(stub_events_recorded == 1 && stub_recorded_on[0] == CU_STREAM_LEGACY);
    ga_fence_release(&rt, &f);
}

/* an untracked entry point makes every stream presumed busy */
TEST_CASE(untracked)
{
    CHECK(!ga_untracked());
    ga_note_untracked("cuSomethingNew");
    CHECK(ga_untracked() && ga_stream_busy(pt) && !ga_ctx_idle(stub_current));
}

/* forgetting: a destroyed stream and a destroyed context */
TEST_CASE(forgetting)
{
    ga_stream_forget(s_nb);
    ga_stream_t *again = ga_stream_get(&rt, s_nb, false);
    CHECK(again && !ga_stream_busy(again) == !ga_untracked());
    ga_ctx_forget(stub_current);
    CHECK(ga_ctx_idle(stub_current) == !ga_untracked());
}

int main(void)
{
    stub_runtime(&rt);
    stub_stream_flags[1] = CU_STREAM_NON_BLOCKING;
    RUN_CASE(handles);
    RUN_CASE(wait_before_work);
    RUN_CASE(older_mark);
    RUN_CASE(context_wait);
    RUN_CASE(settle_for_a_copy);
    RUN_CASE(idle_cache);
    RUN_CASE(fence_idle_context);
    RUN_CASE(fence_legacy);
    RUN_CASE(fence_busy_streams);
    RUN_CASE(fence_destroyed_stream);
    RUN_CASE(untracked);
    RUN_CASE(forgetting);
    return check_done("test_streams");
}
