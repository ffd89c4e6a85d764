/* q8_pack_avx2.h - the INT8 A packer's per-row quantization (gemm_q8.h) on ymm, shared by the
 * AVX2 and AVX-VNNI INT8 kernels (folders x86_avx2/ and x86_avxvnni/, both built with AVX2).
 * Same operations as the scalar packer in the same order per element, so the same codes. */
#ifndef G4V_KERNELS_Q8_PACK_AVX2_H
#define G4V_KERNELS_Q8_PACK_AVX2_H

#include "kernels/gemm_kernel.h"
#include "kernels/gemm_q8.h"
#include "kernels/simd.h"

#include <stdint.h>
#include <string.h>

/* Row r of an A micro-panel p (mr rows, 4 codes per group): codes (+128 when u8), then its
 * scale. A row past the edge (xr NULL) gets codes 0 and scale 0. */
static inline void q8_pack_row_avx2(const float *xr, int klen, int kpad, unsigned char *p, int mr,
                                    int mrow, int u8, const g4v_pack_opts *o) {
    float amax = 0.0f, inv = 0.0f, scale = 0.0f;
    int full = xr ? klen / 8 * 8 : 0;
    __m256 lo = _mm256_set1_ps(o->lo), hi = _mm256_set1_ps(o->hi);
    __m256 sign = _mm256_set1_ps(-0.0f);
    if (xr) {
        __m256 vmax = _mm256_setzero_ps();
        for (int k = 0; k < full; k += 8) {
            __m256 v = _mm256_loadu_ps(xr + k);
            if (o->clamp) v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));
            vmax = _mm256_max_ps(_mm256_andnot_ps(sign, v), vmax); /* NaN keeps vmax */
        }
        float lanes[8];
        _mm256_storeu_ps(lanes, vmax);
        for (int i = 0; i < 8; i++)
            amax = lanes[i] > amax ? lanes[i] : amax;
        for (int k = full; k < klen; k++) {
            float a = fabsf(o->clamp ? g4v_clampf(xr[k], o->lo, o->hi) : xr[k]);
            amax = a > amax ? a : amax;
        }
        scale = g4v_q8_scale(amax, &inv);
    }
    __m256 vinv = _mm256_set1_ps(inv), qlo = _mm256_set1_ps(-127.0f), qhi = _mm256_set1_ps(127.0f);
    __m256i off = _mm256_set1_epi32(u8 ? 128 : 0);
    int32_t q[8];
    for (int k = 0; k < full; k += 8) {
        __m256 v = _mm256_loadu_ps(xr + k);
        if (o->clamp) v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));
        __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v, vinv), qlo), qhi);
        _mm256_storeu_si256((__m256i *)q, _mm256_add_epi32(_mm256_cvtps_epi32(t), off));
        for (int g = 0; g < 2; g++) {
            unsigned char *d = p + ((size_t)((k >> 2) + g) * (size_t)mr + (size_t)mrow) * 4;
            for (int j = 0; j < 4; j++)
                d[j] = (unsigned char)q[4 * g + j];
        }
    }
    for (int k = full; k < kpad; k++) {
        int8_t c = xr && k < klen
                       ? g4v_q8_code(o->clamp ? g4v_clampf(xr[k], o->lo, o->hi) : xr[k], inv)
                       : 0;
        p[((size_t)(k / 4) * (size_t)mr + (size_t)mrow) * 4 + (size_t)(k % 4)] =
            (unsigned char)(u8 ? c + 128 : c);
    }
    memcpy(p + (size_t)mr * (size_t)kpad + sizeof(float) * (size_t)mrow, &scale, sizeof scale);
}

/* The whole A packer (gemm_kernel.h's g4v_pack_a_fn) for a kernel of mr rows. */
static inline void q8_pack_a_avx2(const float *x, size_t ldx, int rows, int klen, int kpad,
                                  void *dst_, const g4v_pack_opts *o, int mr, int u8) {
    unsigned char *dst = dst_;
    size_t panel = (size_t)mr * (size_t)kpad + sizeof(float) * (size_t)mr;
    int prow = (rows + mr - 1) / mr * mr;
    for (int r = 0; r < prow; r++)
        q8_pack_row_avx2(r < rows ? x + (size_t)r * ldx : NULL, klen, kpad,
                         dst + (size_t)(r / mr) * panel, mr, r % mr, u8, o);
}

/* One 16-wide output row from two int32 accumulators: (float)acc · (sa · sw), then the
 * epilogue (clamp, accumulate) as every kernel applies it. */
static inline void q8_store_row_avx2(float *y, __m256i c0, __m256i c1, float sa, __m256 w0,
                                     __m256 w1, const g4v_ukr_epi *e) {
    __m256 s = _mm256_set1_ps(sa);
    __m256 v0 = _mm256_mul_ps(_mm256_cvtepi32_ps(c0), _mm256_mul_ps(s, w0));
    __m256 v1 = _mm256_mul_ps(_mm256_cvtepi32_ps(c1), _mm256_mul_ps(s, w1));
    if (e->clamp) {
        __m256 lo = _mm256_set1_ps(e->lo), hi = _mm256_set1_ps(e->hi);
        v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, v0));
        v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, v1));
    }
    if (e->accumulate) {
        v0 = _mm256_add_ps(_mm256_loadu_ps(y), v0);
        v1 = _mm256_add_ps(_mm256_loadu_ps(y + 8), v1);
    }
    _mm256_storeu_ps(y, v0);
    _mm256_storeu_ps(y + 8, v1);
}

#endif
