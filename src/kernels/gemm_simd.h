/* gemm_simd.h - the x86 intrinsics the per-ISA GEMM files use, native or emulated.
 *
 * Normally this is <immintrin.h> and each ISA file is compiled with its own -m flags
 * (isa_flags.cmake). With G4V_GEMM_SIMDE defined (a test-only build) the same kernel source is
 * compiled against SIMDe's portable implementations instead, so the AVX-512 kernels' indexing,
 * packing and epilogues can be tested on a machine without AVX-512. SIMDe's vdpbf16ps adds the two
 * products of a pair before the accumulator, which hardware need not do: tests of the emulated
 * kernels therefore use the same error bound as the hardware ones.
 */
#ifndef G4V_KERNELS_GEMM_SIMD_H
#define G4V_KERNELS_GEMM_SIMD_H

#ifdef G4V_GEMM_SIMDE
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
#ifndef _MM_FROUND_NO_EXC /* used by exp_avx2.h; SIMDe 0.7 has only the prefixed name */
#define _MM_FROUND_NO_EXC SIMDE_MM_FROUND_NO_EXC
#endif
/* Emulated kernels keep their loops rolled: unrolled SIMDe code compiles very slowly. */
#define G4V_UNROLL(n)
#else
#include <immintrin.h>
#define g4v_as_bh(v) ((__m512bh)(v))
/* Full unrolling keeps the accumulator arrays in registers. */
#define G4V_PRAGMA(x) _Pragma(#x)
#define G4V_UNROLL(n) G4V_PRAGMA(GCC unroll n)
#endif

#endif
