/* bf16_round.h - f32 -> bf16 rounding on zmm vectors, shared by the AVX512_BF16 kernels of this
 * folder (GEMM A packing, attention). Integer arithmetic, so it matches g4v_f32_to_bf16
 * (base/dtype.h) bit for bit, subnormals and NaN included, emulated (SIMDe) or native. */
#ifndef G4V_KERNELS_BF16_ROUND_H
#define G4V_KERNELS_BF16_ROUND_H

#include "kernels/simd.h"

/* The bf16 bits of each lane (nearest, ties to even; NaN -> quiet NaN) in its low 16 bits. */
static inline __m512i bf16_bits(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    r = _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
    return _mm512_srli_epi32(r, 16);
}

#endif
