/* cubin.h - reading a cubin: an ELF64 image of one architecture's machine
 * code, alone or as a fatbin's entry (codeid.h says what a kernel's identity
 * covers in one). Private to the code-identity readers. */
#ifndef GA_CUBIN_H
#define GA_CUBIN_H

#include "tracking/codehash.h"

/* A cubin whose section headers were checked to lie inside it. */
typedef struct ga_cubin {
    const uint8_t *p;
    size_t n;
    uint64_t shoff;
    unsigned shnum, shentsize;
    span_t shstr;
    uint32_t flags; /* e_flags: the architecture and ABI */
} ga_cubin_t;

/* Does p (avail bytes) start with ELF's magic? */
bool ga_cubin_is(const uint8_t *p, size_t avail);

/* Open p[0..n) as a little-endian ELF64 image: false if it is none, or its
 * section headers or section names do not fit. */
bool ga_cubin_open(ga_cubin_t *e, const uint8_t *p, size_t n);

/* The bytes a cubin in this process spans, from its headers (the driver
 * accepted it, so the headers it read are there): 0 if odd or huge. */
size_t ga_cubin_extent(const uint8_t *p);

/* A kernel's hash in one cubin: 1 with *out, 0 when the cubin does not hold
 * it, -1 when the cubin is malformed where the kernel's code is. */
int ga_cubin_kernel(const ga_cubin_t *e, const char *k, uint64_t *out);

/* fn for each ".text.<name>" section: <name> (a quick look for wanted kernels). */
void ga_cubin_texts(const ga_cubin_t *e, ga_code_name_fn *fn, void *arg);

/* fn for each kernel entry point (a function symbol marked as a CUDA entry,
 * in its own .text.<name>), in symbol table order. */
void ga_cubin_entries(const ga_cubin_t *e, ga_code_name_fn *fn, void *arg);

#endif
