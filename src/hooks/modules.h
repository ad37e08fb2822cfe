/* modules.h - the feature modules as the core sees them: one place that lists
 * them, starts them, and fans out the events every module may care about. */
#ifndef GA_MODULES_H
#define GA_MODULES_H

#include "core/runtime.h"

/* Switch off, with a warning, each enabled feature this driver is too old for
 * (called once, from init, before the runtime is published). */
void ga_modules_check(ga_rt_t *rt);

/* Start the features the configuration enables (called once, from init). */
void ga_modules_init(const ga_rt_t *rt);

/* Something is about to observe or change the program's device state, so
 * anything a module holds back (launches the graphs feature holds) must be
 * issued first: for one stream, or for all. */
typedef enum { GA_FLUSH_STREAM, GA_FLUSH_ALL } ga_flush_t;
void ga_modules_flush(const ga_rt_t *rt, ga_flush_t what, CUstream h);

/* A module or library is being unloaded (its kernel handles become invalid). */
void ga_modules_unload(const ga_rt_t *rt);

/* A context was destroyed (or its primary context reset): the driver freed its
 * memory, streams and events; every module forgets them without driver calls. */
void ga_modules_ctx_gone(const ga_rt_t *rt, CUcontext ctx);

/* A stream was destroyed; its tracker record is forgotten right after. */
void ga_modules_stream_gone(const ga_rt_t *rt, CUstream h);

/* At process exit: reports (runs once, from atexit). */
void ga_modules_exit(void);

/* Fork handlers of every stateful module, in lock order: a module that calls
 * into another while holding its own lock comes first (the tuner's gate, which
 * every wrapper takes before anything else while tuning; profile -> stats;
 * graphs, swap, tune, tuner -> registry; graphs, pool -> streams). */
#define GA_FORK_MODULES                                                                    \
    {&ga_tuner_fork, &ga_profile_fork, &ga_graphs_fork, &ga_swap_fork, &ga_tune_fork,      \
     &ga_stats_fork, &ga_pool_fork, &ga_coalesce_fork, &ga_streams_fork, &ga_registry_fork, \
     &ga_capture_fork}

#include "features/graphs/graphs.h"
#include "features/swap/swap.h"
#include "features/tune/tune.h"
#include "features/tuner/tuner.h"

#include "tracking/capture.h"
#include "features/coalesce/coalesce.h"

#include "features/pool/pool.h"
#include "features/profile/profile.h"
#include "tracking/registry.h"
#include "core/stats.h"
#include "tracking/streams.h"

#endif
