/* ptx.h - reading PTX text, alone or as a fatbin's entry (codeid.h says what a
 * kernel's identity covers in it). Private to the code-identity readers. */
#ifndef GA_PTX_H
#define GA_PTX_H

#include "tracking/codehash.h"

/* A kernel's hash in PTX text t[0..n): every token of the module but comments
 * and the other kernels' .entry functions (with their .visible/.weak
 * qualifiers), one blank between tokens. 1 with *out, 0 when the text has no
 * such kernel, -1 when its body is cut short. */
int ga_ptx_kernel(const char *t, size_t n, const char *k, uint64_t *out);

/* fn for each name an ".entry" is followed by, found by a quick scan that
 * does not skip comments (a quick look for wanted kernels). */
void ga_ptx_entries_rough(const char *t, size_t n, ga_code_name_fn *fn, void *arg);

/* fn for each kernel the text defines or declares (".entry <name>"), in
 * order, comments skipped. */
void ga_ptx_entries(const char *t, size_t n, ga_code_name_fn *fn, void *arg);

#endif
