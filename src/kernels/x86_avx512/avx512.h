/* avx512.h - zmm helpers shared by the AVX-512 kernels (this folder and x86_avx512bf16/, whose
 * flags include these): f32 -> bf16 rounding and the GEMM micro-kernels' row store. Integer
 * rounding, so it matches g4v_round_bf16 / g4v_f32_to_bf16 (base/dtype.h) bit for bit,
 * subnormals and NaN included, emulated (SIMDe) or native. */
#ifndef G4V_KERNELS_AVX512_H
#define G4V_KERNELS_AVX512_H

#include "kernels/gemm_kernel.h"
#include "kernels/simd.h"

/* Each lane rounded to the nearest bf16 (ties to even; NaN -> quiet NaN), the bf16 bits in its
 * high 16 bits and garbage in the low 16. */
static inline __m512i bf16_round_hi(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    return _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
}

/* The bf16 bits of each lane in its low 16 bits. */
static inline __m512i bf16_bits(__m512 v) {
    return _mm512_srli_epi32(bf16_round_hi(v), 16);
}

/* Each lane rounded to bf16 and kept as f32 (g4v_round_bf16). */
static inline __m512 round_bf16(__m512 v) {
    return _mm512_castsi512_ps(
        _mm512_and_si512(bf16_round_hi(v), _mm512_set1_epi32((int)0xffff0000u)));
}

/* One row of a 32-wide GEMM tile (v0, v1) to y: clamped, added to y, as the epilogue says. */
static inline void store_row(float *y, __m512 v0, __m512 v1, const g4v_ukr_epi *e) {
    if (e->clamp) {
        __m512 lo = _mm512_set1_ps(e->lo), hi = _mm512_set1_ps(e->hi);
        v0 = _mm512_min_ps(hi, _mm512_max_ps(lo, v0));
        v1 = _mm512_min_ps(hi, _mm512_max_ps(lo, v1));
    }
    if (e->accumulate) {
        v0 = _mm512_add_ps(_mm512_loadu_ps(y), v0);
        v1 = _mm512_add_ps(_mm512_loadu_ps(y + 16), v1);
    }
    _mm512_storeu_ps(y, v0);
    _mm512_storeu_ps(y + 16, v1);
}

#endif
