/* stats.c - the per-thread counter blocks and their list.
 *
 * Blocks are never freed: a thread that exits leaves its counts for the final
 * report. The list is append-only under `list_lock`; readers walk it under the
 * same lock. */
#define _GNU_SOURCE
#include "core/stats.h"

#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <time.h>

#include "core/log.h"
#include "core/hooks.h"

GA_TLS ga_thread_stats_t *ga_tl_stats;
bool ga_stats_timing;

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static ga_thread_stats_t *list_head; /* guarded by list_lock */

ga_thread_stats_t *ga_stats_attach(void)
{
    ga_thread_stats_t *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    pthread_mutex_lock(&list_lock);
    s->next = list_head;
    list_head = s;
    pthread_mutex_unlock(&list_lock);
    ga_tl_stats = s;
    return s;
}

void ga_span_record(const ga_span_t *sp, CUresult r)
{
    (void)r;
    uint64_t t1 = ga_now_ns();
    ga_thread_stats_t *s = ga_tl_stats;
    if (s)
        ga_bump(&s->ns[sp->id], t1 - sp->t0);
    ga_hooks_span(sp->id, sp->t0, t1);
}

static uint64_t sum(size_t offset, ga_id_t id)
{
    uint64_t total = 0;
    pthread_mutex_lock(&list_lock);
    for (ga_thread_stats_t *s = list_head; s; s = s->next) {
        _Atomic uint64_t *arr = (_Atomic uint64_t *)((char *)s + offset);
        total += atomic_load_explicit(&arr[id], memory_order_relaxed);
    }
    pthread_mutex_unlock(&list_lock);
    return total;
}

uint64_t ga_stats_calls(ga_id_t id)
{
    return sum(offsetof(ga_thread_stats_t, calls), id);
}

uint64_t ga_stats_ns(ga_id_t id)
{
    return sum(offsetof(ga_thread_stats_t, ns), id);
}

static void child(void)
{
    /* The child profiles itself: the parent's counts are the parent's. */
    for (ga_thread_stats_t *s = list_head; s; s = s->next)
        for (int i = 0; i < GA_N_ENTRIES; i++) {
            atomic_store_explicit(&s->calls[i], 0, memory_order_relaxed);
            atomic_store_explicit(&s->ns[i], 0, memory_order_relaxed);
        }
}

const ga_fork_ops_t ga_stats_fork = {NULL, &list_lock, child};

typedef struct {
    ga_id_t id;
    uint64_t calls;
} count_t;

static int by_calls_desc(const void *a, const void *b)
{
    const count_t *x = a, *y = b;
    return x->calls != y->calls ? (x->calls < y->calls ? 1 : -1) : (int)x->id - (int)y->id;
}

void ga_stats_log_summary(void)
{
    if (!ga_log_enabled(GA_LOG_INFO))
        return;
    count_t counts[GA_N_ENTRIES];
    unsigned n = 0;
    for (int id = 0; id < GA_N_ENTRIES; id++) {
        uint64_t c = ga_stats_calls((ga_id_t)id);
        if (c)
            counts[n++] = (count_t){(ga_id_t)id, c};
    }
    qsort(counts, n, sizeof counts[0], by_calls_desc);
    char line[900];
    size_t len = 0;
    for (unsigned i = 0; i < n; i++) {
        int w = snprintf(line + len, sizeof line - len, " %s=%llu", ga_entries[counts[i].id].name,
                         (unsigned long long)counts[i].calls);
        if (w < 0 || (size_t)w >= sizeof line - len) {
            ga_info("calls:%s", line);
            len = 0;
            i--; /* print this one on the next line */
            continue;
        }
        len += (size_t)w;
    }
    if (len || !n)
        ga_info("calls:%s", n ? line : " none");
}
