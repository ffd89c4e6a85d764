/* resize_avx2.c - the resize inner loops (contract in resize.h) with AVX2 integer arithmetic:
 * 32-bit lanes, the same products and sums as the portable loops; the clamp to 0..255 by
 * saturating packs, which is the same. The tests check both give identical bytes. */
#include "kernels/dispatch.h"
#include "kernels/simd.h"

#define L G4V_RS_LANES

/* 8 int32 >> 22, then saturate to int16 and to uint8: the clamp to 0..255. Packs work per
 * 128-bit half, so the permute puts the 16 bytes of (a, b) back in order. */
static inline __m128i pack16(__m256i a, __m256i b) {
    __m256i s = _mm256_packs_epi32(_mm256_srai_epi32(a, 22), _mm256_srai_epi32(b, 22));
    s = _mm256_permute4x64_epi64(s, 0xD8);
    return _mm_packus_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

static void hpass_avx2(const uint8_t *t, const g4v_coeffs *cx, uint8_t *u) {
    const __m256i half = _mm256_set1_epi32(G4V_RS_HALF);
    for (int x = 0; x < cx->n_out; x++) {
        __m256i a0 = half, a1 = half, a2 = half;
        const uint8_t *s = t + (size_t)cx->lo[x] * 3 * L;
        const int32_t *q = cx->q + (size_t)x * cx->ksize;
        for (int j = 0, cnt = cx->cnt[x]; j < cnt; j++, s += 3 * L) {
            const __m256i w = _mm256_set1_epi32(q[j]);
            __m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)s));
            __m256i v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(s + 8)));
            __m256i v2 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(s + 16)));
            a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(v0, w));
            a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(v1, w));
            a2 = _mm256_add_epi32(a2, _mm256_mullo_epi32(v2, w));
        }
        uint8_t *o = u + (size_t)x * 3 * L;
        _mm_storeu_si128((__m128i *)o, pack16(a0, a1));
        __m128i c = pack16(a2, a2);
        _mm_storel_epi64((__m128i *)(o + 16), c);
    }
}

static void vpass_avx2(const uint8_t *const *rows, const int32_t *q, int cnt, size_t n,
                       uint8_t *out) {
    const __m256i half = _mm256_set1_epi32(G4V_RS_HALF);
    size_t k = 0;
    for (; k + 32 <= n; k += 32) {
        __m256i a0 = half, a1 = half, a2 = half, a3 = half;
        for (int j = 0; j < cnt; j++) {
            const uint8_t *r = rows[j] + k;
            const __m256i w = _mm256_set1_epi32(q[j]);
            __m256i v0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)r));
            __m256i v1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(r + 8)));
            __m256i v2 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(r + 16)));
            __m256i v3 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(r + 24)));
            a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(v0, w));
            a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(v1, w));
            a2 = _mm256_add_epi32(a2, _mm256_mullo_epi32(v2, w));
            a3 = _mm256_add_epi32(a3, _mm256_mullo_epi32(v3, w));
        }
        _mm_storeu_si128((__m128i *)(out + k), pack16(a0, a1));
        _mm_storeu_si128((__m128i *)(out + k + 16), pack16(a2, a3));
    }
    if (k < n) {
        const uint8_t *tail[4096];
        int c = cnt < 4096 ? cnt : 4096;
        for (int j = 0; j < c; j++)
            tail[j] = rows[j] + k;
        if (c == cnt)
            g4v_resize_portable.vpass(tail, q, cnt, n - k, out + k);
        else /* absurdly many taps: the pointer table does not fit, go slowly */
            for (; k < n; k++) {
                int32_t acc = G4V_RS_HALF;
                for (int j = 0; j < cnt; j++)
                    acc += rows[j][k] * q[j];
                out[k] = g4v_rs_clip8(acc);
            }
    }
}

const g4v_resize_kernel g4v_resize_avx2 = {.hpass = hpass_avx2, .vpass = vpass_avx2};
