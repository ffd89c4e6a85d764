/* kernels.h - the encoder's non-GEMM kernels: norms, 2D RoPE, GeGLU, attention, pooling and
 * small vector ops. Raw pointers and shapes only; no knowledge of models or files.
 *
 * These are the portable kernels: plain C, f32 everywhere, a fixed summation order, and the
 * reference every faster variant is tested against. Row-parallel kernels take a g4v_pool (NULL
 * runs on the calling thread); each task writes only its own rows, so results are bit-identical
 * for any thread count. Nothing here allocates or fails: callers check shapes and size scratch.
 * The GEMM lives in gemm.h.
 */
#ifndef G4V_KERNELS_KERNELS_H
#define G4V_KERNELS_KERNELS_H

#include "base/pool.h"

#include <stddef.h>
#include <stdint.h>

/* ---- rmsnorm.c -------------------------------------------------------------------------- */

/* RMSNorm over rows of n floats (SPEC C.2): y = x * (mean(x^2) + eps)^-0.5 [* w], the weight
 * applied directly (w, not 1 + w). w == NULL means no weight. rows start ld floats apart in x
 * and in y; y may equal x (in place). A [L, H*d] tensor normalised per head is rows = L*H,
 * n = d, ld = d. */
void g4v_rmsnorm(g4v_pool *pool, const float *x, float *y, size_t rows, int n, size_t ld,
                 const float *w, float eps);

/* ---- rope2d.c --------------------------------------------------------------------------- */

/* Tables for one spatial axis (SPEC C.5a): for c = d/2 rotated channels per axis and positions
 * p in [0, npos): cos[p*(c/2) + j] = cos(p * inv_freq[j]), sin likewise, with
 * inv_freq[j] = f32(1 / theta^(2j/c)) and the angle p * inv_freq[j] computed in f32.
 * cos and sin each hold npos * (c/2) floats. Both axes share one table. */
void g4v_rope2d_table(double theta, int head_dim, int npos, float *cos_t, float *sin_t);

/* Rotates every head of x [L, heads * head_dim] (row stride ld) in place. Patch l sits at
 * column pos[2l] and row pos[2l+1] (each < npos of the table). Channels [0, d/2) rotate by the
 * column, [d/2, d) by the row; inside each half, channel t pairs with t + d/4 (rotate-half).
 * head_dim must be a multiple of 4. */
void g4v_rope2d_apply(g4v_pool *pool, float *x, int L, int heads, int head_dim, size_t ld,
                      const int32_t *pos, const float *cos_t, const float *sin_t);

/* ---- gelu.c ----------------------------------------------------------------------------- */

/* tanh-form GELU ("gelu_pytorch_tanh") in f32. */
float g4v_gelu_tanh(float x);

/* One row: out[i] = gelu_tanh(gate[i]) * up[i] for i < n; out may equal gate or up. The AVX2
 * kernel (gelu_avx2.c) when CPUID and G4V_ISA allow, else g4v_gelu_tanh; g4v_geglu and the GEMM's
 * fused GeGLU epilogue both use it, so they give the same bits. */
void g4v_geglu_row(const float *gate, const float *up, float *out, int n);

/* The row kernel g4v_geglu_row dispatches to now, for callers that run it many times (the GEMM's
 * fused epilogue calls it per output tile; asking CPUID and G4V_ISA each time would show). */
typedef void (*g4v_geglu_row_fn)(const float *gate, const float *up, float *out, int n);
g4v_geglu_row_fn g4v_geglu_row_impl(void);

/* GeGLU in place: gate[i] = gelu_tanh(gate[i]) * up[i] for rows x n (row stride ld in both). */
void g4v_geglu(g4v_pool *pool, float *gate, const float *up, size_t rows, int n, size_t ld);

/* ---- attention.c ------------------------------------------------------------------------ */

typedef struct g4v_attn_args {
    const float *q, *k, *v; /* [L, H*d], [L, Hkv*d], [L, Hkv*d] */
    size_t ldq, ldk, ldv;   /* row strides in floats */
    float *out;             /* [L, H*d], channel h*d + c */
    size_t ldo;
    int L, H, Hkv, d;       /* Hkv divides H; query head h reads kv head h / (H / Hkv) */
    float scale;            /* logits = scale * q.k (1.0 for Gemma 4 vision) */
    float *scratch;         /* g4v_attention_scratch_floats(d) floats per pool worker */
    float *kv;              /* NULL, or g4v_attention_kv_floats(L, Hkv, d) floats (see below) */
} g4v_attn_args;

/* Floats of scratch one worker needs (multiply by g4v_pool_size for the whole buffer). */
size_t g4v_attention_scratch_floats(int d);

/* Floats of the optional kv buffer: the SIMD variants first copy K and V head-major into it, so
 * that a tile of keys is one contiguous block (rows ldk floats apart map to a few L1 sets and
 * evict each other). NULL skips the copy; results are the same either way. */
size_t g4v_attention_kv_floats(int L, int Hkv, int d);

/* Full bidirectional softmax(scale * Q Kᵀ) V per head, no mask. Tiled over keys with an online
 * softmax, so memory is O(L*d) for any L. Logits, softmax and accumulation are f32 and never
 * rounded. Parallel over (head, query tile); each task writes only its own output tile. */
void g4v_attention(g4v_pool *pool, const g4v_attn_args *a);

/* ---- avgpool.c -------------------------------------------------------------------------- */

/* k x k average pooling of h [gh*gw, D] (row-major patch grid, row stride ld) into
 * out [(gh/k)*(gw/k), D] in row-major pooled-grid order: out[Y*(gw/k)+X] = sum over the block,
 * rows first, of h * f32(1/k^2), in f32. gh and gw must be multiples of k. */
void g4v_avgpool(const float *h, int gh, int gw, int D, size_t ld, int k, float *out);

/* ---- vecops.c --------------------------------------------------------------------------- */

/* y[i] += x[i] for rows x n (row strides ldx, ldy). */
void g4v_add_rows(g4v_pool *pool, float *y, size_t ldy, const float *x, size_t ldx, size_t rows,
                  int n);

/* x[i] *= s for n floats. */
void g4v_scale(float *x, size_t n, float s);

/* (x - bias) * scale per row of n floats (row stride ld), in place (SPEC C.7). */
void g4v_standardize(float *x, size_t rows, int n, size_t ld, const float *bias,
                     const float *scale);

#endif
