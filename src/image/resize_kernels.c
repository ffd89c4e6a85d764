/* resize_kernels.c - the inner loops of the Pillow-exact resize, portable C built twice.
 *
 * The loops are written so the compiler vectorises them: the horizontal pass runs 8 image rows at
 * once (one int32 lane per row, the rows interleaved byte by byte beforehand), the vertical pass
 * runs along the row. The same source is compiled for the baseline ISA and, on x86-64, with
 * target("avx2"); the arithmetic is integer, so both give identical bytes (tests compare them).
 * The choice follows g4v_cpu_features(), so G4V_ISA=portable forces the baseline.
 */
#include "image/image_internal.h"

#include "base/cpu.h"

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

static inline __attribute__((always_inline)) void
hpass_body(const uint8_t *t, const g4v_coeffs *cx, uint8_t *const *out, int n_lanes) {
    for (int x = 0; x < cx->n_out; x++) {
        int32_t acc[3 * L];
        for (int i = 0; i < 3 * L; i++) acc[i] = HALF;
        const uint8_t *s = t + (size_t)cx->lo[x] * 3 * L;
        const int32_t *q = cx->q + (size_t)x * cx->ksize;
        int cnt = cx->cnt[x];
        for (int j = 0; j < cnt; j++) {
            const int32_t w = q[j];
            const uint8_t *sj = s + (size_t)j * 3 * L;
            for (int i = 0; i < 3 * L; i++) acc[i] += sj[i] * w;
        }
        uint8_t px[3 * L];
        for (int i = 0; i < 3 * L; i++) px[i] = clip8(acc[i]);
        for (int l = 0; l < n_lanes; l++) {
            uint8_t *o = out[l] + 3 * (size_t)x;
            o[0] = px[l];
            o[1] = px[L + l];
            o[2] = px[2 * L + l];
        }
    }
}

static inline __attribute__((always_inline)) void
vpass_body(const uint8_t *const *rows, const int32_t *q, int cnt, size_t n, uint8_t *out) {
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

static void hpass_portable(const uint8_t *t, const g4v_coeffs *cx, uint8_t *const *out,
                           int n_lanes) {
    hpass_body(t, cx, out, n_lanes);
}

static void vpass_portable(const uint8_t *const *rows, const int32_t *q, int cnt, size_t n,
                           uint8_t *out) {
    vpass_body(rows, q, cnt, n, out);
}

static const g4v_rs_kernels portable = {hpass_portable, vpass_portable, "portable"};

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void
hpass_avx2(const uint8_t *t, const g4v_coeffs *cx, uint8_t *const *out, int n_lanes) {
    hpass_body(t, cx, out, n_lanes);
}

__attribute__((target("avx2"))) static void
vpass_avx2(const uint8_t *const *rows, const int32_t *q, int cnt, size_t n, uint8_t *out) {
    vpass_body(rows, q, cnt, n, out);
}

static const g4v_rs_kernels avx2 = {hpass_avx2, vpass_avx2, "avx2"};
#endif

const g4v_rs_kernels *g4v_rs_kernels_get(void) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (g4v_cpu_features() & G4V_CPU_AVX2) return &avx2;
#endif
    return &portable;
}

void g4v_rs_interleave(const uint8_t *const *rows, size_t n, uint8_t *t) {
    size_t k = 0;
#if defined(__SSE2__) && L == 8
    /* 8 rows x 16 bytes -> 16 columns x 8 bytes: three rounds of unpacking. */
    for (; k + 16 <= n; k += 16) {
        __m128i r0 = _mm_loadu_si128((const __m128i *)(rows[0] + k));
        __m128i r1 = _mm_loadu_si128((const __m128i *)(rows[1] + k));
        __m128i r2 = _mm_loadu_si128((const __m128i *)(rows[2] + k));
        __m128i r3 = _mm_loadu_si128((const __m128i *)(rows[3] + k));
        __m128i r4 = _mm_loadu_si128((const __m128i *)(rows[4] + k));
        __m128i r5 = _mm_loadu_si128((const __m128i *)(rows[5] + k));
        __m128i r6 = _mm_loadu_si128((const __m128i *)(rows[6] + k));
        __m128i r7 = _mm_loadu_si128((const __m128i *)(rows[7] + k));
        __m128i a0 = _mm_unpacklo_epi8(r0, r1), a1 = _mm_unpackhi_epi8(r0, r1);
        __m128i b0 = _mm_unpacklo_epi8(r2, r3), b1 = _mm_unpackhi_epi8(r2, r3);
        __m128i c0 = _mm_unpacklo_epi8(r4, r5), c1 = _mm_unpackhi_epi8(r4, r5);
        __m128i d0 = _mm_unpacklo_epi8(r6, r7), d1 = _mm_unpackhi_epi8(r6, r7);
        __m128i e0 = _mm_unpacklo_epi16(a0, b0), e1 = _mm_unpackhi_epi16(a0, b0);
        __m128i e2 = _mm_unpacklo_epi16(a1, b1), e3 = _mm_unpackhi_epi16(a1, b1);
        __m128i f0 = _mm_unpacklo_epi16(c0, d0), f1 = _mm_unpackhi_epi16(c0, d0);
        __m128i f2 = _mm_unpacklo_epi16(c1, d1), f3 = _mm_unpackhi_epi16(c1, d1);
        __m128i *o = (__m128i *)(t + k * 8);
        _mm_storeu_si128(o + 0, _mm_unpacklo_epi32(e0, f0));
        _mm_storeu_si128(o + 1, _mm_unpackhi_epi32(e0, f0));
        _mm_storeu_si128(o + 2, _mm_unpacklo_epi32(e1, f1));
        _mm_storeu_si128(o + 3, _mm_unpackhi_epi32(e1, f1));
        _mm_storeu_si128(o + 4, _mm_unpacklo_epi32(e2, f2));
        _mm_storeu_si128(o + 5, _mm_unpackhi_epi32(e2, f2));
        _mm_storeu_si128(o + 6, _mm_unpacklo_epi32(e3, f3));
        _mm_storeu_si128(o + 7, _mm_unpackhi_epi32(e3, f3));
    }
#endif
    for (; k < n; k++)
        for (int l = 0; l < L; l++) t[k * L + l] = rows[l][k];
}
