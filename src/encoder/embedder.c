/* embedder.c - the unified (encoder-free) embedder: preparation and forward pass (embedder.h,
 * docs/NUMERICS.md §9). Each function of the forward pass is one step of §9.4, labelled with its
 * Hugging Face module (Gemma4UnifiedVisionEmbedder, Gemma4UnifiedMultimodalEmbedder).
 *
 * The patches are walked in chunks of at most chunk_rows rows; every step is row-wise, so the
 * chunking never changes a bit. Two GEMMs per chunk (patch_dense, embedding_projection) are
 * nearly all the work; the norms and the position rows are elementwise. The position table is
 * read in place from the mapped checkpoint (an image touches gw + gh of its rows). */
#include "embedder.h"

#include "base/alloc.h"
#include "encoder_internal.h"
#include "prepare.h"
#include "kernels/dispatch.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

struct g4v_embedder {
    g4v_vision_config cfg;
    g4v_math_mode mode;
    const g4v_kernels *kernels;
    int chunk_rows;
    int side;                   /* pixels per patch side: patch_size * pooling_kernel_size (48) */
    int q;                      /* values per patch: 3 * side^2 (6912) */
    g4v_wmat *dense;            /* [E, q] patch_dense.weight */
    g4v_wmat *proj;             /* [T, E] embedding_projection.weight */
    g4v_tensor pos;             /* [P, 2, E], read in place */
    const float *ln1_w, *ln1_b; /* [q] */
    const float *dense_b, *ln2_w, *ln2_b; /* [E] */
    const float *pos_norm_w, *pos_norm_b; /* [E] */
    float *vectors;                       /* one block holding every f32 vector above */
};

#define WHO "embedder" /* the start of every message (prepare.h) */

/* The embedder's own sizes, after those it shares with the tower (g4v_prep_check_config). */
static int check_config(const g4v_vision_config *c, g4v_err *err) {
    if (c->kind != G4V_KIND_UNIFIED)
        return g4v_fail(err, G4V_ERR_ARG, "embedder: not a unified (gemma4_unified) checkpoint");
    int st = g4v_prep_check_config(WHO, c, err);
    if (st) return st;
    if (c->patch_size > 256 || c->patch_size * c->pooling_kernel_size > 256)
        return g4v_fail(err, G4V_ERR_UNSUPPORTED, "embedder: vision config sizes out of range");
    if (!(c->layer_norm_eps >= 0.0))
        return g4v_fail(err, G4V_ERR_MODEL, "embedder: vision config layer_norm_eps %g is invalid",
                        c->layer_norm_eps);
    return G4V_OK;
}

static int build(g4v_embedder *e, const g4v_checkpoint *ck, const g4v_encoder_opts *opts,
                 g4v_err *err) {
    const g4v_unified_weights *u = &ck->unified;
    const int64_t E = e->cfg.hidden_size, Q = e->q, P = e->cfg.position_embedding_size;
    const int64_t sq[1] = {Q}, se[1] = {E}, sd[2] = {E, Q}, sp[3] = {P, 2, E};
    const int64_t sj[2] = {e->cfg.text_hidden_size, E};
    int st;
    if ((st = g4v_prep_check_shape(WHO, &u->ln1_w, "patch_ln1.weight", -1, 1, sq, err)) ||
        (st = g4v_prep_check_shape(WHO, &u->ln1_b, "patch_ln1.bias", -1, 1, sq, err)) ||
        (st = g4v_prep_check_shape(WHO, &u->dense_w, "patch_dense.weight", -1, 2, sd, err)) ||
        (st = g4v_prep_check_shape(WHO, &u->dense_b, "patch_dense.bias", -1, 1, se, err)) ||
        (st = g4v_prep_check_shape(WHO, &u->ln2_w, "patch_ln2.weight", -1, 1, se, err)) ||
        (st = g4v_prep_check_shape(WHO, &u->ln2_b, "patch_ln2.bias", -1, 1, se, err)) ||
        (st = g4v_prep_check_shape(WHO, &u->pos, "pos_embedding", -1, 3, sp, err)) ||
        (st = g4v_prep_check_shape(WHO, &u->pos_norm_w, "pos_norm.weight", -1, 1, se, err)) ||
        (st = g4v_prep_check_shape(WHO, &u->pos_norm_b, "pos_norm.bias", -1, 1, se, err)) ||
        (st = g4v_prep_check_shape(WHO, &ck->embed_proj, "embedding_projection.weight", -1, 2, sj,
                                   err)))
        return st;
    e->vectors = g4v_malloc_array((size_t)(2 * Q + 5 * E), sizeof(float));
    if (!e->vectors) return g4v_fail(err, G4V_ERR_NOMEM, "embedder: out of memory");
    float *v = e->vectors;
    e->ln1_w = g4v_prep_widen(&u->ln1_w, v, Q);
    e->ln1_b = g4v_prep_widen(&u->ln1_b, v + Q, Q);
    v += 2 * Q;
    e->dense_b = g4v_prep_widen(&u->dense_b, v, E);
    e->ln2_w = g4v_prep_widen(&u->ln2_w, v + E, E);
    e->ln2_b = g4v_prep_widen(&u->ln2_b, v + 2 * E, E);
    e->pos_norm_w = g4v_prep_widen(&u->pos_norm_w, v + 3 * E, E);
    e->pos_norm_b = g4v_prep_widen(&u->pos_norm_b, v + 4 * E, E);
    e->pos = u->pos;

    const g4v_prep_item items[2] = {
        {.t = &u->dense_w,
         .mode = e->mode,
         .out = &e->dense,
         .name = "patch_dense",
         .layer = -1,
         .pack = opts ? opts->pack_weights : 0},
        /* the projection keeps f32 inputs in FAST mode, as the tower's does: it takes FAST from
         * 2.1e-3 to 1.3e-3 of relative error (docs/NUMERICS.md §9.5) */
        {.t = &ck->embed_proj,
         .mode = G4V_MATH_PRECISE,
         .out = &e->proj,
         .name = "embedding_projection",
         .layer = -1,
         .pack = opts ? opts->pack_weights : 0}};
    if (opts && opts->check_only) return G4V_OK;
    return g4v_prep_pack(WHO, e->kernels, NULL, opts ? opts->drop_mapped_pages : 0,
                         opts ? opts->pool : NULL, items, 2, err);
}

int g4v_embedder_create(const g4v_checkpoint *ck, const g4v_encoder_opts *opts, g4v_embedder **out,
                        g4v_err *err) {
    *out = NULL;
    if (!ck) return g4v_fail(err, G4V_ERR_ARG, "embedder: no checkpoint");
    g4v_math_mode mode = opts ? opts->mode : G4V_MATH_FAST;
    if (mode != G4V_MATH_FAST && mode != G4V_MATH_PRECISE && !g4v_math_is_int8(mode))
        return g4v_fail(err, G4V_ERR_ARG, "embedder: unknown math mode %d", (int)mode);
    /* INT8: the unified model has no block linears; its patch GEMM stays FAST, as the tower's */
    if (g4v_math_is_int8(mode)) mode = G4V_MATH_FAST;
    int st = check_config(&ck->cfg, err);
    if (st) return st;
    g4v_embedder *e = g4v_calloc(1, sizeof *e);
    if (!e) return g4v_fail(err, G4V_ERR_NOMEM, "embedder: out of memory");
    e->cfg = ck->cfg;
    e->mode = mode;
    /* 256 patches: both GEMMs see enough rows to run at full speed, and the chunk's buffers
     * stay ~11 MB for the 12B model */
    e->chunk_rows = opts && opts->chunk_rows > 0 ? opts->chunk_rows : 256;
    e->side = e->cfg.patch_size * e->cfg.pooling_kernel_size;
    e->q = 3 * e->side * e->side;
    e->kernels = g4v_kernels_current();
    if ((st = build(e, ck, opts, err))) {
        g4v_embedder_free(e);
        return st;
    }
    *out = e;
    return G4V_OK;
}

void g4v_embedder_free(g4v_embedder *e) {
    if (!e) return;
    g4v_wmat_free(e->dense);
    g4v_wmat_free(e->proj);
    g4v_free(e->vectors);
    g4v_free(e);
}

void g4v_embedder_kernel_path(const g4v_embedder *e, char *buf, size_t cap) {
    g4v_kernel_path_of(e->kernels, buf, cap);
}

int g4v_embedder_weights_in_place(const g4v_embedder *e) {
    return (e->dense && g4v_wmat_in_place(e->dense)) || (e->proj && g4v_wmat_in_place(e->proj));
}

/* ---- forward pass ---------------------------------------------------------------------------- */

typedef struct {
    const g4v_embedder *e;
    const uint8_t *rgb;
    size_t stride;
    int gw;
    size_t r0;     /* first patch of the chunk */
    float *out;    /* [n, q] */
    double eps255; /* eps * 255^2: the LayerNorm eps on the integer scale */
} patch_job;

/* docs/NUMERICS.md §9.4 steps 1-2 (patch_ln1 of the u/255 patch vector), one patch per task.
 * The values are gathered as the integers u in (dy, dx, c) order. LayerNorm is invariant to the
 * 1/255 scale except through eps, so it is computed on u with eps * 255^2: the sums of u and u^2
 * are exact integers, hence the mean and the variance are exact, and each output is one double
 * expression rounded once to f32. */
static void patch_ln1_task(void *arg, int i, int worker) {
    (void)worker;
    const patch_job *j = arg;
    const g4v_embedder *e = j->e;
    const int side = e->side, q = e->q, row = 3 * side;
    size_t l = j->r0 + (size_t)i;
    int py = (int)(l / (size_t)j->gw), px = (int)(l % (size_t)j->gw);
    float *dst = j->out + (size_t)i * (size_t)q;
    int64_t s1 = 0, s2 = 0;
    for (int dy = 0; dy < side; dy++) {
        const uint8_t *src = j->rgb + (size_t)(py * side + dy) * j->stride + (size_t)px * row;
        for (int t = 0; t < row; t++) {
            int u = src[t];
            s1 += u;
            s2 += u * u;
            dst[dy * row + t] = (float)u;
        }
    }
    /* n^2 var = n * s2 - s1^2, exact in int64 (n * s2 < 2^42 for 48x48 patches) */
    double n = (double)q, var = (double)(q * s2 - s1 * s1) / (n * n);
    double scale = 1.0 / (sqrt(var + j->eps255) * n);
    for (int k = 0; k < q; k++) {
        double centred = (double)((int64_t)dst[k] * q - s1); /* n (u - mean), exact */
        dst[k] = (float)(centred * scale * (double)e->ln1_w[k] + (double)e->ln1_b[k]);
    }
}

/* docs/NUMERICS.md §9.4 steps 4-6: + patch_dense.bias, patch_ln2, + pos[x][0] + pos[y][1],
 * pos_norm (Gemma4UnifiedVisionEmbedder), in place on the chunk's rows h [n, E]. */
static void positions_and_norms(const g4v_embedder *e, g4v_pool *pool, float *h, size_t r0,
                                size_t n, int gw) {
    const int E = e->cfg.hidden_size;
    const float eps = (float)e->cfg.layer_norm_eps;
    for (size_t i = 0; i < n; i++)
        for (int c = 0; c < E; c++)
            h[i * E + c] += e->dense_b[c];
    g4v_layernorm(pool, h, h, (size_t)E, n, E, e->ln2_w, e->ln2_b, eps);
    for (size_t i = 0; i < n; i++) {
        size_t l = r0 + i, x = l % (size_t)gw, y = l / (size_t)gw;
        size_t row_x = (x * 2 + 0) * (size_t)E; /* pos_embedding[x][0]: the column */
        size_t row_y = (y * 2 + 1) * (size_t)E; /* pos_embedding[y][1]: the row */
        float *hr = h + i * E;
        for (int c = 0; c < E; c++)
            hr[c] += g4v_tensor_get(&e->pos, row_x + c) + g4v_tensor_get(&e->pos, row_y + c);
    }
    g4v_layernorm(pool, h, h, (size_t)E, n, E, e->pos_norm_w, e->pos_norm_b, eps);
}

static int check_image(const g4v_embedder *e, const uint8_t *rgb, int width, int height,
                       size_t stride, const float *out, g4v_err *err) {
    int side = e->side;
    if (!rgb || !out) return g4v_fail(err, G4V_ERR_ARG, "embedder: NULL image or output buffer");
    if (width <= 0 || height <= 0 || width % side || height % side)
        return g4v_fail(err, G4V_ERR_ARG,
                        "embedder: image is %dx%d; both sides must be positive multiples of %d "
                        "(resize to the target size first)",
                        width, height, side);
    if (stride < (size_t)width * 3)
        return g4v_fail(err, G4V_ERR_ARG, "embedder: row stride %zu is below 3 * width = %zu",
                        stride, (size_t)width * 3);
    int gw = width / side, gh = height / side, P = e->cfg.position_embedding_size;
    if (gw > P || gh > P)
        return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                        "embedder: a %dx%d patch grid exceeds the position table (%d per axis)", gw,
                        gh, P);
    if ((long long)gw * gh > INT_MAX)
        return g4v_fail(err, G4V_ERR_NOMEM, "embedder: %dx%d patches is too many", gw, gh);
    return G4V_OK;
}

int g4v_embedder_run(const g4v_embedder *e, g4v_workspace *ws, g4v_pool *pool, const uint8_t *rgb,
                     int width, int height, size_t stride, float *out, g4v_err *err) {
    if (!e || !ws) return g4v_fail(err, G4V_ERR_ARG, "embedder: NULL embedder or workspace");
    int st = check_image(e, rgb, width, height, stride, out, err);
    if (st) return st;
    const size_t E = (size_t)e->cfg.hidden_size, T = (size_t)e->cfg.text_hidden_size;
    const size_t q = (size_t)e->q;
    const int gw = width / e->side, gh = height / e->side;
    const size_t N = (size_t)gw * (size_t)gh;
    /* equal chunks of at most chunk_rows patches */
    size_t cmax = (size_t)e->chunk_rows, nchunks = (N + cmax - 1) / cmax;
    size_t C = (N + nchunks - 1) / nchunks;
    /* [C, q] LayerNormed patches, then [C, E] hidden rows; sizes are small enough (q, E <= 2^18,
     * C <= 2^31) not to overflow a 64-bit size_t */
    size_t patch_bytes = (C * q * sizeof(float) + 63) & ~(size_t)63;
    float *patches = g4v_workspace_block(ws, patch_bytes + C * E * sizeof(float));
    if (!patches)
        return g4v_fail(err, G4V_ERR_NOMEM, "embedder: out of memory for a %zu-patch workspace", C);
    float *h = (float *)((char *)patches + patch_bytes);
    const double s255 = 255.0 * 255.0;
    for (size_t r0 = 0; r0 < N; r0 += C) {
        size_t n = N - r0 < C ? N - r0 : C;
        patch_job pj = {e, rgb, stride, gw, r0, patches, e->cfg.layer_norm_eps * s255};
        g4v_pool_run(pool, (int)n, patch_ln1_task, &pj);
        /* §9.4 step 3: patch_dense, f32 accumulation (FAST: bf16 inputs) */
        g4v_gemm(pool, patches, q, e->dense, h, E, n, NULL);
        positions_and_norms(e, pool, h, r0, n, gw);
        /* §9.4 steps 7-8 (Gemma4UnifiedMultimodalEmbedder): RMSNorm without weight, projection
         * (f32 inputs in both modes) */
        g4v_rmsnorm(e->kernels, pool, h, h, E, n, (int)E, NULL, (float)e->cfg.rms_norm_eps);
        g4v_gemm(pool, h, E, e->proj, out + r0 * T, T, n, NULL);
    }
    return G4V_OK;
}
