/* async.c - the asynchronous read (cuMemcpyDtoHAsync then a stream sync,
 * PyTorch's .item()): a window fill enqueued behind the program's own copy on
 * the same stream, installed at the first sync of that stream (or of its
 * context) that began after the enqueue, or once the tracker knows the stream
 * finished past it; and the sync after a served read, answered without the
 * driver when the context has nothing in flight.
 *
 * Owns: whether any slot may be S_FILLING (an atomic), and the slots' way
 * from S_FILLING to S_VALID or S_EMPTY, under `lock`.
 * Must never: install a fill its sync did not wait for (enqueued after the
 * sync began, or on another stream, or in another context); keep one when
 * anything was issued since it was judged; call the driver holding `lock`. */
#define _GNU_SOURCE
#include "features/coalesce/internal.h"

#include "tracking/device.h"

/* Set (under lock) before a slot becomes S_FILLING, cleared under lock by a
 * sync that found none left: a sync seeing it clear has no fill to install
 * and skips the table (a .item() loop served from a window makes no fills).
 * Seq_cst: a fill enqueued before a sync began (its order number taken after
 * the flag was set) is seen by that sync. */
static _Atomic bool any_filling;

/* Is the stream the program named idle right now (by the tracker)? */
bool ga_co_stream_idle(const ga_rt_t *rt, CUstream h, bool pt)
{
    ga_stream_t *st = ga_stream_get(rt, h, pt);
    return st && !ga_stream_busy(st);
}

/* After the program's own async copy: enqueue a window fill behind it on the
 * same stream, installed when the program synchronizes that stream. */
void ga_co_start_async_fill(const ga_rt_t *rt, CUdeviceptr src, size_t n, CUstream h, bool pt,
                            ga_id_t id)
{
    fill_t f;
    ga_stream_t *st = ga_stream_get(rt, h, pt);
    if (!st || !ga_own_calls_enter())
        return;
    if (!ga_co_begin_fill(rt, src, n, st, 0, &f)) {
        ga_own_calls_leave();
        return;
    }
    slot_t *s = f.slot;
    __typeof__(&cuMemcpyDtoHAsync_v2) copy = GA_REAL(rt, id, cuMemcpyDtoHAsync_v2);
    /* The program's own copy is already noted as work (f.work was read after
     * it): the window is valid if nothing else is enqueued anywhere until the
     * stream sync, and no stream the copy does not wait for is running now
     * (a kernel there could write the memory after the copy read it, and end
     * before the sync). */
    bool legacy = !pt && (h == NULL || h == CU_STREAM_LEGACY);
    bool ok = ga_ctx_settle_for(rt, f.ctx, st, legacy) &&
              ga_co_ensure_host(rt, s, f.len, f.ctx, false, false) &&
              copy(s->host, f.base, f.len, h) == CUDA_SUCCESS;
    pthread_mutex_lock(&ga_co_lock);
    if (ok) { /* from now on a sync of this stream that begins may install it */
        atomic_store(&any_filling, true);
        s->state = S_FILLING, s->enqueued = ga_order_next();
        s->fill_done = ga_stream_note_own(st);
        ga_co_record_window_locked(&f);
        atomic_fetch_add_explicit(&ga_co_counts.fills, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&ga_co_counts.fill_bytes, f.len, memory_order_relaxed);
    } else {
        s->state = S_EMPTY;
    }
    pthread_mutex_unlock(&ga_co_lock);
    ga_own_calls_leave();
}

/* Did this sync (of stream st, or with st NULL of the whole context ctx,
 * begun at `began`) wait for the fill in s? A context sync covers only its own
 * context's streams: another context's fill may still be landing. */
static bool covered_locked(const slot_t *s, const ga_stream_t *st, CUcontext ctx,
                           uint64_t began)
{
    return s->state == S_FILLING && s->enqueued <= began &&
           (st ? s->fill_st == st : s->ctx == ctx);
}

/* After a sync: the fills it covered have completed (their copies were
 * enqueued before it began, in another thread maybe); keep each only if
 * nothing was issued since and everything is idle. */
static void install_covered(const ga_rt_t *rt, const ga_stream_t *st, CUcontext ctx,
                            uint64_t began)
{
    bool any = false, filling = false;
    if (!atomic_load(&any_filling))
        return;
    pthread_mutex_lock(&ga_co_lock);
    for (int i = 0; i < N_SLOTS; i++) {
        any |= covered_locked(&ga_co_slots[i], st, ctx, began);
        filling |= ga_co_slots[i].state == S_FILLING;
    }
    if (!filling)
        atomic_store(&any_filling, false);
    pthread_mutex_unlock(&ga_co_lock);
    if (!any)
        return;
    CUcontext cur = ctx ? ctx : ga_current_ctx(rt);
    bool settled = cur && ga_ctx_settle(rt, cur);
    pthread_mutex_lock(&ga_co_lock);
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &ga_co_slots[i];
        if (!covered_locked(s, st, ctx, began))
            continue;
        bool keep = settled && s->epoch == ga_epoch_read() && s->work == ga_work_seq_read() &&
                    !ga_serving_off();
        ga_co_settle_slot_locked(s, keep);
        s->fill_st = NULL;
    }
    pthread_mutex_unlock(&ga_co_lock);
}

/* Fills whose stream the tracker knows finished past them, whoever waited:
 * a synchronization lazy_sync deferred and paid at a later call, or a fence,
 * marks the stream idle without a sync event here. Kept under the same rule
 * as at a sync (nothing issued since, the context idle); asks no driver. */
void ga_co_install_done(void)
{
    bool filling = false;
    if (!atomic_load(&any_filling))
        return;
    pthread_mutex_lock(&ga_co_lock);
    for (int i = 0; i < N_SLOTS; i++) {
        slot_t *s = &ga_co_slots[i];
        if (s->state != S_FILLING || !s->fill_st || !ga_stream_done(s->fill_st, s->fill_done)) {
            filling |= s->state == S_FILLING;
            continue;
        }
        bool keep = s->epoch == ga_epoch_read() && s->work == ga_work_seq_read() &&
                    ga_ctx_idle(s->ctx) && !ga_serving_off();
        ga_co_settle_slot_locked(s, keep);
        s->fill_st = NULL;
    }
    /* None left: the next calls skip the table (a .item() loop served from a
     * window, its syncs answered without the driver, came here on every read
     * and walked all the slots: ~500 instructions a read). */
    if (!filling)
        atomic_store(&any_filling, false);
    pthread_mutex_unlock(&ga_co_lock);
}

/* A wait succeeded: a stream's fills are found by its tracker record, a
 * context's by the context. */
void ga_co_synced(const ga_rt_t *rt, CUstream h, bool pt, CUcontext ctx, uint64_t began)
{
    const ga_stream_t *st = h == GA_NOSTREAM ? NULL : ga_stream_get(rt, h, pt);
    if (st)
        install_covered(rt, st, NULL, began);
    else if (h == GA_NOSTREAM && ctx)
        install_covered(rt, NULL, ctx, began);
}

/* A synchronization of a stream (or of the context) whose context has nothing
 * in flight: a read served from a window leaves the program's stream sync of
 * .item() nothing to wait for, yet the driver's own answer to it costs about as
 * much as the served read did (bench row driver-sync-idle). The tracker knows
 * the context idle only after successful waits for everything counted on its
 * streams, so no error can be pending there that the driver would report;
 * a handle it cannot vouch for, a capture or a sticky error goes to the driver. */
bool ga_co_sync(const ga_rt_t *rt, CUstream h, bool pt, CUresult *r)
{
    if (!rt->cfg.coalesce || !rt->track || ga_serving_off() || !ga_stream_ctx_idle(rt, h, pt))
        return false;
    atomic_fetch_add_explicit(&ga_co_counts.idle_syncs, 1, memory_order_relaxed);
    *r = CUDA_SUCCESS;
    return true;
}

void ga_co_async_fork_child(void)
{
    atomic_store(&any_filling, false);
}
