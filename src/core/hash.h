/* hash.h - the library's one address hash, for tables keyed by device or host
 * addresses. */
#ifndef GA_HASH_H
#define GA_HASH_H

#include <stdint.h>

/* Addresses hashed multiplicatively (Fibonacci): their low bits are zero
 * (device blocks are 256-byte aligned or more), and the product's top bits
 * depend on all of them, so take a table's index from the top bits, never the
 * low ones. Much cheaper than a byte-wise hash: uthash's default Jenkins hash
 * of the key's bytes took a third of a pooled free's time. */
static inline uint64_t ga_addr_mix(uint64_t addr)
{
    return addr * 0x9E3779B97F4A7C15ull;
}

#endif
