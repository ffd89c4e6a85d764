/* rmsnorm_row.h - the RMSNorm row kernel written once over the vector vocabulary of vec.h:
 * y = x * (mean(x^2) + eps)^-0.5 [* w] over one row of n floats (g4v_rmsnorm_row_fn, kernels.h).
 * An ISA file defines G4V_VEC_BITS and RMSNORM_ROW_NAME and includes this header once.
 *
 * The sum of squares is the only place where it differs from the portable kernel (which sums in
 * index order): element i goes to lane i mod 32 of 32 running FMA sums (8 q, 4 ymm or 2 zmm
 * accumulators: independent chains, so the FMA latency is hidden), then the 32 lanes are added
 * pairwise, lane i with lane i + 16, then i + 8, 4, 2, 1. That layout is the same at every width,
 * so the NEON, AVX2 and AVX-512 variants give the same bits; the longest chain is n/32 + 5
 * roundings instead of n, so it is as close to float64 as the sequential sum or closer (test_variants bounds
 * both). Everything after the sum is the portable kernel's arithmetic, operation for operation:
 * the scalar 1 / sqrtf(ss / n + eps), then (x * inv) * w per lane with no fused multiply-add. */
#ifndef G4V_KERNELS_VEC_RMSNORM_ROW_H
#define G4V_KERNELS_VEC_RMSNORM_ROW_H

#include "vec.h"

#include <math.h>

enum { RMS_LANES = 32, RMS_NACC = RMS_LANES / V_W };

/* Elements [i, n) (fewer than a vector) as one vector, zero beyond n: never reads past the row. */
static inline V_T rms_load_tail(const float *x, int i, int n) {
    float t[V_W] = {0};
    for (int j = i; j < n; j++)
        t[j - i] = x[j];
    return V_LOADU(t);
}

/* The 32 lane sums folded to one float: lane i plus lane i + 16, then + 8, + 4, + 2, + 1. The
 * first two steps differ by width (one zmm pair, or four ymm), the adds they make do not. */
static inline float rms_fold(const V_T acc[RMS_NACC]) {
#if G4V_VEC_BITS == 128 /* eight q registers: lanes 4a..4a+3 in acc[a] */
    float32x4_t s16[4], s8[2];
    for (int a = 0; a < 4; a++)
        s16[a] = vaddq_f32(acc[a], acc[a + 4]);
    s8[0] = vaddq_f32(s16[0], s16[2]);
    s8[1] = vaddq_f32(s16[1], s16[3]);
    float32x4_t s4 = vaddq_f32(s8[0], s8[1]);
    float32x2_t s2 = vadd_f32(vget_low_f32(s4), vget_high_f32(s4));
    return vget_lane_f32(s2, 0) + vget_lane_f32(s2, 1);
#else
#if G4V_VEC_BITS == 512
    __m512 s16 = _mm512_add_ps(acc[0], acc[1]);
    __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s16), 1)); /* AVX-512F */
    __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(s16), hi);
#else
    __m256 s8 = _mm256_add_ps(_mm256_add_ps(acc[0], acc[2]), _mm256_add_ps(acc[1], acc[3]));
#endif
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
#endif
}

void RMSNORM_ROW_NAME(const float *x, float *y, int n, const float *w, float eps) {
    V_T acc[RMS_NACC];
    for (int a = 0; a < RMS_NACC; a++)
        acc[a] = V_ZERO();
    int i = 0;
    for (; i + RMS_LANES <= n; i += RMS_LANES) {
        G4V_UNROLL(4)
        for (int a = 0; a < RMS_NACC; a++) {
            V_T v = V_LOADU(x + i + a * V_W);
            acc[a] = V_FMA(v, v, acc[a]);
        }
    }
    /* The last < 32 elements land in the same lanes (i is a multiple of 32); a zero pad adds
     * 0 * 0 = +0, which leaves a sum of squares unchanged. */
    for (int a = 0; i < n; a++, i += V_W) {
        V_T v = i + V_W <= n ? V_LOADU(x + i) : rms_load_tail(x, i, n);
        acc[a] = V_FMA(v, v, acc[a]);
    }
    float ss = rms_fold(acc);
    float inv = 1.0f / sqrtf(ss / (float)n + eps);
    V_T vinv = V_SET1(inv);
    for (i = 0; i + V_W <= n; i += V_W) {
        V_T v = V_MUL(V_LOADU(x + i), vinv);
        V_STOREU(y + i, w ? V_MUL(v, V_LOADU(w + i)) : v);
    }
    if (i < n) { /* the ragged end through a buffer, never touching past n */
        float t[V_W] = {0};
        V_T v = V_MUL(rms_load_tail(x, i, n), vinv);
        V_STOREU(t, w ? V_MUL(v, rms_load_tail(w, i, n)) : v);
        for (int j = i; j < n; j++)
            y[j] = t[j - i];
    }
}

#endif
