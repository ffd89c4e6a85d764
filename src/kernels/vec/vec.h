/* vec.h - the vector vocabulary for kernels written once over vector width.
 *
 * A kernel file in an ISA folder defines G4V_VEC_BITS (256: AVX2 + FMA ymm, 512: AVX-512F zmm,
 * 128: ARM64 NEON q registers) and includes this header, then a width-generic body from this
 * folder (attention_tile.h, geglu_row.h, vec_exp.h). Each V_* operation is one instruction (or a fixed short sequence) with
 * the same IEEE result per lane at every width, so a body instantiated at 256 and at 512 bits
 * computes the same bits per lane; only the number of lanes differs.
 *
 *   V_T, VI_T          float / int32 vector; V_W floats per vector
 *   V_ZERO, V_SET1     constants;  VI_SET1
 *   V_LOAD, V_STORE    aligned;  V_LOADU, V_STOREU unaligned;  V_BCAST(p) = *p in every lane
 *   V_ADD, V_SUB, V_MUL, V_DIV, V_MAX, V_MIN
 *   V_FMA(a, b, c)     a * b + c, one rounding;  V_FNMA(a, b, c) = c - a * b, one rounding
 *   V_ROUND(x)         to the nearest integer (ties to even), as a float
 *   V_CVT_I(x)         float -> int32 (nearest);  V_AS_I / V_AS_F reinterpret the bits
 *   VI_ADD, VI_SLLI    int32 add, shift left by a constant
 *   V_ZERO_IF_LT(y, x, lo)   y with the lanes where x < lo (ordered) set to +0
 */
#ifndef G4V_KERNELS_VEC_VEC_H
#define G4V_KERNELS_VEC_VEC_H

#if G4V_VEC_BITS == 128
#include <arm_neon.h>
#define G4V_PRAGMA(x) _Pragma(#x)
#define G4V_UNROLL(n) G4V_PRAGMA(GCC unroll n)
#else
#include "kernels/simd.h"
#endif

#if G4V_VEC_BITS == 128
/* NEON: max/min are the *nm forms, which return the number when one operand is NaN, as the x86
 * max/min return their second operand (vec_exp's clamps then send NaN to the clamp bound). */
#define V_T float32x4_t
#define VI_T int32x4_t
#define V_W 4
#define V_ZERO() vdupq_n_f32(0.0f)
#define V_SET1(x) vdupq_n_f32(x)
#define VI_SET1(x) vdupq_n_s32(x)
#define V_LOAD(p) vld1q_f32(p)
#define V_STORE(p, v) vst1q_f32(p, v)
#define V_LOADU(p) vld1q_f32(p)
#define V_STOREU(p, v) vst1q_f32(p, v)
#define V_BCAST(p) vld1q_dup_f32(p)
#define V_ADD(a, b) vaddq_f32(a, b)
#define V_SUB(a, b) vsubq_f32(a, b)
#define V_MUL(a, b) vmulq_f32(a, b)
#define V_DIV(a, b) vdivq_f32(a, b)
#define V_MAX(a, b) vmaxnmq_f32(a, b)
#define V_MIN(a, b) vminnmq_f32(a, b)
#define V_FMA(a, b, c) vfmaq_f32(c, a, b)
#define V_FNMA(a, b, c) vfmsq_f32(c, a, b)
#define V_ROUND(x) vrndnq_f32(x)
#define V_CVT_I(x) vcvtnq_s32_f32(x)
#define V_AS_I(x) vreinterpretq_s32_f32(x)
#define V_AS_F(x) vreinterpretq_f32_s32(x)
#define VI_ADD(a, b) vaddq_s32(a, b)
#define VI_SLLI(a, n) vshlq_n_s32(a, n)
#define V_ZERO_IF_LT(y, x, lo)                                                                     \
    vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), vcltq_f32(x, lo)))
#elif G4V_VEC_BITS == 256
#define V_T __m256
#define VI_T __m256i
#define V_W 8
#define V_ZERO() _mm256_setzero_ps()
#define V_SET1(x) _mm256_set1_ps(x)
#define VI_SET1(x) _mm256_set1_epi32(x)
#define V_LOAD(p) _mm256_load_ps(p)
#define V_STORE(p, v) _mm256_store_ps(p, v)
#define V_LOADU(p) _mm256_loadu_ps(p)
#define V_STOREU(p, v) _mm256_storeu_ps(p, v)
#define V_BCAST(p) _mm256_broadcast_ss(p)
#define V_ADD(a, b) _mm256_add_ps(a, b)
#define V_SUB(a, b) _mm256_sub_ps(a, b)
#define V_MUL(a, b) _mm256_mul_ps(a, b)
#define V_DIV(a, b) _mm256_div_ps(a, b)
#define V_MAX(a, b) _mm256_max_ps(a, b)
#define V_MIN(a, b) _mm256_min_ps(a, b)
#define V_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define V_FNMA(a, b, c) _mm256_fnmadd_ps(a, b, c)
#define V_ROUND(x) _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_CVT_I(x) _mm256_cvtps_epi32(x)
#define V_AS_I(x) _mm256_castps_si256(x)
#define V_AS_F(x) _mm256_castsi256_ps(x)
#define VI_ADD(a, b) _mm256_add_epi32(a, b)
#define VI_SLLI(a, n) _mm256_slli_epi32(a, n)
#define V_ZERO_IF_LT(y, x, lo) _mm256_andnot_ps(_mm256_cmp_ps(x, lo, _CMP_LT_OQ), y)
#elif G4V_VEC_BITS == 512
#define V_T __m512
#define VI_T __m512i
#define V_W 16
#define V_ZERO() _mm512_setzero_ps()
#define V_SET1(x) _mm512_set1_ps(x)
#define VI_SET1(x) _mm512_set1_epi32(x)
#define V_LOAD(p) _mm512_load_ps(p)
#define V_STORE(p, v) _mm512_store_ps(p, v)
#define V_LOADU(p) _mm512_loadu_ps(p)
#define V_STOREU(p, v) _mm512_storeu_ps(p, v)
#define V_BCAST(p) _mm512_set1_ps(*(p))
#define V_ADD(a, b) _mm512_add_ps(a, b)
#define V_SUB(a, b) _mm512_sub_ps(a, b)
#define V_MUL(a, b) _mm512_mul_ps(a, b)
#define V_DIV(a, b) _mm512_div_ps(a, b)
#define V_MAX(a, b) _mm512_max_ps(a, b)
#define V_MIN(a, b) _mm512_min_ps(a, b)
#define V_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define V_FNMA(a, b, c) _mm512_fnmadd_ps(a, b, c)
#define V_ROUND(x) _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define V_CVT_I(x) _mm512_cvtps_epi32(x)
#define V_AS_I(x) _mm512_castps_si512(x)
#define V_AS_F(x) _mm512_castsi512_ps(x)
#define VI_ADD(a, b) _mm512_add_epi32(a, b)
#define VI_SLLI(a, n) _mm512_slli_epi32(a, n)
#define V_ZERO_IF_LT(y, x, lo) _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ), y)
#else
#error "define G4V_VEC_BITS as 128, 256 or 512 before including kernels/vec/vec.h"
#endif

#endif
