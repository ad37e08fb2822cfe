/* fuzz_table.c - libFuzzer harness for the replacement-kernel table parser:
 * any text, any size; every rule handed out must be well formed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "features/swap/swap.h"

static void check_rule(void *arg, const char *orig, const char *repl, bool any)
{
    (void)arg, (void)any;
    if (!*orig || !*repl || strpbrk(orig, " \t\r\n#") || strpbrk(repl, " \t\r\n#"))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ga_swap_parse_table((const char *)data, size, "fuzz", check_rule, NULL);
    return 0;
}
