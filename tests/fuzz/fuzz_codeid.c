/* fuzz_codeid.c - libFuzzer harness for the code identities (tracking/codeid.h):
 * any bytes as an image from a file (fatbin, cubin, PTX text or none of them);
 * no read past them, no crash, and one identity for one input. */
#include <stdint.h>
#include <stdlib.h>

#include "tracking/codeid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const names[] = {"_Z5scalePjjj", "_Z9unrelatedPjj", "_Z3mixjj", ""};
    enum { N = sizeof names / sizeof names[0] };
    ga_codeid_want_t a[N], b[N];
    for (unsigned i = 0; i < N; i++)
        a[i].name = b[i].name = names[i];
    unsigned got = ga_codeid_find(data, size, a, N, GA_CODEID_WHOLE);
    if (ga_codeid_find(data, size, b, N, GA_CODEID_WHOLE) != got)
        abort();
    for (unsigned i = 0; i < N; i++)
        if (a[i].got != b[i].got || (a[i].got && a[i].id != b[i].id))
            abort();
    ga_codeid_find(data, size, a, N, 0);
    ga_codeid_names(data, size, NULL, NULL, NULL);
    return 0;
}
