/* model.c - g4v_encoder_create: turns an opened checkpoint into a model ready to run.
 * Every weight matrix is prepared for the GEMM once here (never per image); norm vectors and
 * the standardize buffers are widened to f32 once. The shapes the forward pass relies on are
 * checked again here, so a loader bug becomes an error message rather than an out-of-bounds read.
 * The position table stays in the (mapped) checkpoint: an image touches only a few of its rows. */
#include "encoder_internal.h"

#include "base/alloc.h"
#include "kernels/dispatch.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static const char *const lin_names[G4V_LIN_COUNT] = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                     "gate_proj", "up_proj", "down_proj"};

/* Checks t has exactly the given shape (ndim entries of s). */
static int check_shape(const g4v_tensor *t, const char *name, int layer, int ndim, const int64_t *s,
                       g4v_err *err) {
    char where[96];
    if (layer >= 0)
        snprintf(where, sizeof where, "layer %d %s", layer, name);
    else
        snprintf(where, sizeof where, "%s", name);
    if (!t->data) return g4v_fail(err, G4V_ERR_MODEL, "encoder: tensor %s is missing", where);
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        ok = t->shape[i] == s[i];
    size_t count = 1;
    for (int i = 0; ok && i < ndim; i++)
        count *= (size_t)s[i];
    if (ok && t->nbytes != count * g4v_dtype_size(t->dtype)) ok = 0;
    if (!ok) {
        char exp[96] = "", got[96] = "";
        for (int i = 0; i < ndim; i++)
            snprintf(exp + strlen(exp), sizeof exp - strlen(exp), "%s%lld", i ? "," : "",
                     (long long)s[i]);
        for (int i = 0; i < t->ndim && i < 4; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? "," : "",
                     (long long)t->shape[i]);
        return g4v_fail(err, G4V_ERR_MODEL,
                        "encoder: tensor %s: expected shape [%s], found [%s] (%zu bytes)", where,
                        exp, got, t->nbytes);
    }
    return G4V_OK;
}

static int check_config(const g4v_vision_config *c, g4v_err *err) {
    if (c->hidden_size <= 0 || c->intermediate_size <= 0 || c->num_layers < 0 ||
        c->num_heads <= 0 || c->num_kv_heads <= 0 || c->head_dim <= 0 || c->patch_size <= 0 ||
        c->pooling_kernel_size <= 0 || c->position_embedding_size <= 0 || c->text_hidden_size <= 0)
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
        c->hidden_size > (1 << 16) || c->intermediate_size > (1 << 18) || c->num_heads > 4096 ||
        c->text_hidden_size > (1 << 18))
        return g4v_fail(err, G4V_ERR_UNSUPPORTED, "encoder: vision config sizes out of range");
    if (!(c->rope_theta > 0.0) || !(c->rms_norm_eps >= 0.0))
        return g4v_fail(err, G4V_ERR_MODEL, "encoder: rope_theta %g / rms_norm_eps %g invalid",
                        c->rope_theta, c->rms_norm_eps);
    return G4V_OK;
}

/* Copies a checked [n] tensor to f32 at dst. */
static const float *widen(const g4v_tensor *t, float *dst, int n) {
    for (int i = 0; i < n; i++)
        dst[i] = g4v_tensor_get(t, (size_t)i);
    return dst;
}

/* One weight matrix to pack (build collects them all, then packs them on the pool). */
typedef struct {
    const g4v_tensor *t;
    g4v_math_mode mode;
    g4v_wmat **out;
    const char *name;
    int layer;  /* -1 for the weights outside the layers */
    int placed; /* 1: packed into the model's weight block at offset, else a block of its own */
    size_t offset;
} pack_item;

typedef struct {
    const g4v_encoder *e;
    const pack_item *items;
    int *status;
    g4v_err *errs;
} pack_job;

/* Packs one weight; each task writes only its own wmat, status and message. */
static void pack_task(void *arg, int i, int worker) {
    (void)worker;
    const pack_job *j = arg;
    const pack_item *it = &j->items[i];
    const g4v_tensor *t = it->t;
    g4v_err *err = &j->errs[i];
    void *storage = it->placed ? (char *)j->e->weights + it->offset : NULL;
    int st = g4v_wmat_create_in(j->e->kernels, t->data, t->dtype, (int)t->shape[0],
                                (int)t->shape[1], it->mode, storage, it->out, err);
    if (!st && j->e->drop_mapped_pages) g4v_tensor_drop_pages(t);
    if (st && it->layer >= 0)
        g4v_err_prefix(err, "encoder: preparing layer %d %s: ", it->layer, it->name);
    else if (st)
        g4v_err_prefix(err, "encoder: preparing %s: ", it->name);
    j->status[i] = st;
}

/* Gives every queued weight its place in one block (e->weights, huge pages): one rounding to
 * 2 MB for the model instead of one per weight. A weight whose size is unknown here (no kernel
 * fits it) is not placed, and packing it reports why. */
static int place_weights(g4v_encoder *e, pack_item *items, int n, g4v_err *err) {
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        const g4v_tensor *t = items[i].t;
        size_t b = g4v_wmat_packed_bytes(e->kernels, t->dtype, (int)t->shape[0], (int)t->shape[1],
                                         items[i].mode);
        size_t r = (b + 63) & ~(size_t)63;
        if (r < b || total + r < total)
            return g4v_fail(err, G4V_ERR_NOMEM, "encoder: the weights do not fit in memory");
        items[i].placed = b > 0;
        items[i].offset = total;
        total += r;
    }
    e->weights = total ? g4v_malloc_large(total) : NULL;
    if (total && !e->weights)
        return g4v_fail(err, G4V_ERR_NOMEM, "encoder: out of memory for %zu MB of weights",
                        total >> 20);
    return G4V_OK;
}

/* Packs every queued weight on the pool (NULL: this thread): the weights are independent, and
 * packing is mostly first touches of fresh pages, which parallelise. On failure, the message of
 * the first failing weight in queue order (the same whatever the thread count). */
static int pack_all(const g4v_encoder *e, g4v_pool *pool, const pack_item *items, int n,
                    g4v_err *err) {
    int *status = g4v_calloc((size_t)n, sizeof *status);
    g4v_err *errs = g4v_malloc_array((size_t)n, sizeof *errs);
    if (!status || !errs) {
        g4v_free(status);
        g4v_free(errs);
        return g4v_fail(err, G4V_ERR_NOMEM, "encoder: out of memory preparing %d weights", n);
    }
    pack_job job = {e, items, status, errs};
    g4v_pool_run(pool, n, pack_task, &job);
    int st = G4V_OK;
    for (int i = 0; i < n && !st; i++)
        if ((st = status[i])) *err = errs[i];
    g4v_free(status);
    g4v_free(errs);
    return st;
}

/* Checks layer i's shapes, widens its vectors, sets its clamps and queues its seven matrices. */
static int prepare_layer(g4v_encoder *e, const g4v_layer_weights *w, int i, float **vec,
                         pack_item *queue, g4v_err *err) {
    const g4v_vision_config *c = &e->cfg;
    int64_t D = c->hidden_size, I = c->intermediate_size, d = c->head_dim;
    int64_t qd = (int64_t)c->num_heads * d, kvd = (int64_t)c->num_kv_heads * d;
    const int64_t shapes[G4V_LIN_COUNT][2] = {{qd, D}, {kvd, D}, {kvd, D}, {D, qd},
                                              {I, D},  {I, D},   {D, I}};
    enc_layer *el = &e->layers[i];
    for (int j = 0; j < G4V_LIN_COUNT; j++) {
        int st = check_shape(&w->lin[j], lin_names[j], i, 2, shapes[j], err);
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
        int st = check_shape(vecs[j], vec_names[j], i, 1, &n, err);
        if (st) return st;
        dst[j] = widen(vecs[j], *vec, (int)n);
        *vec += n;
    }
    el->ln_in = dst[0];
    el->ln_post_attn = dst[1];
    el->ln_pre_ff = dst[2];
    el->ln_post_ff = dst[3];
    el->q_norm = dst[4];
    el->k_norm = dst[5];
    for (int j = 0; j < G4V_LIN_COUNT; j++) {
        const g4v_clip *cl = &w->clip[j]; /* ordered and not NaN: checked by the loader */
        el->epi[j] = g4v_gemm_epi_none();
        el->epi[j].in_lo = cl->in_min;
        el->epi[j].in_hi = cl->in_max;
        el->epi[j].out_lo = cl->out_min;
        el->epi[j].out_hi = cl->out_max;
        queue[j] = (pack_item){&w->lin[j], e->mode, &el->lin[j], lin_names[j], i, 0, 0};
    }
    return G4V_OK;
}

static int build(g4v_encoder *e, const g4v_checkpoint *ck, g4v_pool *pool, g4v_err *err) {
    const g4v_vision_config *c = &e->cfg;
    int64_t D = c->hidden_size, d = c->head_dim, P = c->position_embedding_size;
    int64_t pdim = 3 * (int64_t)c->patch_size * c->patch_size;
    int st;
    const int64_t s_in[2] = {D, pdim}, s_pos[3] = {2, P, D}, s_proj[2] = {c->text_hidden_size, D};
    if ((st = check_shape(&ck->input_proj, "patch_embedder.input_proj", -1, 2, s_in, err)) ||
        (st = check_shape(&ck->position_table, "patch_embedder.position_embedding_table", -1, 3,
                          s_pos, err)) ||
        (st =
             check_shape(&ck->embed_proj, "embed_vision.embedding_projection", -1, 2, s_proj, err)))
        return st;
    if (c->standardize && ((st = check_shape(&ck->std_bias, "std_bias", -1, 1, &D, err)) ||
                           (st = check_shape(&ck->std_scale, "std_scale", -1, 1, &D, err))))
        return st;
    if (c->num_layers > 0 && !ck->layers)
        return g4v_fail(err, G4V_ERR_MODEL, "encoder: checkpoint has no layer table");

    size_t nvec = (size_t)c->num_layers * (size_t)(4 * D + 2 * d) + 2 * (size_t)D;
    e->vectors = g4v_malloc_array(nvec, sizeof(float));
    e->layers = g4v_calloc(c->num_layers > 0 ? (size_t)c->num_layers : 1, sizeof(enc_layer));
    if (!e->vectors || !e->layers)
        return g4v_fail(err, G4V_ERR_NOMEM, "encoder: out of memory for %d layers", c->num_layers);
    int nitems = c->num_layers * G4V_LIN_COUNT + 2;
    pack_item *queue = g4v_malloc_array((size_t)nitems, sizeof *queue);
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
        e->std_bias = widen(&ck->std_bias, vec, (int)D);
        e->std_scale = widen(&ck->std_scale, vec + D, (int)D);
    }
    e->position_table = ck->position_table;
    pack_item *tail = queue + (size_t)c->num_layers * G4V_LIN_COUNT;
    tail[0] = (pack_item){&ck->input_proj, e->mode, &e->input_proj, "input_proj", -1, 0, 0};
    /* The final projection is ~0.1% of the FLOPs; in f32 it removes a visible share of the
     * error (docs/NUMERICS.md §8.4), so it ignores the FAST mode. */
    tail[1] = (pack_item){
        &ck->embed_proj, G4V_MATH_PRECISE, &e->embed_proj, "embedding_projection", -1, 0, 0};
    st = place_weights(e, queue, nitems, err);
    if (!st) st = pack_all(e, pool, queue, nitems, err);
    g4v_free(queue);
    return st;
}

int g4v_encoder_create(const g4v_checkpoint *ck, const g4v_encoder_opts *opts, g4v_encoder **out,
                       g4v_err *err) {
    *out = NULL;
    if (!ck) return g4v_fail(err, G4V_ERR_ARG, "encoder: no checkpoint");
    g4v_math_mode mode = opts ? opts->mode : G4V_MATH_FAST;
    if (mode != G4V_MATH_FAST && mode != G4V_MATH_PRECISE)
        return g4v_fail(err, G4V_ERR_ARG, "encoder: unknown math mode %d", (int)mode);
    int st = check_config(&ck->cfg, err);
    if (st) return st;
    g4v_encoder *e = g4v_calloc(1, sizeof *e);
    if (!e) return g4v_fail(err, G4V_ERR_NOMEM, "encoder: out of memory");
    e->cfg = ck->cfg;
    e->mode = mode;
    e->drop_mapped_pages = opts ? opts->drop_mapped_pages : 0;
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

const g4v_vision_config *g4v_encoder_config(const g4v_encoder *e) {
    return &e->cfg;
}
