/* attention_avx2.c - flash-style attention with AVX2 + FMA (same contract as attention.c): the
 * task of attention_tile.h on 8-float ymm vectors, 24 queries per task.
 * Compiled with -mavx2 -mfma (isa_flags.cmake); called only when CPUID reports both.
 */
#include "attention_isa.h"

#ifdef G4V_ATTN_HAVE_X86
#include "exp_avx2.h"
#include "gemm_simd.h"

#define AV_T __m256
#define AV_W 8
#define AV_ZERO() _mm256_setzero_ps()
#define AV_SET1(x) _mm256_set1_ps(x)
#define AV_LOAD(p) _mm256_load_ps(p)
#define AV_STORE(p, v) _mm256_store_ps(p, v)
#define AV_BCAST(p) _mm256_broadcast_ss(p)
#define AV_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define AV_MUL(a, b) _mm256_mul_ps(a, b)
#define AV_SUB(a, b) _mm256_sub_ps(a, b)
#define AV_ADD(a, b) _mm256_add_ps(a, b)
#define AV_MAX(a, b) _mm256_max_ps(a, b)
#define AV_EXPNP(x) exp_nonpos_ps(x)
#define AV_NAME g4v_attention_avx2
#include "attention_tile.h"

/* y = exp(x) through either vector exp, the ragged end through a zero-padded buffer. */
static void exp_array(const float *x, float *y, size_t n, int nonpos) {
    for (size_t i = 0; i < n; i += 8) {
        float bx[8] = {0}, by[8];
        size_t w = n - i < 8 ? n - i : 8;
        for (size_t t = 0; t < w; t++)
            bx[t] = x[i + t];
        __m256 v = _mm256_loadu_ps(bx);
        _mm256_storeu_ps(by, nonpos ? exp_nonpos_ps(v) : exp_ps(v));
        for (size_t t = 0; t < w; t++)
            y[i + t] = by[t];
    }
}

void g4v_exp_avx2(const float *x, float *y, size_t n) {
    exp_array(x, y, n, 0);
}

void g4v_exp_nonpos_avx2(const float *x, float *y, size_t n) {
    exp_array(x, y, n, 1);
}

#endif
