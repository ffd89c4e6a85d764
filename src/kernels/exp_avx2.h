/* exp_avx2.h - vectorised expf for the AVX2 kernels (GeGLU; the softmax's non-positive case).
 * Include only from files compiled with -mavx2 -mfma (isa_flags.cmake). Accuracy: <= 1 ulp vs the
 * correctly rounded exp over [-87.3, 88] (measured in test_attention, bound checked at 2 ulp). */
#ifndef G4V_KERNELS_EXP_AVX2_H
#define G4V_KERNELS_EXP_AVX2_H

#include "gemm_simd.h" /* <immintrin.h>, or SIMDe in the emulated test builds */

/* e^r for x = n ln2 + r: r from x and n with ln2 split in two (so n ln2 is exact enough),
 * e^r by Cephes' degree-7 expf polynomial. The scale 2^n is applied by the callers. */
static inline __m256 exp_reduced_poly(__m256 x, __m256 n) {
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    return _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
}

/* exp(x) for x <= 88: n = round(x / ln2), e^r (exp_reduced_poly), times 2^n built in the exponent
 * bits. Results below FLT_MIN (x < -87.336) are flushed to 0, which also covers -inf. */
static inline __m256 exp_ps(__m256 x) {
    const __m256 lo = _mm256_set1_ps(-87.33654f);
    __m256 tiny = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(88.0f));
    __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 p = exp_reduced_poly(x, n);
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)),
                                  23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(tiny, y);
}

/* exp(x) for x <= 0, the softmax's exp(logit - running max): exp_ps with four fewer instructions
 * (it runs once per query x key, ~15% of the attention's instructions). No upper clamp; x below
 * -87.336 (also -inf and NaN) is raised to -87.336 instead of being flushed, so the result is
 * ~FLT_MIN rather than 0: invisible in a softmax sum whose largest term is 1. n = round(x log2 e)
 * comes from adding 1.5 * 2^23, which leaves n in the low bits of t, so 2^n is built from t's
 * bits without a float-to-int conversion. */
static inline __m256 exp_nonpos_ps(__m256 x) {
    const __m256 magic = _mm256_set1_ps(12582912.0f); /* 1.5 * 2^23, bits 0x4b400000 */
    x = _mm256_max_ps(x, _mm256_set1_ps(-87.33654f));
    __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), magic);
    __m256 p = exp_reduced_poly(x, _mm256_sub_ps(t, magic));
    __m256i e = _mm256_slli_epi32(
        _mm256_add_epi32(_mm256_castps_si256(t), _mm256_set1_epi32(127 - 0x4b400000)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

#endif
