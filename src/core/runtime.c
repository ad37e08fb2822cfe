/* runtime.c - lazy, lock-free initialization of the library's process state.
 *
 * Owns: the published runtime (driver table, configuration), the decision
 * between active and pure pass-through, fork and exit handlers.
 * Must never: run at load time (no constructors), hold a lock across dlopen or a
 * driver call, or read the environment of a secure-execution process.
 * A thread that calls in while another initializes passes its call straight
 * through, and a pointer it obtains then through dlsym or cuGetProcAddress
 * stays the driver's own: calls through it are invisible to the features
 * (cudart fetches its pointers on one thread, before any work). */
#define _GNU_SOURCE
#include "core/runtime.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h> /* environ */

#include "core/log.h"
#include "core/hooks.h"

_Atomic(const ga_rt_t *) ga_rt_published;

/* 0: nobody started; 1: a thread is initializing; 2: published. */
static _Atomic int init_state;
static ga_rt_t rt_storage;          /* written only by the thread that won init_state */
static GA_TLS int init_depth;     /* re-entry guard: init -> dlopen -> dlsym -> init */

/* Every stateful module's fork handlers, in lock order (ga_hooks_fork_ops). */
enum { MAX_FORK_OPS = 32 };
static const ga_fork_ops_t *fork_modules[MAX_FORK_OPS]; /* written once, before atfork */
static unsigned n_fork_modules;

static void fork_prepare(void)
{
    for (size_t i = 0; i < n_fork_modules; i++) {
        if (fork_modules[i]->rwlock)
            pthread_rwlock_wrlock(fork_modules[i]->rwlock);
        pthread_mutex_lock(fork_modules[i]->lock);
    }
}

static void fork_parent(void)
{
    for (size_t i = n_fork_modules; i-- > 0;) {
        pthread_mutex_unlock(fork_modules[i]->lock);
        if (fork_modules[i]->rwlock)
            pthread_rwlock_unlock(fork_modules[i]->rwlock);
    }
}

static void fork_child(void)
{
    for (size_t i = n_fork_modules; i-- > 0;) {
        pthread_mutex_init(fork_modules[i]->lock, NULL);
        if (fork_modules[i]->rwlock)
            pthread_rwlock_init(fork_modules[i]->rwlock, NULL);
        fork_modules[i]->child();
    }
}

static const char *no_env(const char *name)
{
    (void)name;
    return NULL;
}

static void warn_problem(void *ctx, const char *var, const char *text)
{
    (void)ctx, (void)var;
    ga_warn("%s", text);
}

static void configure(ga_rt_t *rt)
{
    /* A secure-execution (setuid) process must not be steered by its
     * environment: no log files, no tables, no features. */
    bool secure = getauxval(AT_SECURE) != 0;
    ga_getenv_fn get = secure ? no_env : (ga_getenv_fn)getenv;
    int level;
    const char *lv = get("GPUACCEL_LOG");
    if (!lv || !ga_parse_level(lv, &level))
        level = GA_LOG_WARN;
    ga_log_configure((ga_log_level_t)level, get("GPUACCEL_LOG_FILE"));
    ga_config_src_t src = {.get = get, .env = secure ? NULL : environ, .problem = warn_problem};
    ga_config_load(&rt->cfg, &src);
    rt->active = rt->cfg.enabled && !secure;
    if (secure)
        ga_debug("secure-execution process: pure pass-through");
}

static void *libcuda_or_retry(void)
{
    void *lib = ga_libcuda_open();
    if (!lib)
        atomic_store(&init_state, 0); /* the driver is not loaded yet: try again later */
    return lib;
}

const ga_rt_t *ga_rt_init(void)
{
    if (init_depth > 0)
        return NULL;
    int expected = 0;
    if (!atomic_compare_exchange_strong(&init_state, &expected, 1))
        return atomic_load_explicit(&ga_rt_published, memory_order_acquire);

    init_depth++;
    const ga_rt_t *out = NULL;
    void *lib = libcuda_or_retry();
    if (lib) {
        ga_rt_t *rt = &rt_storage;
        configure(rt);
        unsigned n = ga_driver_resolve(&rt->drv, lib);
        /* The reference is kept for good: the real entry points must stay valid
         * even if the program closes its own handle of libcuda. */
        if (rt->active) {
            ga_hooks_start(rt);
            n_fork_modules = ga_hooks_fork_ops(fork_modules, MAX_FORK_OPS);
            pthread_atfork(fork_prepare, fork_parent, fork_child);
            atexit(ga_hooks_exit);
        }
        ga_debug("initialized: %u of %d entry points in this driver, %s", n, GA_N_ENTRIES,
                 rt->active ? "active" : "pass-through");
        atomic_store_explicit(&ga_rt_published, rt, memory_order_release);
        atomic_store(&init_state, 2);
        out = rt;
    }
    init_depth--;
    return out;
}

void *ga_real_slow(ga_id_t id)
{
    void *lib = ga_libcuda_open();
    if (!lib)
        return NULL;
    void *p = ga_real_dlsym(lib, ga_entries[id].name);
    ga_libcuda_release(lib);
    return p;
}
