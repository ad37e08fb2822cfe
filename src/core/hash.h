/* hash.h - the address mix the library's tables hash device addresses with:
 * multiplicative (Fibonacci), whose top bits depend on every bit of an address
 * whose low bits are zero (blocks are 256-byte aligned). */
#ifndef GA_HASH_H
#define GA_HASH_H

#include <stdint.h>

static inline uint64_t ga_addr_mix(uint64_t addr) { return addr * 0x9E3779B97F4A7C15ull; }

#endif
