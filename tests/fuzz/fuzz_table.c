/* fuzz_table.c - libFuzzer harness for the replacement-kernel table parser:
 * any text, any size; every rule handed out must be well formed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "features/kernels/kernels.h"

static void check_rule(void *arg, const ga_kernels_rule_t *r)
{
    (void)arg;
    if (!*r->original || !*r->replacement || strpbrk(r->original, " \t\r\n#") ||
        strpbrk(r->replacement, " \t\r\n#") || r->ncodes > GA_KERNELS_MAX_CODES ||
        (r->ncodes && !r->codes))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ga_kernels_parse_table((const char *)data, size, "fuzz", check_rule, NULL);
    return 0;
}
