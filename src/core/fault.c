/* fault.c - the first sticky error the driver returned, and whether work was
 * enqueued where the library cannot see it (fault.h).
 *
 * Owns: fault_code, 0 before any. Never cleared: cuda.h says the process must
 * be restarted after most of them, and a fault cannot be told apart per
 * context reliably (it is reported by whichever call comes next, in whatever
 * context is current). */
#include "core/fault.h"

#include <stdatomic.h>

#include "core/log.h"

static _Atomic int fault_code;
static _Atomic bool untracked; /* work was enqueued where the library cannot see it */

void ga_fault_note(CUresult r)
{
    int none = 0;
    if (ga_sticky_error(r) && atomic_compare_exchange_strong(&fault_code, &none, (int)r))
        ga_info("the driver returned sticky error %d: the library answers nothing itself from "
                "now on (every call goes to the driver)", (int)r);
}

bool ga_faulted(void)
{
    return atomic_load_explicit(&fault_code, memory_order_acquire) != 0;
}

CUresult ga_fault_code(void)
{
    return (CUresult)atomic_load_explicit(&fault_code, memory_order_acquire);
}

void ga_note_untracked(const char *why)
{
    if (!atomic_exchange(&untracked, true))
        ga_info("%s: every stream is presumed busy from now on", why);
}

bool ga_untracked(void)
{
    return atomic_load_explicit(&untracked, memory_order_relaxed);
}

void ga_untracked_reset(void)
{
    atomic_store(&untracked, false);
}
