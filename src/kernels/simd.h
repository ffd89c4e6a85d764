/* simd.h - the x86 intrinsics of the ISA folders (x86_avx2/, x86_avx512/, x86_avx512bf16/),
 * native or emulated.
 *
 * Normally this is <immintrin.h>, and each ISA folder is compiled with its own -m flags (set per
 * folder in src/kernels/kernels.cmake). With G4V_SIMDE defined (test-only builds) the same kernel
 * sources are compiled against SIMDe's portable implementations instead, so the AVX-512 kernels'
 * indexing, packing and epilogues are tested on machines without AVX-512. SIMDe's vdpbf16ps adds
 * the two products of a pair before the accumulator, which hardware need not do: tests of the
 * emulated kernels therefore use the same error bound as the hardware ones.
 * Also defines G4V_UNROLL(n), a statement-like pragma asking for n-fold unrolling (it keeps small
 * accumulator arrays in registers; .clang-format knows it as a statement macro).
 */
#ifndef G4V_KERNELS_SIMD_H
#define G4V_KERNELS_SIMD_H

#ifdef G4V_SIMDE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <stdint.h>
#include <string.h>
#ifndef __mmask16
typedef simde__mmask16 __mmask16_g4v;
#define __mmask16 __mmask16_g4v
#endif
/* Reinterpret 32-bit lanes holding bf16 pairs as the vdpbf16ps operand type. */
static inline __m512bh g4v_as_bh(__m512i v) {
    __m512bh r;
    memcpy(&r, &v, sizeof r);
    return r;
}
/* vpmovdw (truncate 32 -> 16 bits), missing from SIMDe 0.7. */
static inline __m256i g4v_simde_cvtepi32_epi16(__m512i v) {
    int32_t in[16];
    int16_t out[16];
    memcpy(in, &v, sizeof in);
    for (int i = 0; i < 16; i++)
        out[i] = (int16_t)in[i];
    __m256i r;
    memcpy(&r, out, sizeof r);
    return r;
}
#define _mm512_cvtepi32_epi16 g4v_simde_cvtepi32_epi16
/* vcvtps2dq (float -> int32, nearest even), missing from SIMDe 0.7; only ever given integers. */
static inline __m512i g4v_simde_cvtps_epi32(__m512 v) {
    float in[16];
    int32_t out[16];
    memcpy(in, &v, sizeof in);
    for (int i = 0; i < 16; i++)
        out[i] = (int32_t)__builtin_rintf(in[i]);
    __m512i r;
    memcpy(&r, out, sizeof r);
    return r;
}
#define _mm512_cvtps_epi32 g4v_simde_cvtps_epi32
/* vcvtdq2ps (int32 -> float, nearest even), missing from SIMDe 0.7 (the INT8 dequantization). */
static inline __m512 g4v_simde_cvtepi32_ps(__m512i v) {
    int32_t in[16];
    float out[16];
    memcpy(in, &v, sizeof in);
    for (int i = 0; i < 16; i++)
        out[i] = (float)in[i];
    __m512 r;
    memcpy(&r, out, sizeof r);
    return r;
}
#define _mm512_cvtepi32_ps g4v_simde_cvtepi32_ps
#ifndef _MM_FROUND_NO_EXC /* SIMDe 0.7 has only the prefixed name */
#define _MM_FROUND_NO_EXC SIMDE_MM_FROUND_NO_EXC
#endif
/* Emulated kernels keep their loops rolled: unrolled SIMDe code compiles very slowly. */
#define G4V_UNROLL(n)
#else
#include <immintrin.h>
#define g4v_as_bh(v) ((__m512bh)(v))
#define G4V_PRAGMA(x) _Pragma(#x)
#define G4V_UNROLL(n) G4V_PRAGMA(GCC unroll n)
#endif

#endif
