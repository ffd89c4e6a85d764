/* resize_interleave.c - moving 8 image rows into and out of the byte-interleaved layout of the
 * resize's horizontal pass (kernels/resize.h). Pure data movement: SSE2 where available (part of
 * every x86-64 CPU), C otherwise. */
#include "image/image_internal.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define L G4V_RS_LANES

#if defined(__SSE2__) && L == 8
/* 8 vectors of 16 bytes (v[j][m]) -> out[m*8 + j]: three rounds of unpacking. */
static inline void transpose_8x16(const __m128i r[8], __m128i o[8]) {
    __m128i a0 = _mm_unpacklo_epi8(r[0], r[1]), a1 = _mm_unpackhi_epi8(r[0], r[1]);
    __m128i b0 = _mm_unpacklo_epi8(r[2], r[3]), b1 = _mm_unpackhi_epi8(r[2], r[3]);
    __m128i c0 = _mm_unpacklo_epi8(r[4], r[5]), c1 = _mm_unpackhi_epi8(r[4], r[5]);
    __m128i d0 = _mm_unpacklo_epi8(r[6], r[7]), d1 = _mm_unpackhi_epi8(r[6], r[7]);
    __m128i e0 = _mm_unpacklo_epi16(a0, b0), e1 = _mm_unpackhi_epi16(a0, b0);
    __m128i e2 = _mm_unpacklo_epi16(a1, b1), e3 = _mm_unpackhi_epi16(a1, b1);
    __m128i f0 = _mm_unpacklo_epi16(c0, d0), f1 = _mm_unpackhi_epi16(c0, d0);
    __m128i f2 = _mm_unpacklo_epi16(c1, d1), f3 = _mm_unpackhi_epi16(c1, d1);
    o[0] = _mm_unpacklo_epi32(e0, f0), o[1] = _mm_unpackhi_epi32(e0, f0);
    o[2] = _mm_unpacklo_epi32(e1, f1), o[3] = _mm_unpackhi_epi32(e1, f1);
    o[4] = _mm_unpacklo_epi32(e2, f2), o[5] = _mm_unpackhi_epi32(e2, f2);
    o[6] = _mm_unpacklo_epi32(e3, f3), o[7] = _mm_unpackhi_epi32(e3, f3);
}
#endif

void g4v_rs_interleave(const uint8_t *const *rows, size_t n, uint8_t *t) {
    size_t k = 0;
#if defined(__SSE2__) && L == 8
    for (; k + 16 <= n; k += 16) {
        __m128i r[8], o[8];
        for (int l = 0; l < 8; l++)
            r[l] = _mm_loadu_si128((const __m128i *)(rows[l] + k));
        transpose_8x16(r, o);
        for (int v = 0; v < 8; v++)
            _mm_storeu_si128((__m128i *)(t + k * 8) + v, o[v]);
    }
#endif
    for (; k < n; k++)
        for (int l = 0; l < L; l++)
            t[k * L + l] = rows[l][k];
}

void g4v_rs_deinterleave(const uint8_t *t, size_t n, uint8_t *const *rows) {
    size_t k = 0;
#if defined(__SSE2__) && L == 8
    /* Transposing the 8 vectors that hold bytes k..k+15 of all lanes puts lane l's even bytes
     * at 8l and its odd bytes at 64 + 8l; one more unpack joins them. */
    for (; k + 16 <= n; k += 16) {
        __m128i v[8], o[8];
        for (int i = 0; i < 8; i++)
            v[i] = _mm_loadu_si128((const __m128i *)(t + k * 8) + i);
        transpose_8x16(v, o);
        for (int l = 0; l < 8; l++) {
            __m128i lo = o[l / 2], hi = o[4 + l / 2];
            __m128i r = l & 1 ? _mm_unpackhi_epi8(lo, hi) : _mm_unpacklo_epi8(lo, hi);
            _mm_storeu_si128((__m128i *)(rows[l] + k), r);
        }
    }
#endif
    for (; k < n; k++)
        for (int l = 0; l < L; l++)
            rows[l][k] = t[k * L + l];
}
