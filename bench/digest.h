/* digest.h - the digest every benchmark prints over the data it produced or
 * read: a word-wise FNV-1a variant with extra mixing, only used for equality
 * checks (bench/item_loop.py implements the same function). Its own header,
 * like clock.h, so that driver-only programs (bench_driver.cu) need not pull
 * in common.h's CUDA runtime. */
#ifndef BENCH_DIGEST_H
#define BENCH_DIGEST_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static inline uint64_t digest_bytes(const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    const uint64_t prime = 0x100000001b3ULL;
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h ^= w;
        h *= prime;
        h ^= h >> 29;
    }
    for (; i < len; i++) {
        h ^= p[i];
        h *= prime;
    }
    h ^= (uint64_t)len;
    h *= prime;
    h ^= h >> 32;
    return h;
}

static inline void print_digest(const void *data, size_t len)
{
    printf("digest: %016llx\n", (unsigned long long)digest_bytes(data, len));
}

#endif
