/* model.c - g4v_encoder_create: turns an opened checkpoint into a model ready to run.
 * Every weight matrix is prepared for the GEMM once here (never per image); norm vectors and
 * the standardize buffers are widened to f32 once. The shapes the forward pass relies on are
 * checked again here, so a loader bug becomes an error message rather than an out-of-bounds read.
 * The position table stays in the (mapped) checkpoint: an image touches only a few of its rows. */
#include "encoder_internal.h"
#include "prepare.h"

#include "base/alloc.h"
#include "kernels/dispatch.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define WHO "encoder" /* the start of every message (prepare.h) */

static const char *const lin_names[G4V_LIN_COUNT] = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                     "gate_proj", "up_proj", "down_proj"};

/* The tower's own sizes, after those it shares with the embedder (g4v_prep_check_config). */
static int check_config(const g4v_vision_config *c, g4v_err *err) {
    int st = g4v_prep_check_config(WHO, c, err);
    if (st) return st;
    if (c->intermediate_size <= 0 || c->num_layers < 0 || c->num_heads <= 0 ||
        c->num_kv_heads <= 0 || c->head_dim <= 0)
        return g4v_fail(err, G4V_ERR_MODEL, "encoder: vision config has a non-positive size");
    if (c->num_heads % c->num_kv_heads)
        return g4v_fail(err, G4V_ERR_MODEL,
                        "encoder: num_attention_heads %d is not a multiple of "
                        "num_key_value_heads %d",
                        c->num_heads, c->num_kv_heads);
    if (c->head_dim % 4)
        return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                        "encoder: head_dim %d is not a multiple of 4 (2D RoPE rotates pairs "
                        "inside each half of a head)",
                        c->head_dim);
    if (c->patch_size > 64 || c->pooling_kernel_size > 64 || c->head_dim > 4096 ||
        c->intermediate_size > (1 << 18) || c->num_heads > 4096)
        return g4v_fail(err, G4V_ERR_UNSUPPORTED, "encoder: vision config sizes out of range");
    if (!(c->rope_theta > 0.0))
        return g4v_fail(err, G4V_ERR_MODEL, "encoder: vision config rope_theta %g is invalid",
                        c->rope_theta);
    return G4V_OK;
}

/* Checks layer i's shapes, widens its vectors, sets its clamps and queues its seven matrices. */
static int prepare_layer(g4v_encoder *e, const g4v_layer_weights *w, int i, float **vec,
                         g4v_prep_item *queue, g4v_err *err) {
    const g4v_vision_config *c = &e->cfg;
    int64_t D = c->hidden_size, I = c->intermediate_size, d = c->head_dim;
    int64_t qd = (int64_t)c->num_heads * d, kvd = (int64_t)c->num_kv_heads * d;
    const int64_t shapes[G4V_LIN_COUNT][2] = {{qd, D}, {kvd, D}, {kvd, D}, {D, qd},
                                              {I, D},  {I, D},   {D, I}};
    enc_layer *el = &e->layers[i];
    for (int j = 0; j < G4V_LIN_COUNT; j++) {
        int st = g4v_prep_check_shape(WHO, &w->lin[j], lin_names[j], i, 2, shapes[j], err);
        if (st) return st;
    }
    const g4v_tensor *vecs[6] = {&w->input_layernorm,
                                 &w->post_attention_layernorm,
                                 &w->pre_feedforward_layernorm,
                                 &w->post_feedforward_layernorm,
                                 &w->q_norm,
                                 &w->k_norm};
    static const char *const vec_names[6] = {"input_layernorm",
                                             "post_attention_layernorm",
                                             "pre_feedforward_layernorm",
                                             "post_feedforward_layernorm",
                                             "q_norm",
                                             "k_norm"};
    const float *dst[6];
    for (int j = 0; j < 6; j++) {
        int64_t n = j < 4 ? D : d;
        int st = g4v_prep_check_shape(WHO, vecs[j], vec_names[j], i, 1, &n, err);
        if (st) return st;
        dst[j] = g4v_prep_widen(vecs[j], *vec, n);
        *vec += n;
    }
    el->ln_in = dst[0];
    el->ln_post_attn = dst[1];
    el->ln_pre_ff = dst[2];
    el->ln_post_ff = dst[3];
    el->q_norm = dst[4];
    el->k_norm = dst[5];
    el->sharp =
        e->mode != G4V_MATH_PRECISE && g4v_attention_is_sharp(el->q_norm, el->k_norm, (int)d);
    e->any_sharp |= el->sharp;
    for (int j = 0; j < G4V_LIN_COUNT; j++) {
        const g4v_clip *cl = &w->clip[j]; /* ordered and not NaN: checked by the loader */
        el->epi[j] = g4v_gemm_epi_none();
        el->epi[j].in_lo = cl->in_min;
        el->epi[j].in_hi = cl->in_max;
        el->epi[j].out_lo = cl->out_min;
        el->epi[j].out_hi = cl->out_max;
        /* a sharp layer's softmax amplifies any rounding that reaches it, and over many layers
         * FAST's bf16 (or INT8's int8) rounding of every projection's input adds up past FAST's
         * bound: all seven run in f32 there, and its attention too (encoder.c; NUMERICS §6.5) */
        g4v_math_mode mode = el->sharp ? G4V_MATH_PRECISE : e->mode;
        if (g4v_math_is_int8(mode) && (e->int8_fast_linears >> j & 1u)) mode = G4V_MATH_FAST;
        queue[j] = (g4v_prep_item){&w->lin[j], mode, &el->lin[j], lin_names[j], i, 0, 0, e->pack_weights};
    }
    return G4V_OK;
}

double g4v_attention_sharpness(const float *q_norm, const float *k_norm, int d) {
    double s = 0;
    for (int i = 0; i < d; i++) {
        double p = (double)q_norm[i] * k_norm[i];
        s += p * p;
    }
    return sqrt(s);
}

int g4v_attention_is_sharp(const float *q_norm, const float *k_norm, int d) {
    return g4v_attention_sharpness(q_norm, k_norm, d) > G4V_SHARP_LOGIT_STD;
}

int g4v_encoder_layer_sharpness(const g4v_encoder *e, int i, double *sharpness,
                                int *runs_precise) {
    if (!e || i < 0 || i >= e->cfg.num_layers) return G4V_ERR_ARG;
    const enc_layer *el = &e->layers[i];
    if (sharpness) *sharpness = g4v_attention_sharpness(el->q_norm, el->k_norm, e->cfg.head_dim);
    if (runs_precise) *runs_precise = e->mode == G4V_MATH_PRECISE || el->sharp;
    return G4V_OK;
}

static int build(g4v_encoder *e, const g4v_checkpoint *ck, g4v_pool *pool, g4v_err *err) {
    const g4v_vision_config *c = &e->cfg;
    int64_t D = c->hidden_size, d = c->head_dim, P = c->position_embedding_size;
    int64_t pdim = 3 * (int64_t)c->patch_size * c->patch_size;
    int st;
    const int64_t s_in[2] = {D, pdim}, s_pos[3] = {2, P, D}, s_proj[2] = {c->text_hidden_size, D};
    if ((st = g4v_prep_check_shape(WHO, &ck->input_proj, "patch_embedder.input_proj", -1, 2, s_in,
                                   err)) ||
        (st = g4v_prep_check_shape(WHO, &ck->position_table,
                                   "patch_embedder.position_embedding_table", -1, 3, s_pos, err)) ||
        (st = g4v_prep_check_shape(WHO, &ck->embed_proj, "embed_vision.embedding_projection", -1, 2,
                                   s_proj, err)))
        return st;
    if (c->standardize &&
        ((st = g4v_prep_check_shape(WHO, &ck->std_bias, "std_bias", -1, 1, &D, err)) ||
         (st = g4v_prep_check_shape(WHO, &ck->std_scale, "std_scale", -1, 1, &D, err))))
        return st;
    if (c->num_layers > 0 && !ck->layers)
        return g4v_fail(err, G4V_ERR_MODEL, "encoder: checkpoint has no layer table");

    size_t nvec = (size_t)c->num_layers * (size_t)(4 * D + 2 * d) + 2 * (size_t)D;
    e->vectors = g4v_malloc_array(nvec, sizeof(float));
    e->layers = g4v_calloc(c->num_layers > 0 ? (size_t)c->num_layers : 1, sizeof(enc_layer));
    if (!e->vectors || !e->layers)
        return g4v_fail(err, G4V_ERR_NOMEM, "encoder: out of memory for %d layers", c->num_layers);
    int nitems = c->num_layers * G4V_LIN_COUNT + 2;
    g4v_prep_item *queue = g4v_malloc_array((size_t)nitems, sizeof *queue);
    if (!queue)
        return g4v_fail(err, G4V_ERR_NOMEM, "encoder: out of memory for %d layers", c->num_layers);
    float *vec = e->vectors;
    for (int i = 0; i < c->num_layers; i++)
        if ((st = prepare_layer(e, &ck->layers[i], i, &vec, queue + (size_t)i * G4V_LIN_COUNT,
                                err))) {
            g4v_free(queue);
            return st;
        }
    if (c->standardize) {
        e->std_bias = g4v_prep_widen(&ck->std_bias, vec, D);
        e->std_scale = g4v_prep_widen(&ck->std_scale, vec + D, D);
    }
    e->position_table = ck->position_table;
    g4v_prep_item *tail = queue + (size_t)c->num_layers * G4V_LIN_COUNT;
    /* INT8: the patch embedding stays FAST (its inputs, the integers 2u - 255, are exact in bf16
     * but not in 8 bits, and it is ~1% of the FLOPs) */
    tail[0] = (g4v_prep_item){&ck->input_proj,
                              g4v_math_is_int8(e->mode) ? G4V_MATH_FAST : e->mode,
                              &e->input_proj,
                              "input_proj",
                              -1,
                              0,
                              0,
                              e->pack_weights};
    /* The final projection is ~0.1% of the FLOPs; in f32 it removes a visible share of the
     * error (docs/NUMERICS.md §8.4), so it ignores the FAST mode. */
    tail[1] = (g4v_prep_item){
        &ck->embed_proj, G4V_MATH_PRECISE, &e->embed_proj, "embedding_projection", -1, 0, 0,
        e->pack_weights};
    st = e->check_only ? G4V_OK : g4v_prep_place(WHO, e->kernels, queue, nitems, &e->weights, err);
    if (!st && !e->check_only)
        st = g4v_prep_pack(WHO, e->kernels, e->weights, e->drop_mapped_pages, pool, queue, nitems,
                           err);
    g4v_free(queue);
    return st;
}

int g4v_encoder_create(const g4v_checkpoint *ck, const g4v_encoder_opts *opts, g4v_encoder **out,
                       g4v_err *err) {
    *out = NULL;
    if (!ck) return g4v_fail(err, G4V_ERR_ARG, "encoder: no checkpoint");
    g4v_math_mode mode = opts ? opts->mode : G4V_MATH_FAST;
    if (mode != G4V_MATH_FAST && mode != G4V_MATH_PRECISE && !g4v_math_is_int8(mode))
        return g4v_fail(err, G4V_ERR_ARG, "encoder: unknown math mode %d", (int)mode);
    int st = check_config(&ck->cfg, err);
    if (st) return st;
    g4v_encoder *e = g4v_calloc(1, sizeof *e);
    if (!e) return g4v_fail(err, G4V_ERR_NOMEM, "encoder: out of memory");
    e->cfg = ck->cfg;
    e->mode = mode;
    e->int8_fast_linears = opts && opts->int8_fast_linears
                               ? opts->int8_fast_linears & ((1u << G4V_LIN_COUNT) - 1)
                               : G4V_INT8_FAST_LINEARS;
    e->drop_mapped_pages = opts ? opts->drop_mapped_pages : 0;
    e->check_only = opts ? opts->check_only : 0;
    e->pack_weights = opts ? opts->pack_weights : 0;
    /* 1024 rows: e4b's MLP gate and up for one chunk are then 25 MB, the GEMMs stay efficient */
    e->chunk_rows = opts && opts->chunk_rows > 0 ? opts->chunk_rows : 1024;
    e->batch_rows = opts && opts->batch_rows > 0 ? opts->batch_rows : 8192;
    e->kernels = g4v_kernels_current(); /* the one kernel choice for this model's life */
    if ((st = build(e, ck, opts ? opts->pool : NULL, err))) {
        g4v_encoder_free(e);
        return st;
    }
    *out = e;
    return G4V_OK;
}

void g4v_encoder_kernel_path(const g4v_encoder *e, char *buf, size_t cap) {
    g4v_kernel_path_of(e->kernels, buf, cap);
}

int g4v_encoder_weights_in_place(const g4v_encoder *e) {
    for (int i = 0; e->layers && i < e->cfg.num_layers; i++)
        for (int j = 0; j < G4V_LIN_COUNT; j++)
            if (e->layers[i].lin[j] && g4v_wmat_in_place(e->layers[i].lin[j])) return 1;
    return 0;
}

void g4v_encoder_free(g4v_encoder *e) {
    if (!e) return;
    if (e->layers)
        for (int i = 0; i < e->cfg.num_layers; i++)
            for (int j = 0; j < G4V_LIN_COUNT; j++)
                g4v_wmat_free(e->layers[i].lin[j]);
    g4v_wmat_free(e->input_proj);
    g4v_wmat_free(e->embed_proj);
    g4v_free_large(e->weights);
    g4v_free(e->layers);
    g4v_free(e->vectors);
    g4v_free(e);
}
