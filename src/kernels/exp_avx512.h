/* exp_avx512.h - the softmax's exp (exp_nonpos_ps of exp_avx2.h) on 16-float zmm vectors: the
 * same instructions lane for lane, so both give the same bits. Include only from files compiled
 * with the AVX-512 flags of isa_flags.cmake (or through gemm_simd.h in the SIMDe test build). */
#ifndef G4V_KERNELS_EXP_AVX512_H
#define G4V_KERNELS_EXP_AVX512_H

#include "gemm_simd.h"

/* exp(x) for x <= 0; below -87.336 (and -inf, NaN) ~FLT_MIN. See exp_nonpos_ps. */
static inline __m512 exp_nonpos_ps512(__m512 x) {
    const __m512 magic = _mm512_set1_ps(12582912.0f); /* 1.5 * 2^23, bits 0x4b400000 */
    x = _mm512_max_ps(x, _mm512_set1_ps(-87.33654f));
    __m512 t = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), magic);
    __m512 n = _mm512_sub_ps(t, magic);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    __m512i e = _mm512_slli_epi32(
        _mm512_add_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(127 - 0x4b400000)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
}

#endif
