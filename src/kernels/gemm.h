/* gemm.h - y = x · Wᵀ for the encoder's linears, with weights prepared once per model.
 *
 * W is stored [N, K] (PyTorch Linear layout: N outputs, K inputs) in BF16/F16/F32. g4v_wmat_create
 * prepares it once (packing into whatever layout the fastest available kernel wants); the result is
 * immutable and shared by threads. g4v_gemm computes, for every row m < M and output n < N:
 *
 *     x' = clamp(X[m, :], epi.in_lo, epi.in_hi)            (identity when the bounds are ±inf)
 *     x' = mode == FAST ? bf16(x') : x'                     (round-to-nearest-even)
 *     acc = Σ_k x'[k] · W[n, k]                             (f32 accumulation, W exact as stored)
 *     y  = clamp(acc, epi.out_lo, epi.out_hi)
 *     Y[m, n] = epi.accumulate ? Y[m, n] + y : y
 *
 * The summation order is fixed per (m, n) regardless of thread count, so results are
 * bit-identical for any pool size. g4v_gemm_ref is the portable specification in code; every fast
 * kernel is tested against it.
 */
#ifndef G4V_KERNELS_GEMM_H
#define G4V_KERNELS_GEMM_H

#include "base/dtype.h"
#include "base/error.h"
#include "base/pool.h"

#include <stddef.h>

typedef enum g4v_math_mode {
    G4V_MATH_FAST = 0,   /* activations rounded to bf16 at GEMM inputs (bf16 dot products) */
    G4V_MATH_PRECISE = 1 /* f32 activations, f32 products of the exact weights */
} g4v_math_mode;

typedef struct g4v_wmat g4v_wmat;

typedef struct g4v_gemm_epi {
    float in_lo, in_hi;   /* input clamp; -INFINITY/INFINITY for none */
    float out_lo, out_hi; /* output clamp */
    int accumulate;       /* nonzero: Y += result (fused residual add) */
} g4v_gemm_epi;

/* The do-nothing epilogue: no clamps, Y = result. */
g4v_gemm_epi g4v_gemm_epi_none(void);

int g4v_wmat_create(const void *w, g4v_dtype dtype, int n, int k, g4v_math_mode mode,
                    g4v_wmat **out, g4v_err *err);
void g4v_wmat_free(g4v_wmat *w);
int g4v_wmat_n(const g4v_wmat *w);
int g4v_wmat_k(const g4v_wmat *w);
size_t g4v_wmat_bytes(const g4v_wmat *w); /* memory the prepared weight holds */

/* Y[M, N] (row stride ldy) from X[M, K] (row stride ldx). epi may be NULL. */
void g4v_gemm(g4v_pool *pool, const float *X, int m, size_t ldx, const g4v_wmat *W, float *Y,
              size_t ldy, const g4v_gemm_epi *epi);

/* Portable reference: the same contract, straight from the raw weight array. */
void g4v_gemm_ref(const float *X, int m, size_t ldx, const void *w, g4v_dtype dtype, int n, int k,
                  g4v_math_mode mode, float *Y, size_t ldy, const g4v_gemm_epi *epi);

#endif
