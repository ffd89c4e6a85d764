/* kernels.h - the encoder's non-GEMM kernels: norms, 2D RoPE, GeGLU, attention, pooling and small
 * vector ops. Raw pointers and shapes only; no knowledge of models or files. The GEMM is in
 * gemm.h, the resize inner loops in resize.h, the choice of variant in dispatch.h. The row and
 * descriptor types are what a variant implements; the front ends that take the variant from a
 * kernel table are at the top level of src/kernels (attention.c, rows.c), the variants in the
 * ISA folders.
 *
 * Conventions shared by every kernel entry point (docs/ARCHITECTURE.md §3):
 *  - context first: the kernel table k (dispatch.h) when the call dispatches, then the thread
 *    pool (NULL runs on the calling thread);
 *  - then the operands in data-flow order, inputs before outputs, each matrix pointer followed by
 *    its row stride (in floats); an output may equal an input where the comment says so;
 *  - then the sizes (row counts as size_t, row lengths as int), then parameters.
 * Row-parallel kernels give each task whole rows, so results are bit-identical for any thread
 * count. Nothing here allocates or fails: callers check shapes and size scratch.
 *
 * The portable implementations (portable/) are plain C with a fixed summation order: they are the
 * specification in code and the reference every SIMD variant is tested against.
 */
#ifndef G4V_KERNELS_KERNELS_H
#define G4V_KERNELS_KERNELS_H

#include "base/pool.h"

#include <stddef.h>
#include <stdint.h>

typedef struct g4v_kernels g4v_kernels; /* dispatch.h */

/* ---- per-row kernel types: what an ISA variant implements (registered in variants.def) ---- */

/* out[i] = gelu_tanh(gate[i]) * up[i] for i < n; out may equal gate or up. */
typedef void g4v_geglu_row_fn(const float *gate, const float *up, float *out, int n);

/* y = x * (mean(x^2) + eps)^-0.5 [* w] over one row of n floats; y may equal x. */
typedef void g4v_rmsnorm_row_fn(const float *x, float *y, int n, const float *w, float eps);

/* Rotates `heads` heads of head_dim channels of one row in place: channels [0, d/2) by the table
 * rows (cx, sx) of the patch column, [d/2, d) by (cy, sy) of the patch row (d/4 floats each). */
typedef void g4v_rope_row_fn(float *row, int heads, int head_dim, const float *cx, const float *sx,
                             const float *cy, const float *sy);

/* y[i] += x[i] for i < n. */
typedef void g4v_add_row_fn(const float *x, float *y, int n);

/* ---- rmsnorm (rows.c; the row kernels in portable/rmsnorm.c and the ISA folders) ------------ */

/* RMSNorm over rows of n floats (docs/NUMERICS.md §3.1): y = x * (mean(x^2) + eps)^-0.5 [* w], the
 * weight applied directly (w, not 1 + w). w == NULL means no weight. Rows start ld floats apart
 * in x and in y; y may equal x (in place). A [L, H*d] tensor normalised per head is rows = L*H,
 * n = d, ld = d. */
void g4v_rmsnorm(const g4v_kernels *k, g4v_pool *pool, const float *x, float *y, size_t ld,
                 size_t rows, int n, const float *w, float eps);

/* ---- layernorm (portable/layernorm.c) --------------------------------------------------------
 * Only the unified embedder uses it (three norms per soft token, negligible next to its two
 * GEMMs), so it is plain C and not dispatched. */

/* LayerNorm over rows of n floats (docs/NUMERICS.md §9.2), torch.nn.LayerNorm's definition:
 * y = (x - mean) / sqrt(var + eps) * w + b, var the biased (1/n) variance. Two passes (mean,
 * then variance of x - mean), each summing in double in index order; the output is f32. w and b may
 * be NULL (1 and 0). Rows ld floats apart in x and y; y may equal x. Parallel over rows:
 * bit-identical for any pool. */
void g4v_layernorm(g4v_pool *pool, const float *x, float *y, size_t ld, size_t rows, int n,
                   const float *w, const float *b, float eps);

/* ---- rope2d (rope_table.c; the row kernels in portable/rope2d.c and the ISA folders) -------- */

/* Tables for one spatial axis (docs/NUMERICS.md §4.5): for c = d/2 rotated channels per axis and
 * positions p in [0, npos): cos[p*(c/2) + j] = cos(p * inv_freq[j]), sin likewise, with
 * inv_freq[j] = f32(1 / theta^(2j/c)) and the angle p * inv_freq[j] computed in f32.
 * cos and sin each hold npos * (c/2) floats. Both axes share one table. */
void g4v_rope2d_table(double theta, int head_dim, int npos, float *cos_t, float *sin_t);

/* ---- GeGLU (portable/geglu.c) ---------------------------------------------------------------- */

/* tanh-form GELU ("gelu_pytorch_tanh") in f32. */
float g4v_gelu_tanh(float x);

/* ---- attention (variants: portable/attention.c and the ISA folders) -------------------------- */

typedef struct g4v_attn_args {
    const float *q; /* nq queries [nq, H*d], row stride ldq */
    size_t ldq;
    const float *k,
        *v;          /* nk keys and values: (key j, kv head g, channel c) at k[j*ldk + g*hsk + c] */
    size_t ldk, ldv; /* row strides in floats */
    size_t hsk, hsv; /* kv head strides in floats; 0 means d ([nk, Hkv*d] rows). Head-major
                        blocks [Hkv][nk][d] are ldk = d, hsk = nk*d */
    float *out;      /* [nq, H*d], channel h*d + c, row stride ldo */
    size_t ldo;
    int nq, nk;     /* queries, keys (a chunk of queries may attend to every key) */
    int H, Hkv, d;  /* Hkv divides H; query head h reads kv head h / (H / Hkv) */
    float scale;    /* logits = scale * q.k (1.0 for Gemma 4 vision) */
    float *scratch; /* g4v_attention_scratch_floats(d) floats per pool worker */
    int fast_math;  /* 1 for a FAST model: g4v_attention may take the table's FAST-only variant
                       (bf16 products, dispatch.h); 0 (PRECISE, and the default) keeps f32 */
    const void *kv_prepared; /* NULL, or these keys and values already in the variant's own form
                                (g4v_attention_prepare_kv); same bits either way */
} g4v_attn_args;

/* Full bidirectional softmax(scale * Q Kᵀ) V per head, no mask: what a variant runs. */
typedef void g4v_attention_fn(g4v_pool *pool, const g4v_attn_args *a);

/* An attention variant (registered in variants.def like any other): what it runs, the scratch
 * one pool worker needs for head_dim d (also the stride between the workers' pieces of
 * a->scratch), and, for a variant that reads K and V in a form of its own, the size of that
 * form and its preparation (both NULL for one that reads them as they are). The preparation
 * writes keys [j0, j0 + a->nk) of the form for nk_all keys into dst (64-byte aligned,
 * kv_bytes(nk_all, Hkv, d) bytes), reading a->k, v (at key j0's row), ldk, ldv, hsk, hsv, Hkv,
 * d, in parallel on pool; pieces that cover [0, nk_all) once, in any order, give the bytes of
 * one call over all the keys. The front ends below route through it, so a new variant is its
 * file plus its variants.def line. */
typedef struct g4v_attention_kernel {
    g4v_attention_fn *run;
    size_t (*scratch_floats)(int d);
    size_t (*kv_bytes)(int nk, int Hkv, int d);
    void (*prepare_kv)(g4v_pool *pool, const g4v_attn_args *a, int j0, int nk_all, void *dst);
} g4v_attention_kernel;

/* ---- attention front ends (attention.c) ------------------------------------------------------ */

/* Floats of scratch one worker needs, for any registered variant (the largest of their
 * scratch_floats): multiply by g4v_pool_size for the whole buffer. Each variant finds its
 * worker's piece at a->scratch + worker * its own scratch_floats(d), which this bounds, so a
 * variant never calls back here (the registry in dispatch.c names the variants). */
size_t g4v_attention_scratch_floats(int d);

/* For callers that run several attention calls over the same keys (the encoder: one call per
 * chunk of queries): the bytes the variant of table k (its FAST choice with fast_math) needs
 * for nk keys in its own form, 0 when it reads K and V as they are (every f32 variant); then
 * g4v_attention_prepare_kv fills dst from a's keys and values, and a->kv_prepared = dst hands
 * them to every call. Keys [j0, j0 + a->nk) of the form for nk_all keys: a caller that computes
 * its keys in chunks prepares each chunk while it is in cache and needs no f32 copy of all the
 * keys. The prepared form saves each task re-rounding and re-packing every key of its head; the
 * output bits do not change. */
size_t g4v_attention_kv_bytes(const g4v_kernels *k, int fast_math, int nk, int Hkv, int d);
void g4v_attention_prepare_kv(const g4v_kernels *k, g4v_pool *pool, const g4v_attn_args *a, int j0,
                              int nk_all, void *dst);

/* Attention by the variant of table k (with a->fast_math, its FAST choice). Tiled over keys with
 * an online softmax, so memory is O(L*d) for any L. Give K and V head-major (g4v_heads_post.dst)
 * for speed: a tile of keys is then contiguous; the bits are the same in either layout. Logits,
 * softmax and accumulation are f32 and never rounded; only a FAST-only variant rounds q, k, v and
 * the probabilities to bf16 for its products. Parallel over (head, query tile); each task writes
 * only its own output tile. */
void g4v_attention(const g4v_kernels *k, g4v_pool *pool, const g4v_attn_args *a);

/* ---- fused row passes (rows.c) ----------------------------------------------------------------
 * Several row kernels of table k in one pool dispatch, each row running them in a fixed order
 * (one walk over the rows, each row still in L1 for the next kernel). */

/* What g4v_heads_norm does after the norm: the 2D RoPE when pos is set, then the head-major copy
 * when dst is set.
 *  - RoPE: row r's patch sits at column pos[2r] and row pos[2r+1] (pos pointing at row 0's pair,
 *    each below the npos of the g4v_rope2d_table that made cos_t, sin_t). Channels [0, d/2) of
 *    every head rotate by the column, [d/2, d) by the row; inside each half, channel t pairs with
 *    t + d/4 (rotate-half). d must be a multiple of 4.
 *  - Head-major copy: row r goes to dst [heads][L][d] at dst[(h*L + row0 + r)*d + c], a copy,
 *    the layout g4v_attention reads fastest. */
typedef struct g4v_heads_post {
    const int32_t *pos;
    const float *cos_t, *sin_t;
    float *dst;
    size_t L, row0;
} g4v_heads_post;

/* x [rows, heads*d] (row stride ld), in place: RMSNorm of each head (weight w, may be NULL), then
 * post (may be NULL). The norm part = g4v_rmsnorm over rows*heads rows of d. */
void g4v_heads_norm(const g4v_kernels *k, g4v_pool *pool, float *x, size_t ld, size_t rows,
                    int heads, int d, const float *w, float eps, const g4v_heads_post *post);

/* a = rmsnorm(a) [* w] in place, then h[i] += a[i], per row of n floats (row strides lda, ldh):
 * the block's post-norm and residual add. */
void g4v_rmsnorm_add(const g4v_kernels *k, g4v_pool *pool, float *a, size_t lda, float *h,
                     size_t ldh, size_t rows, int n, const float *w, float eps);

/* ---- pooling and element-wise ops (portable/avgpool.c, portable/vecops.c) --------------------
 * These run once per image on the N pooled rows: plain C, not dispatched. */

/* k x k average pooling of h [gh*gw, D] (row-major patch grid, row stride ld) into
 * out [(gh/k)*(gw/k), D] in row-major pooled-grid order: out[Y*(gw/k)+X] = sum over the block,
 * rows first, of h * f32(1/k^2), in f32. gh and gw must be multiples of k. */
void g4v_avgpool(const float *h, size_t ld, float *out, int gh, int gw, int D, int k);

/* x[i] *= s for n floats. */
void g4v_scale(float *x, size_t n, float s);

/* (x - bias) * scale per row of n floats (row stride ld), in place (docs/NUMERICS.md §4.8). */
void g4v_standardize(float *x, size_t ld, const float *bias, const float *scale, size_t rows,
                     int n);

#endif
