/* ntcopy.h - memcpy with non-temporal stores, shared by the copy crew
 * (crew.c, GA_CREW_AROUND) and the probes that measured it
 * (bench/probes/spincopy.h): header-only, so a probe built on its own takes
 * the library's very loop.
 *
 * Written by hand: glibc's memcpy turns to such stores only above a share of
 * the last-level cache (__x86_shared_non_temporal_threshold, megabytes), never
 * for a staged chunk. The bytes go to memory, not to this core's caches, so a
 * device that reads them next (a DMA out of page-locked memory) finds no dirty
 * line to snoop, and no store first reads its line for ownership. The sfence
 * makes the stores visible before the caller goes on (to a count another
 * thread reads before its DMA, or to the DMA itself). Where there is no SSE2:
 * memcpy. */
#ifndef GA_STAGING_NTCOPY_H
#define GA_STAGING_NTCOPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

static inline void ga_stream_copy(char *dst, const char *src, size_t n)
{
#ifdef __SSE2__
    size_t head = (16 - ((uintptr_t)dst & 15)) & 15;
    if (head > n)
        head = n;
    memcpy(dst, src, head);
    dst += head, src += head, n -= head;
    size_t body = n & ~(size_t)63;
    for (size_t i = 0; i < body; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i)),
                b = _mm_loadu_si128((const __m128i *)(src + i + 16)),
                c = _mm_loadu_si128((const __m128i *)(src + i + 32)),
                d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
    memcpy(dst + body, src + body, n - body);
    _mm_sfence();
#else
    memcpy(dst, src, n);
#endif
}

#endif
