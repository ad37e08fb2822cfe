/* test_route.c - routing by pointer identity over a synthetic driver table:
 * exact matches, absent pointers, and aliases (two ELF names, one address)
 * resolved only by the requested base name, never guessed. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "core/real.h"

static char fake_code[GA_N_ENTRIES]; /* distinct addresses to stand for functions */

static unsigned build(ga_driver_t *d, bool alias)
{
    memset(d, 0, sizeof *d);
    unsigned n = 0;
    for (int i = 0; i < GA_N_ENTRIES; i++) {
        d->fn[i] = &fake_code[i];
        d->by_ptr[n++] = (ga_ptr_id_t){(uintptr_t)&fake_code[i], i};
    }
    if (alias) { /* cuMemFree and cuMemFree_v2 at one address, cuMemAlloc absent */
        d->fn[GA_ID_cuMemFree] = d->fn[GA_ID_cuMemFree_v2];
        for (unsigned j = 0; j < n; j++)
            if (d->by_ptr[j].id == GA_ID_cuMemFree)
                d->by_ptr[j].ptr = (uintptr_t)d->fn[GA_ID_cuMemFree_v2];
        d->fn[GA_ID_cuMemAlloc] = NULL;
        for (unsigned j = 0; j < n; j++)
            if (d->by_ptr[j].id == GA_ID_cuMemAlloc)
                d->by_ptr[j] = d->by_ptr[--n];
    }
    /* ga_driver_resolve sorts; do the same (insertion sort is fine here) */
    for (unsigned j = 1; j < n; j++)
        for (unsigned k = j; k > 0 && (d->by_ptr[k - 1].ptr > d->by_ptr[k].ptr ||
                                       (d->by_ptr[k - 1].ptr == d->by_ptr[k].ptr &&
                                        d->by_ptr[k - 1].id > d->by_ptr[k].id));
             k--) {
            ga_ptr_id_t t = d->by_ptr[k];
            d->by_ptr[k] = d->by_ptr[k - 1];
            d->by_ptr[k - 1] = t;
        }
    d->n_by_ptr = n;
    return n;
}

int main(void)
{
    static ga_driver_t d;
    build(&d, false);
    for (int i = 0; i < GA_N_ENTRIES; i++)
        CHECK(ga_driver_id_of(&d, d.fn[i], NULL) == i);
    int x;
    CHECK(ga_driver_id_of(&d, &x, NULL) == -1);
    CHECK(ga_driver_id_of(&d, NULL, "cuMemAlloc") == -1);
    /* a _ptsz pointer maps to the _ptsz wrapper even when asked by base name */
    CHECK(ga_driver_id_of(&d, d.fn[GA_ID_cuLaunchKernel_ptsz], "cuLaunchKernel") ==
          GA_ID_cuLaunchKernel_ptsz);

    build(&d, true);
    void *shared = d.fn[GA_ID_cuMemFree_v2];
    CHECK(ga_driver_id_of(&d, shared, NULL) == -1);            /* ambiguous: no guess */
    CHECK(ga_driver_id_of(&d, shared, "cuMemFree") == -1);     /* both are variants */
    CHECK(ga_driver_id_of(&d, shared, "cuMemFree_v2") == GA_ID_cuMemFree_v2);
    CHECK(ga_driver_id_of(&d, shared, "cuMemcpy") == -1);      /* neither is a variant */
    CHECK(ga_driver_id_of(&d, d.fn[GA_ID_cuMemAlloc_v2], "cuMemAlloc") == GA_ID_cuMemAlloc_v2);
    return check_done("test_route");
}
