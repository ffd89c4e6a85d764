/* sha256_sha.c - the SHA-256 block compression with the x86 SHA extensions (sha256rnds2,
 * sha256msg1, sha256msg2), ~5-8x the plain C rounds: the sha256_blocks variant for CPUs with
 * G4V_CPU_SHA (the folder is compiled with -msha -mssse3 -msse4.1). The same digest bit for bit:
 * test_variants runs it against the portable compression. */
#include "kernels/dispatch.h"

#include <immintrin.h> /* native even in SIMDe test builds: SHA is never emulated */

void g4v_sha256_blocks_sha(uint32_t h[8], const uint8_t *p, size_t nblocks) {
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    /* the state as the instructions want it: ABEF and CDGH */
    __m128i tmp = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); /* CDAB */
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B);  /* EFGH */
    __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);                                       /* ABEF */
    s1 = _mm_blend_epi16(s1, tmp, 0xF0);                                            /* CDGH */
    for (; nblocks; nblocks--, p += 64) {
        __m128i save0 = s0, save1 = s1, w[4];
        for (int i = 0; i < 16; i++) { /* four rounds per step */
            __m128i *wi = &w[i & 3];
            if (i < 4) {
                *wi = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
            } else { /* w[t-16] + s0(w[t-15]) + w[t-7], then + s1(w[t-2]) */
                __m128i t7 = _mm_alignr_epi8(w[(i - 1) & 3], w[(i - 2) & 3], 4);
                *wi = _mm_add_epi32(_mm_sha256msg1_epu32(w[i & 3], w[(i - 3) & 3]), t7);
                *wi = _mm_sha256msg2_epu32(*wi, w[(i - 1) & 3]);
            }
            __m128i msg =
                _mm_add_epi32(*wi, _mm_loadu_si128((const __m128i *)&g4v_sha256_k[4 * i]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, msg);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(msg, 0x0E));
        }
        s0 = _mm_add_epi32(s0, save0);
        s1 = _mm_add_epi32(s1, save1);
    }
    tmp = _mm_shuffle_epi32(s0, 0x1B);   /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);    /* DCHG */
    s0 = _mm_blend_epi16(tmp, s1, 0xF0); /* DCBA */
    s1 = _mm_alignr_epi8(s1, tmp, 8);    /* HGFE */
    _mm_storeu_si128((__m128i *)&h[0], s0);
    _mm_storeu_si128((__m128i *)&h[4], s1);
}
