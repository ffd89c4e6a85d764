/* kernels.h - the encoder's non-GEMM kernels: norms, 2D RoPE, GeGLU, attention, pooling and small
 * vector ops. Raw pointers and shapes only; no knowledge of models or files. The GEMM is in
 * gemm.h, the resize inner loops in resize.h, the choice of variant in dispatch.h.
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

/* ---- rmsnorm (portable/rmsnorm.c) ------------------------------------------------------------ */

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

/* ---- rope2d (portable/rope2d.c) -------------------------------------------------------------- */

/* Tables for one spatial axis (docs/NUMERICS.md §4.5): for c = d/2 rotated channels per axis and
 * positions p in [0, npos): cos[p*(c/2) + j] = cos(p * inv_freq[j]), sin likewise, with
 * inv_freq[j] = f32(1 / theta^(2j/c)) and the angle p * inv_freq[j] computed in f32.
 * cos and sin each hold npos * (c/2) floats. Both axes share one table. */
void g4v_rope2d_table(double theta, int head_dim, int npos, float *cos_t, float *sin_t);

/* Rotates every head of x [L, heads * head_dim] (row stride ld) in place. Patch l sits at column
 * pos[2l] and row pos[2l+1] (each < npos of the table). Channels [0, d/2) rotate by the column,
 * [d/2, d) by the row; inside each half, channel t pairs with t + d/4 (rotate-half). head_dim must
 * be a multiple of 4. */
void g4v_rope2d_apply(const g4v_kernels *k, g4v_pool *pool, float *x, size_t ld, const int32_t *pos,
                      const float *cos_t, const float *sin_t, size_t L, int heads, int head_dim);

/* ---- GeGLU (portable/geglu.c) ---------------------------------------------------------------- */

/* tanh-form GELU ("gelu_pytorch_tanh") in f32. */
float g4v_gelu_tanh(float x);

/* ---- attention (portable/attention.c; SIMD variants in the ISA folders) ---------------------- */

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

/* Full bidirectional softmax(scale * Q Kᵀ) V per head, no mask: what a variant implements. */
typedef void g4v_attention_fn(g4v_pool *pool, const g4v_attn_args *a);

/* Floats of scratch one worker needs (multiply by g4v_pool_size for the whole buffer). */
size_t g4v_attention_scratch_floats(int d);

/* Query register tiles of 48 per task of the bf16 attention (x86_avx512bf16/): each key tile it
 * rounds and packs to bf16 serves this many tiles (the f32 variants read K and V as they are). */
#define G4V_ATTN_BF16_SUBTILES 8

/* The bf16 attention's scratch per worker: per register tile the packed queries (d/2 + 1 words
 * x 48), the output [d][48] and m, l; one key tile's logits [64][48] and new max [48],
 * probability pairs [32][48], packed keys [64][d/2 + 1] and value pairs [32][d]; 64-byte
 * rounding of each piece. */
static inline size_t g4v_attention_bf16_scratch_floats(int d) {
    size_t dp2 = (size_t)(d + 1) / 2, rnd = 16;
    size_t per_tile = 48 * dp2 + 48 * (size_t)d + 2 * 48 + 3 * rnd;
    return G4V_ATTN_BF16_SUBTILES * per_tile + 64 * 48 + 48 + 32 * 48 + 64 * dp2 + 32 * (size_t)d +
           5 * rnd + 16;
}

/* The bf16 variant's keys and values prepared once for all its calls over them: per kv head
 * the keys rounded to bf16 ([nk][d rounded up to even], a zero pad channel), then per kv head
 * the values as bf16 key pairs ([ceil(nk/2)][d] 32-bit words, a zero pad key). The bytes for nk
 * keys (rounded up to 64). The fill writes keys [j0, j0 + a->nk) of the form for nk_all keys in
 * dst (64-byte aligned), reading a->k, v (at key j0's row), ldk, ldv, hsk, hsv, Hkv, d, in
 * parallel on pool: j0 = 0, nk_all = a->nk prepares them all at once. Pieces may start and end at
 * odd keys (the value pair they split is written half by each); pieces that cover [0, nk_all)
 * once, in any order, give the bytes of one call over all the keys. */
size_t g4v_attention_bf16_kv_bytes(int nk, int Hkv, int d);
void g4v_attention_bf16_prepare_kv(g4v_pool *pool, const g4v_attn_args *a, int j0, int nk_all,
                                   void *dst);

/* For callers that run several attention calls over the same keys (the encoder: one call per
 * chunk of queries): the bytes the variant of table k (its FAST choice with fast_math) needs
 * for nk keys in its own form, 0 when it reads K and V as they are (every f32 variant); then
 * g4v_attention_prepare_kv fills dst from a's keys and values once, and a->kv_prepared = dst
 * hands them to every call. The prepared form saves each task re-rounding and re-packing every
 * key of its head; the output bits do not change. */
size_t g4v_attention_kv_bytes(const g4v_kernels *k, int fast_math, int nk, int Hkv, int d);
/* Keys [j0, j0 + a->nk) of the form for nk_all keys (g4v_attention_bf16_prepare_kv): a caller
 * that computes its keys in chunks prepares each chunk while it is in cache and needs no f32
 * copy of all the keys. */
void g4v_attention_prepare_kv(const g4v_kernels *k, g4v_pool *pool, const g4v_attn_args *a, int j0,
                              int nk_all, void *dst);

/* Attention by the variant of table k (with a->fast_math, its FAST choice). Tiled over keys with
 * an online softmax, so memory is O(L*d) for any L. Give K and V head-major (g4v_split_heads) for
 * speed: a tile of keys is then contiguous; the bits are the same in either layout. Logits,
 * softmax and accumulation are f32 and never rounded; only a FAST-only variant rounds q, k, v and
 * the probabilities to bf16 for its products. Parallel over (head, query tile); each task writes
 * only its own output tile. */
void g4v_attention(const g4v_kernels *k, g4v_pool *pool, const g4v_attn_args *a);

/* ---- fused row passes (fused_rows.c) ----------------------------------------------------------
 * Several row kernels in one pool dispatch, each row running exactly the kernels the separate
 * drivers run, in the same order: the same bits as the separate calls. */

/* What g4v_heads_norm does after the norm: the 2D RoPE when pos is set (pos, cos_t, sin_t as in
 * g4v_rope2d_apply, pos pointing at row 0's pair), then the head-major copy when dst is set (dst,
 * L, row0 as in g4v_split_heads). */
typedef struct g4v_heads_post {
    const int32_t *pos;
    const float *cos_t, *sin_t;
    float *dst;
    size_t L, row0;
} g4v_heads_post;

/* x [rows, heads*d] (row stride ld), in place: RMSNorm of each head (weight w, may be NULL), then
 * post (may be NULL). = g4v_rmsnorm(rows*heads rows of d) + g4v_rope2d_apply + g4v_split_heads. */
void g4v_heads_norm(const g4v_kernels *k, g4v_pool *pool, float *x, size_t ld, size_t rows,
                    int heads, int d, const float *w, float eps, const g4v_heads_post *post);

/* a = rmsnorm(a) [* w] in place, then h += a, per row of n floats (row strides lda, ldh).
 * = g4v_rmsnorm + g4v_add_rows. */
void g4v_rmsnorm_add(const g4v_kernels *k, g4v_pool *pool, float *a, size_t lda, float *h,
                     size_t ldh, size_t rows, int n, const float *w, float eps);

/* ---- pooling and element-wise ops (portable/avgpool.c, portable/vecops.c) --------------------
 * These run once per image on the N pooled rows (or are memory-bound adds): not dispatched. */

/* k x k average pooling of h [gh*gw, D] (row-major patch grid, row stride ld) into
 * out [(gh/k)*(gw/k), D] in row-major pooled-grid order: out[Y*(gw/k)+X] = sum over the block,
 * rows first, of h * f32(1/k^2), in f32. gh and gw must be multiples of k. */
void g4v_avgpool(const float *h, size_t ld, float *out, int gh, int gw, int D, int k);

/* y[i] += x[i] for rows x n (row strides ldx, ldy), by the add_row kernel of table k. */
void g4v_add_rows(const g4v_kernels *k, g4v_pool *pool, const float *x, size_t ldx, float *y,
                  size_t ldy, size_t rows, int n);

/* Scatters rows [row0, row0 + rows) of src ([rows, heads*d], row stride ld) into head-major dst
 * ([heads][L][d]): dst[(h*L + row0 + r)*d + c] = src[r*ld + h*d + c]. A copy, not dispatched. */
void g4v_split_heads(g4v_pool *pool, const float *src, size_t ld, float *dst, size_t L, size_t row0,
                     size_t rows, int heads, int d);

/* x[i] *= s for n floats. */
void g4v_scale(float *x, size_t n, float s);

/* (x - bias) * scale per row of n floats (row stride ld), in place (docs/NUMERICS.md §4.8). */
void g4v_standardize(float *x, size_t ld, const float *bias, const float *scale, size_t rows,
                     int n);

#endif
