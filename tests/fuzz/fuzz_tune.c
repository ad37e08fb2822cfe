/* fuzz_tune.c - libFuzzer harness for the tune table parser: any text; every
 * entry handed out must be one the launch path can apply safely. */
#include <stdint.h>
#include <stdlib.h>

#include "features/tune/tune.h"

static void check_entry(void *arg, const ga_tune_entry_t *e)
{
    (void)arg;
    uint64_t t = (uint64_t)e->new_block[0] * e->new_block[1] * e->new_block[2];
    if (!e->name[0] || t == 0 || t > 1024 || !e->grid[0] || !e->new_grid[0])
        abort();
    if (!e->stride && (uint64_t)e->new_grid[0] * e->new_block[0] < (uint64_t)e->grid[0] * e->block[0])
        abort(); /* a threads entry never drops threads */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ga_tune_parse((const char *)data, size, "fuzz", check_entry, NULL);
    return 0;
}
