/* encoder.c - the vision tower's forward pass, one function per step of docs/NUMERICS.md §4, each
 * labelled with its step there and the Hugging Face module it corresponds to.
 *
 * Numerics (docs/NUMERICS.md §6.1): activations and the residual stream are f32 throughout; the
 * only rounding choice is the math mode of the model (FAST rounds GEMM inputs to bf16, and on
 * CPUs with AVX512_BF16 the attention's q, k, v and probabilities too; PRECISE rounds nothing;
 * INT8 is FAST with the blocks' linears in int8, kernels/gemm_q8.h).
 * Two GEMMs are special: the patch embedding is fed exact integers 2u - 255 and
 * scaled by 1/255 afterwards (exact in either mode), and the final projection always runs in f32.
 * Attention logits and the softmax are f32 in both modes. Unlike HF we do not round to bf16
 * between ops, so results match HF's bf16 run only to ~1% but an f64 reference to ~1e-6.
 * The image is run unpadded (docs/NUMERICS.md §4.1): L = pH * pW patches, no mask. Every kernel
 * call goes through the kernel table the model chose at creation (e->kernels).
 */
#include "encoder_internal.h"

#include "kernels/dispatch.h"

#include <limits.h>
#include <math.h>

/* Rows [r0, r0 + n) of an L-row pass: the passes below walk the patches in chunks of
 * b->chunk_rows rows, so that every [rows, width] buffer except the residual stream and the
 * keys/values is one chunk long and memory stays bounded at any budget. Every step is row-wise
 * (a GEMM's sum for one output does not depend on the other rows, docs/ARCHITECTURE.md §4) and
 * attention takes each chunk's queries against all keys, so chunking never changes a bit. */
#define FOR_EACH_CHUNK(b, L, r0, n)                                                                \
    for (size_t r0 = 0, n = (L) < (b)->chunk_rows ? (L) : (b)->chunk_rows; r0 < (L);               \
         r0 += n, n = (L)-r0 < (b)->chunk_rows ? (L)-r0 : (b)->chunk_rows)

/* docs/NUMERICS.md §4.2 (Gemma4VisionPatchEmbedder), patches and positions as in
 * docs/PREPROCESSING.md §7: patches in (dy, dx, c) order, positions (column, row) within the
 * patch's own image. The pixel values 2*(u/255 - 0.5) are computed as the integers 2u - 255 (exact
 * in bf16) and the 1/255 is applied to the GEMM result in f32; then the two position-table rows
 * are added. A chunk of rows may span several images of the pass. */
static void patch_embed(const g4v_encoder *e, const enc_buffers *b, g4v_pool *pool, size_t L) {
    const g4v_vision_config *c = &e->cfg;
    int p = c->patch_size, D = c->hidden_size;
    size_t pdim = (size_t)3 * p * p, P = (size_t)c->position_embedding_size;
    const g4v_tensor *tab = &e->position_table;
    const enc_segment *sg = b->seg;
    FOR_EACH_CHUNK(b, L, r0, n) {
        for (size_t i = 0; i < n; i++) {
            size_t l = r0 + i;
            while (l >= sg->row0 + sg->L) sg++;
            size_t li = l - sg->row0;
            int py = (int)(li / (size_t)sg->gw), px = (int)(li % (size_t)sg->gw);
            float *dst = b->patches + i * pdim;
            for (int dy = 0; dy < p; dy++) {
                const uint8_t *src =
                    sg->rgb + (size_t)(py * p + dy) * sg->stride + (size_t)px * p * 3;
                for (int t = 0; t < 3 * p; t++)
                    dst[dy * 3 * p + t] = (float)(2 * src[t] - 255);
            }
            b->pos[2 * l] = px;
            b->pos[2 * l + 1] = py;
        }
        g4v_gemm(pool, b->patches, pdim, e->input_proj, b->h + r0 * D, (size_t)D, n, NULL);
        for (size_t l = r0; l < r0 + n; l++) {
            float *h = b->h + l * D;
            size_t row_x = ((size_t)0 * P + (size_t)b->pos[2 * l]) * D;     /* plane 0: column */
            size_t row_y = ((size_t)1 * P + (size_t)b->pos[2 * l + 1]) * D; /* plane 1: row */
            for (int i = 0; i < D; i++)
                h[i] = h[i] / 255.0f +
                       (g4v_tensor_get(tab, row_x + i) + g4v_tensor_get(tab, row_y + i));
        }
    }
}

/* The image of the pass that holds row r. */
static const enc_segment *seg_of(const enc_buffers *b, size_t r) {
    const enc_segment *sg = b->seg;
    while (r >= sg->row0 + sg->L) sg++;
    return sg;
}

/* One image's share of a chunk: its rows [j0, j1) of the pass, inside the chunk. */
typedef struct {
    const enc_segment *sg;
    size_t j0, j1;
} chunk_part;

/* Steps p to the next image with rows in the chunk [r0, r0 + n) (p->sg NULL: the first); 0 when
 * the chunk is done. Never reads past the image that holds the chunk's last row. */
static int next_part(const enc_buffers *b, size_t r0, size_t n, chunk_part *p) {
    if (p->sg && p->j1 == r0 + n) return 0;
    const enc_segment *sg = p->sg ? p->sg + 1 : seg_of(b, r0);
    p->sg = sg;
    p->j0 = sg->row0 > r0 ? sg->row0 : r0;
    p->j1 = sg->row0 + sg->L < r0 + n ? sg->row0 + sg->L : r0 + n;
    return 1;
}

/* The images a chunk's rows belong to, in order: the attention is block-diagonal (each image's
 * queries attend to its own keys), so every step that touches keys works image by image. */
#define FOR_EACH_IMAGE_IN_CHUNK(b, r0, n, part)                                                   \
    for (chunk_part part = {0}; next_part(b, r0, n, &part);)

/* Bytes of the attention's prepared form of an image's nk keys and values (0: none). */
static size_t kv_prepared_bytes(const g4v_encoder *e, size_t nk) {
    return g4v_attention_kv_bytes(e->kernels, e->mode != G4V_MATH_PRECISE, (int)nk,
                                  e->cfg.num_kv_heads, e->cfg.head_dim);
}

/* The attention's arguments for the keys and values of image sg (its rows of the head-major
 * copies, [Hkv][L][d] over the pass's L rows, or its prepared form alone, b->keys NULL), without
 * the queries and the output. */
static g4v_attn_args attn_keys(const g4v_encoder *e, const enc_buffers *b, const enc_segment *sg,
                               size_t L) {
    const g4v_vision_config *c = &e->cfg;
    size_t d = (size_t)c->head_dim;
    return (g4v_attn_args){.k = b->keys ? b->keys + sg->row0 * d : NULL,
                           .v = b->values ? b->values + sg->row0 * d : NULL,
                           .nk = (int)sg->L,
                           .ldk = d,
                           .ldv = d,
                           .hsk = L * d,
                           .hsv = L * d, /* head-major */
                           .H = c->num_heads,
                           .Hkv = c->num_kv_heads,
                           .d = c->head_dim,
                           .scale = 1.0f, /* not 1/sqrt(d): q and k are RMS-normed */
                           /* FAST may use bf16 products (docs/NUMERICS.md §6.1) */
                           .fast_math = e->mode != G4V_MATH_PRECISE,
                           .kv_prepared = b->kv_prepared ? (char *)b->kv_prepared + sg->kv_off
                                                         : NULL};
}

/* The chunk's keys and values (rows r0 .. r0 + n of the pass, row-major in b->k and b->v) into
 * the attention's prepared form of each image they belong to. */
static void prepare_chunk(const g4v_encoder *e, const enc_buffers *b, g4v_pool *pool, size_t r0,
                          size_t n) {
    const g4v_vision_config *c = &e->cfg;
    size_t kvd = (size_t)c->num_kv_heads * (size_t)c->head_dim;
    FOR_EACH_IMAGE_IN_CHUNK(b, r0, n, part) {
        const enc_segment *sg = part.sg;
        size_t j0 = part.j0, j1 = part.j1;
        g4v_attn_args kv = {.k = b->k + (j0 - r0) * kvd,
                            .v = b->v + (j0 - r0) * kvd,
                            .nk = (int)(j1 - j0),
                            .ldk = kvd,
                            .ldv = kvd, /* row-major: head g at column g d */
                            .H = c->num_heads,
                            .Hkv = c->num_kv_heads,
                            .d = c->head_dim,
                            .fast_math = e->mode != G4V_MATH_PRECISE};
        g4v_attention_prepare_kv(e->kernels, pool, &kv, (int)(j0 - sg->row0), (int)sg->L,
                                 (char *)b->kv_prepared + sg->kv_off);
    }
}

/* The keys and values of every patch for one layer's attention: k = rope(k_norm(k_proj(x))),
 * v = v_norm(v_proj(x)), x = input_norm(h). Where the attention has a prepared form of its own
 * (b->kv_prepared), each chunk goes straight into it while in cache, and no f32 copy of all the
 * keys is kept (2 L Hkv d floats: 62 MB for e4b at 1120 tokens); else they are stored head-major
 * ([Hkv][L][d]) so that the attention reads a tile of keys as one contiguous block. */
static void keys_and_values(const g4v_encoder *e, const enc_layer *w, const enc_buffers *b,
                            g4v_pool *pool, size_t L) {
    const g4v_kernels *k = e->kernels;
    const g4v_vision_config *c = &e->cfg;
    int D = c->hidden_size, Hkv = c->num_kv_heads, d = c->head_dim;
    size_t ld = (size_t)D, kvd = (size_t)Hkv * d;
    float eps = (float)c->rms_norm_eps;
    FOR_EACH_CHUNK(b, L, r0, n) {
        g4v_rmsnorm(k, pool, b->h + r0 * ld, b->a, ld, n, D, w->ln_in, eps);
        g4v_gemm(pool, b->a, ld, w->lin[G4V_LIN_K], b->k, kvd, n, &w->epi[G4V_LIN_K]);
        g4v_gemm(pool, b->a, ld, w->lin[G4V_LIN_V], b->v, kvd, n, &w->epi[G4V_LIN_V]);
        /* k_norm and RoPE in one pass, v_norm (no weight); each with its head-major copy when
         * the keys are kept in f32 */
        g4v_heads_post kp = {b->pos + 2 * r0, b->rope_cos, b->rope_sin, b->keys, L, r0};
        g4v_heads_norm(k, pool, b->k, kvd, n, Hkv, d, w->k_norm, eps, &kp);
        g4v_heads_post vp = {NULL, NULL, NULL, b->values, L, r0};
        g4v_heads_norm(k, pool, b->v, kvd, n, Hkv, d, NULL, eps, &vp);
        if (b->kv_prepared) prepare_chunk(e, b, pool, r0, n);
    }
}

/* docs/NUMERICS.md §4.4 (Gemma4VisionEncoderLayer's attention half, Gemma4VisionAttention):
 * h += post_norm(o_proj(attention(rope(q_norm(q)), rope(k_norm(k)), v_norm(v)))),
 * q, k, v = ClippableLinears of input_norm(h) (docs/NUMERICS.md §4.5 for the RoPE). */
static void attention_block(const g4v_encoder *e, const enc_layer *w, const enc_buffers *b,
                            g4v_pool *pool, size_t L) {
    const g4v_kernels *k = e->kernels;
    const g4v_vision_config *c = &e->cfg;
    int D = c->hidden_size, H = c->num_heads, d = c->head_dim;
    size_t ld = (size_t)D, qd = (size_t)H * d;
    float eps = (float)c->rms_norm_eps;

    keys_and_values(e, w, b, pool, L);
    FOR_EACH_CHUNK(b, L, r0, n) {
        float *h = b->h + r0 * ld;
        g4v_rmsnorm(k, pool, h, b->a, ld, n, D, w->ln_in, eps);
        g4v_gemm(pool, b->a, ld, w->lin[G4V_LIN_Q], b->q, qd, n, &w->epi[G4V_LIN_Q]);
        g4v_heads_post qp = {b->pos + 2 * r0, b->rope_cos, b->rope_sin, NULL, 0, 0};
        g4v_heads_norm(k, pool, b->q, qd, n, H, d, w->q_norm, eps, &qp); /* q_norm + RoPE */
        /* block-diagonal: the chunk's queries of each image attend to that image's keys */
        FOR_EACH_IMAGE_IN_CHUNK(b, r0, n, part) {
            size_t q0 = part.j0, q1 = part.j1;
            g4v_attn_args at = attn_keys(e, b, part.sg, L);
            at.fast_math &= !w->sharp; /* docs/NUMERICS.md §6.5 */
            at.q = b->q + (q0 - r0) * qd;
            at.ldq = qd;
            at.nq = (int)(q1 - q0);
            at.out = b->att + (q0 - r0) * qd;
            at.ldo = qd;
            at.scratch = b->attn_scratch;
            g4v_attention(k, pool, &at);
        }
        g4v_gemm(pool, b->att, qd, w->lin[G4V_LIN_O], b->a, ld, n, &w->epi[G4V_LIN_O]);
        g4v_rmsnorm_add(k, pool, b->a, ld, h, ld, n, D, w->ln_post_attn, eps);
    }
}

/* docs/NUMERICS.md §4.6 (Gemma4VisionEncoderLayer's MLP half, Gemma4VisionMLP):
 * h += post_norm(down(gelu_tanh(gate(x)) * up(x))), x = pre_norm(h). */
static void mlp_block(const g4v_encoder *e, const enc_layer *w, const enc_buffers *b,
                      g4v_pool *pool, size_t L) {
    const g4v_kernels *k = e->kernels;
    const g4v_vision_config *c = &e->cfg;
    int D = c->hidden_size, I = c->intermediate_size;
    size_t ld = (size_t)D, ldi = (size_t)I;
    float eps = (float)c->rms_norm_eps;

    FOR_EACH_CHUNK(b, L, r0, n) {
        float *h = b->h + r0 * ld;
        g4v_rmsnorm(k, pool, h, b->a, ld, n, D, w->ln_pre_ff, eps);
        g4v_gemm(pool, b->a, ld, w->lin[G4V_LIN_GATE], b->gate, ldi, n, &w->epi[G4V_LIN_GATE]);
        g4v_gemm_epi up_geglu = w->epi[G4V_LIN_UP]; /* up = gelu_tanh(gate) * up, fused */
        up_geglu.gelu_gate = b->gate;
        up_geglu.ldg = ldi;
        g4v_gemm(pool, b->a, ld, w->lin[G4V_LIN_UP], b->up, ldi, n, &up_geglu);
        g4v_gemm(pool, b->up, ldi, w->lin[G4V_LIN_DOWN], b->a, ld, n, &w->epi[G4V_LIN_DOWN]);
        g4v_rmsnorm_add(k, pool, b->a, ld, h, ld, n, D, w->ln_post_ff, eps);
    }
}

/* docs/NUMERICS.md §4.7-§4.9 (Gemma4VisionPooler, Gemma4MultimodalEmbedder): k x k mean per
 * image, x sqrt(D), [standardize], RMSNorm without weight, projection to T. Output rows are each
 * image's row-major pooled grid, image after image. */
static void pool_and_embed(const g4v_encoder *e, const enc_buffers *b, g4v_pool *pool,
                           size_t nimages, size_t N, float *out) {
    const g4v_kernels *kt = e->kernels;
    const g4v_vision_config *c = &e->cfg;
    int D = c->hidden_size, k = c->pooling_kernel_size;
    size_t ld = (size_t)D;

    for (size_t i = 0; i < nimages; i++) {
        const enc_segment *sg = &b->seg[i];
        g4v_avgpool(b->h + sg->row0 * ld, ld, b->pooled + sg->token0 * ld, sg->gh, sg->gw, D, k);
    }
    g4v_scale(b->pooled, N * D, (float)sqrt((double)D));
    if (c->standardize) g4v_standardize(b->pooled, ld, e->std_bias, e->std_scale, N, D);
    g4v_rmsnorm(kt, pool, b->pooled, b->pooled, ld, N, D, NULL, (float)c->rms_norm_eps);
    g4v_gemm(pool, b->pooled, ld, e->embed_proj, out, (size_t)c->text_hidden_size, N, NULL);
}

static int check_image(const g4v_vision_config *c, const uint8_t *rgb, int width, int height,
                       size_t stride, const float *out, g4v_err *err) {
    int side = c->patch_size * c->pooling_kernel_size;
    if (!rgb || !out) return g4v_fail(err, G4V_ERR_ARG, "encoder: NULL image or output buffer");
    if (width <= 0 || height <= 0 || width % side || height % side)
        return g4v_fail(err, G4V_ERR_ARG,
                        "encoder: image is %dx%d; both sides must be positive multiples of %d "
                        "(resize to the target size first)",
                        width, height, side);
    if (stride < (size_t)width * 3)
        return g4v_fail(err, G4V_ERR_ARG, "encoder: row stride %zu is below 3 * width = %zu",
                        stride, (size_t)width * 3);
    int gw = width / c->patch_size, gh = height / c->patch_size;
    if (gw > c->position_embedding_size || gh > c->position_embedding_size)
        return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                        "encoder: a %dx%d patch grid exceeds the position table (%d per axis)", gw,
                        gh, c->position_embedding_size);
    if ((long long)gw * gh > INT_MAX)
        return g4v_fail(err, G4V_ERR_NOMEM, "encoder: %dx%d patches is too many", gw, gh);
    return G4V_OK;
}

/* Runs images [0, n) as one pass (their checks passed): out receives their soft tokens. */
static int run_pass(const g4v_encoder *e, g4v_workspace *ws, g4v_pool *pool,
                    const g4v_encoder_image *im, size_t n, float *out, g4v_err *err) {
    const g4v_vision_config *c = &e->cfg;
    int p = c->patch_size, k = c->pooling_kernel_size;
    enc_shape sh = {0, 0, n, 1, 0, e->any_sharp};
    for (size_t i = 0; i < n; i++) {
        int gw = im[i].width / p, gh = im[i].height / p;
        sh.rows += (size_t)gw * gh;
        sh.tokens += (size_t)(gw / k) * (gh / k);
        if (gw > sh.max_side) sh.max_side = gw;
        if (gh > sh.max_side) sh.max_side = gh;
        sh.kv_bytes += kv_prepared_bytes(e, (size_t)gw * gh);
    }
    enc_buffers b;
    int st = g4v_workspace_reserve(ws, c, &sh, g4v_pool_size(pool), e->chunk_rows, &b, err);
    if (st) return st;
    for (size_t i = 0, row = 0, tok = 0, kv = 0; i < n; i++) {
        int gw = im[i].width / p, gh = im[i].height / p;
        b.seg[i] = (enc_segment){.row0 = row, .L = (size_t)gw * gh, .token0 = tok, .gh = gh,
                                 .gw = gw, .rgb = im[i].rgb, .stride = im[i].stride,
                                 .kv_off = kv};
        row += b.seg[i].L;
        tok += (size_t)(gw / k) * (gh / k);
        kv += kv_prepared_bytes(e, b.seg[i].L);
    }

    g4v_rope2d_table(c->rope_theta, c->head_dim, sh.max_side, b.rope_cos, b.rope_sin);
    patch_embed(e, &b, pool, sh.rows);
    for (int i = 0; i < c->num_layers; i++) {
        /* a sharp layer's f32 attention reads the f32 keys and values; the others the prepared
         * form alone (docs/NUMERICS.md §6.5) */
        enc_buffers lb = b;
        if (b.kv_prepared && e->layers[i].sharp)
            lb.kv_prepared = NULL;
        else if (b.kv_prepared)
            lb.keys = lb.values = NULL;
        attention_block(e, &e->layers[i], &lb, pool, sh.rows);
        mlp_block(e, &e->layers[i], &b, pool, sh.rows);
    }
    pool_and_embed(e, &b, pool, n, sh.tokens, out);
    return G4V_OK;
}

int g4v_encoder_run_batch(const g4v_encoder *e, g4v_workspace *ws, g4v_pool *pool,
                          const g4v_encoder_image *im, int n, float *out, g4v_err *err) {
    if (!e || !ws || (!im && n)) return g4v_fail(err, G4V_ERR_ARG, "encoder: NULL argument");
    if (n < 1) return g4v_fail(err, G4V_ERR_ARG, "encoder: a batch needs at least one image");
    const g4v_vision_config *c = &e->cfg;
    for (int i = 0; i < n; i++) {
        int st = check_image(c, im[i].rgb, im[i].width, im[i].height, im[i].stride, out, err);
        if (st) {
            if (n > 1) g4v_err_prefix(err, "image %d of the batch", i);
            return st;
        }
    }
    /* passes of consecutive images up to batch_rows patch rows (an image larger runs alone) */
    int p = c->patch_size, k = c->pooling_kernel_size;
    size_t T = (size_t)c->text_hidden_size;
    for (int i0 = 0; i0 < n;) {
        size_t rows = 0, tokens = 0;
        int i1 = i0;
        for (; i1 < n; i1++) {
            size_t L = (size_t)(im[i1].width / p) * (size_t)(im[i1].height / p);
            if (i1 > i0 && rows + L > e->batch_rows) break;
            rows += L;
            tokens += L / ((size_t)k * k);
        }
        int st = run_pass(e, ws, pool, im + i0, (size_t)(i1 - i0), out, err);
        if (st) return st;
        out += tokens * T;
        i0 = i1;
    }
    return G4V_OK;
}

int g4v_encoder_run(const g4v_encoder *e, g4v_workspace *ws, g4v_pool *pool, const uint8_t *rgb,
                    int width, int height, size_t stride, float *out, g4v_err *err) {
    g4v_encoder_image im = {rgb, width, height, stride};
    return g4v_encoder_run_batch(e, ws, pool, &im, 1, out, err);
}
