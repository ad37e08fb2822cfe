/* memkind.h - what memory a pointer the program passed really is, as the
 * driver says: a "host" argument may be device, managed or mapped memory under
 * unified addressing (cudaMemcpy(device_dst, device_src, n,
 * cudaMemcpyDeviceToHost) is legal and real code does it).
 *
 * Any feature that reads or writes the host side of a copy itself (instead of
 * letting the driver do it) asks here first, and passes the call through when
 * the answer is no. */
#ifndef GA_MEMKIND_H
#define GA_MEMKIND_H

#include <stdint.h>

#include "core/runtime.h"

/* True if [p, p+n) is host memory the library may read or write with memcpy
 * exactly as the driver would for a copy: pageable memory, or page-locked
 * memory (allocated, registered or mapped). False for device and managed
 * memory, for NULL, for n == 0, and when the driver cannot say. Answers are
 * cached per thread while the write epoch stands (rt->epochs; every call that
 * can map memory moves it); without epochs the driver is asked every time. */
bool ga_host_memory(const ga_rt_t *rt, const void *p, size_t n);

/* What the driver says of the byte at a: its memory type (0 for memory it
 * does not know: plain pageable host memory) and whether it is managed.
 * False when it cannot say. Never cached. */
bool ga_pointer_kind(const ga_rt_t *rt, uintptr_t a, unsigned *type, bool *managed);

/* True if the first and the last byte of [p, p+n) are plain pageable host
 * memory (the driver knows neither: not page-locked, registered, mapped,
 * managed or device memory). False for NULL and n == 0. Never cached. */
bool ga_pageable_ends(const ga_rt_t *rt, const void *p, size_t n);

#endif
