/* bf16_round.h - the AVX512_BF16 pair conversion (vcvtne2ps2bf16) shared by this folder's
 * kernels; the integer rounding (bf16_bits) is x86_avx512/avx512.h's, shared with the AVX-512
 * GEMM. */
#ifndef G4V_KERNELS_BF16_ROUND_H
#define G4V_KERNELS_BF16_ROUND_H

#include "kernels/x86_avx512/avx512.h"

/* The bf16 pairs (lo[i], hi[i]) of two vectors, lane i's low half from lo: vcvtne2ps2bf16 (nearest,
 * ties to even; it treats subnormal inputs as zero) and a 16-bit interleave. For the softmax's
 * probabilities, which are normal, it gives bf16_bits' roundings. */
#ifdef G4V_SIMDE
static inline __m512i bf16_pairs(__m512 lo, __m512 hi) { /* SIMDe 0.7 has no vcvtne2ps2bf16 */
    uint32_t u[2][16], out[16];
    memcpy(u[0], &lo, sizeof u[0]);
    memcpy(u[1], &hi, sizeof u[1]);
    for (int i = 0; i < 16; i++) {
        uint32_t half[2];
        for (int h = 0; h < 2; h++) {
            uint32_t x = u[h][i];
            if ((x & 0x7fffffffu) > 0x7f800000u)
                half[h] = (x >> 16) | 0x40u; /* NaN: quiet */
            else if ((x & 0x7f800000u) == 0)
                half[h] = (x >> 16) & 0x8000u; /* subnormal input: signed zero */
            else
                half[h] = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
        }
        out[i] = half[0] | half[1] << 16;
    }
    __m512i r;
    memcpy(&r, out, sizeof r);
    return r;
}
#else
static inline __m512i bf16_pairs(__m512 lo, __m512 hi) {
    /* [lo_0 .. lo_15 | hi_0 .. hi_15] as 16-bit lanes, then lane 2i = lo_i, 2i + 1 = hi_i */
    __m512i w = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24,
                                         8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(idx, w);
}
#endif

#endif
