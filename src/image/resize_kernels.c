/* resize_kernels.c - the inner loops of the Pillow-exact resize: portable C and AVX2.
 *
 * Horizontal pass: 8 image rows at once, one 32-bit lane per row. The rows are first
 * interleaved byte by byte (t[k*8 + lane] = row[lane][k]), so one output sample of all 8 rows is
 * 8 adjacent accumulators and every tap is a broadcast weight times 24 contiguous bytes (R, G,
 * B of one source pixel in 8 rows). Results go to an interleaved buffer and are spread back to
 * the 8 rows afterwards (g4v_rs_deinterleave). Vertical pass: along the row, 32 bytes at a time.
 * All arithmetic is Pillow's: int32 accumulators starting at 2^21, arithmetic shift by 22,
 * clamp to 0..255 (the AVX2 path clamps with saturating packs, which is the same). The AVX2
 * code is used when g4v_cpu_features() reports AVX2 (G4V_ISA=portable forces the C path); the
 * tests check both give identical bytes.
 */
#include "image/image_internal.h"

#include "base/cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define G4V_RS_X86 1
#include <immintrin.h>
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define L G4V_RS_LANES
#define HALF (1 << 21)
#define VCHUNK 256

static inline uint8_t clip8(int32_t v) {
    v >>= 22; /* arithmetic shift: floor, as in Pillow */
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* ---- portable C ---------------------------------------------------------------------------- */

static void hpass_portable(const uint8_t *t, const g4v_coeffs *cx, uint8_t *u) {
    for (int x = 0; x < cx->n_out; x++) {
        int32_t acc[3 * L];
        for (int i = 0; i < 3 * L; i++) acc[i] = HALF;
        const uint8_t *s = t + (size_t)cx->lo[x] * 3 * L;
        const int32_t *q = cx->q + (size_t)x * cx->ksize;
        for (int j = 0, cnt = cx->cnt[x]; j < cnt; j++) {
            const int32_t w = q[j];
            const uint8_t *sj = s + (size_t)j * 3 * L;
            for (int i = 0; i < 3 * L; i++) acc[i] += sj[i] * w;
        }
        for (int i = 0; i < 3 * L; i++) u[(size_t)x * 3 * L + i] = clip8(acc[i]);
    }
}

static void vpass_portable(const uint8_t *const *rows, const int32_t *q, int cnt, size_t n,
                           uint8_t *out) {
    for (size_t k0 = 0; k0 < n; k0 += VCHUNK) {
        size_t m = n - k0 < VCHUNK ? n - k0 : VCHUNK;
        int32_t acc[VCHUNK];
        for (size_t i = 0; i < m; i++) acc[i] = HALF;
        for (int j = 0; j < cnt; j++) {
            const uint8_t *r = rows[j] + k0;
            const int32_t w = q[j];
            for (size_t i = 0; i < m; i++) acc[i] += r[i] * w;
        }
        for (size_t i = 0; i < m; i++) out[k0 + i] = clip8(acc[i]);
    }
}

static const g4v_rs_kernels portable = {hpass_portable, vpass_portable, "portable"};

/* ---- AVX2 ---------------------------------------------------------------------------------- */
#ifdef G4V_RS_X86
/* 8 int32 >> 22, then saturate to int16 and to uint8: the clamp to 0..255. Packs work per
 * 128-bit half, so the permute puts the 16 bytes of (a, b) back in order. */
__attribute__((target("avx2"))) static inline __m128i pack16(__m256i a, __m256i b) {
    __m256i s = _mm256_packs_epi32(_mm256_srai_epi32(a, 22), _mm256_srai_epi32(b, 22));
    s = _mm256_permute4x64_epi64(s, 0xD8);
    return _mm_packus_epi16(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
}

__attribute__((target("avx2"))) static void hpass_avx2(const uint8_t *t, const g4v_coeffs *cx,
                                                      uint8_t *u) {
    const __m256i half = _mm256_set1_epi32(HALF);
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

__attribute__((target("avx2"))) static void vpass_avx2(const uint8_t *const *rows,
                                                      const int32_t *q, int cnt, size_t n,
                                                      uint8_t *out) {
    const __m256i half = _mm256_set1_epi32(HALF);
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
        for (int j = 0; j < c; j++) tail[j] = rows[j] + k;
        if (c == cnt)
            vpass_portable(tail, q, cnt, n - k, out + k);
        else /* absurdly many taps: the pointer table does not fit, go slowly */
            for (; k < n; k++) {
                int32_t acc = HALF;
                for (int j = 0; j < cnt; j++) acc += rows[j][k] * q[j];
                out[k] = clip8(acc);
            }
    }
}

static const g4v_rs_kernels avx2 = {hpass_avx2, vpass_avx2, "avx2"};
#endif

const g4v_rs_kernels *g4v_rs_kernels_get(void) {
#ifdef G4V_RS_X86
    if (g4v_cpu_features() & G4V_CPU_AVX2) return &avx2;
#endif
    return &portable;
}

/* ---- interleaving (pure data movement: SSE2 where available, C otherwise) ------------------ */

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
        for (int l = 0; l < 8; l++) r[l] = _mm_loadu_si128((const __m128i *)(rows[l] + k));
        transpose_8x16(r, o);
        for (int v = 0; v < 8; v++) _mm_storeu_si128((__m128i *)(t + k * 8) + v, o[v]);
    }
#endif
    for (; k < n; k++)
        for (int l = 0; l < L; l++) t[k * L + l] = rows[l][k];
}

void g4v_rs_deinterleave(const uint8_t *t, size_t n, uint8_t *const *rows) {
    size_t k = 0;
#if defined(__SSE2__) && L == 8
    /* Transposing the 8 vectors that hold bytes k..k+15 of all lanes puts lane l's even bytes
     * at 8l and its odd bytes at 64 + 8l; one more unpack joins them. */
    for (; k + 16 <= n; k += 16) {
        __m128i v[8], o[8];
        for (int i = 0; i < 8; i++) v[i] = _mm_loadu_si128((const __m128i *)(t + k * 8) + i);
        transpose_8x16(v, o);
        for (int l = 0; l < 8; l++) {
            __m128i lo = o[l / 2], hi = o[4 + l / 2];
            __m128i r = l & 1 ? _mm_unpackhi_epi8(lo, hi) : _mm_unpacklo_epi8(lo, hi);
            _mm_storeu_si128((__m128i *)(rows[l] + k), r);
        }
    }
#endif
    for (; k < n; k++)
        for (int l = 0; l < L; l++) rows[l][k] = t[k * L + l];
}
