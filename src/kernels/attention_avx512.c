/* attention_avx512.c - flash-style attention with AVX-512F (same contract as attention.c): the
 * task of attention_tile.h on 16-float zmm vectors, 48 queries per task. f32 throughout, like the
 * AVX2 variant (bf16 dot products would round q, k and the probabilities, which the scale-1
 * logits amplify: DESIGN.md "Numerics"). Compiled with the AVX-512 flags (isa_flags.cmake);
 * called only when CPUID reports AVX-512. Also compiled against SIMDe (G4V_GEMM_SIMDE) by
 * test_attention_simde, which checks it on machines without AVX-512.
 */
#include "attention_isa.h"

#ifdef G4V_ATTN_HAVE_X86
#include "exp_avx512.h"
#include "gemm_simd.h"

#define AV_T __m512
#define AV_W 16
#define AV_ZERO() _mm512_setzero_ps()
#define AV_SET1(x) _mm512_set1_ps(x)
#define AV_LOAD(p) _mm512_load_ps(p)
#define AV_STORE(p, v) _mm512_store_ps(p, v)
#define AV_BCAST(p) _mm512_set1_ps(*(p))
#define AV_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define AV_MUL(a, b) _mm512_mul_ps(a, b)
#define AV_SUB(a, b) _mm512_sub_ps(a, b)
#define AV_ADD(a, b) _mm512_add_ps(a, b)
#define AV_MAX(a, b) _mm512_max_ps(a, b)
#define AV_EXPNP(x) exp_nonpos_ps512(x)
#define AV_NAME g4v_attention_avx512
#include "attention_tile.h"

#endif
