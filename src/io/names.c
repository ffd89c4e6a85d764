/* names.c - the wanted-tensor list (see names.h). */
#include "io/names.h"

#include "base/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const g4v_clip_keys[4] = {"input_min", "input_max", "output_min", "output_max"};

const char *const g4v_lin_names[G4V_LIN_COUNT] = {
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
    "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};

typedef struct builder {
    g4v_wanted *w;
    size_t n, cap;
} builder;

__attribute__((format(printf, 7, 8))) static void add(builder *b, g4v_tensor *dst, int ndim,
                                                      int64_t d0, int64_t d1, int64_t d2,
                                                      const char *fmt, ...) {
    g4v_wanted *w = &b->w[b->n++]; /* capacity computed exactly by the caller */
    memset(w, 0, sizeof *w);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->name, sizeof w->name, fmt, ap);
    va_end(ap);
    w->ndim = ndim;
    w->shape[0] = d0;
    w->shape[1] = d1;
    w->shape[2] = d2;
    w->dst = dst;
    w->file = -1;
    w->shard = -1;
}

static int cmp_wanted(const void *a, const void *b) {
    return strcmp(((const g4v_wanted *)a)->name, ((const g4v_wanted *)b)->name);
}

/* The unified embedder's tensors under their Hub names (docs/NUMERICS.md §9.3). */
static int build_unified(const g4v_vision_config *cfg, g4v_checkpoint *ck, g4v_wanted **out,
                         size_t *n, g4v_err *err) {
    const int64_t E = cfg->hidden_size, P = cfg->position_embedding_size;
    const int64_t side = (int64_t)cfg->patch_size * cfg->pooling_kernel_size, Q = 3 * side * side;
    g4v_unified_weights *u = &ck->unified;
    builder b = {g4v_malloc_array(10, sizeof(g4v_wanted)), 0, 10};
    if (!b.w) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory for the tensor list");
    const char *pre = "vision_embedder";
    add(&b, &u->ln1_w, 1, Q, 0, 0, "%s.patch_ln1.weight", pre);
    add(&b, &u->ln1_b, 1, Q, 0, 0, "%s.patch_ln1.bias", pre);
    add(&b, &u->dense_w, 2, E, Q, 0, "%s.patch_dense.weight", pre);
    add(&b, &u->dense_b, 1, E, 0, 0, "%s.patch_dense.bias", pre);
    add(&b, &u->ln2_w, 1, E, 0, 0, "%s.patch_ln2.weight", pre);
    add(&b, &u->ln2_b, 1, E, 0, 0, "%s.patch_ln2.bias", pre);
    add(&b, &u->pos, 3, P, 2, E, "%s.pos_embedding", pre);
    add(&b, &u->pos_norm_w, 1, E, 0, 0, "%s.pos_norm.weight", pre);
    add(&b, &u->pos_norm_b, 1, E, 0, 0, "%s.pos_norm.bias", pre);
    add(&b, &ck->embed_proj, 2, cfg->text_hidden_size, E, 0,
        "embed_vision.embedding_projection.weight");
    qsort(b.w, b.n, sizeof *b.w, cmp_wanted);
    *out = b.w;
    *n = b.n;
    return G4V_OK;
}

int g4v_wanted_build(const g4v_vision_config *cfg, g4v_checkpoint *ck, g4v_tensor *clips,
                     g4v_wanted **out, size_t *n, g4v_err *err) {
    if (cfg->kind == G4V_KIND_UNIFIED) return build_unified(cfg, ck, out, n, err);
    const int64_t D = cfg->hidden_size, I = cfg->intermediate_size, d = cfg->head_dim;
    const int64_t q = (int64_t)cfg->num_heads * d, kv = (int64_t)cfg->num_kv_heads * d;
    const int64_t p = cfg->patch_size;
    size_t per_layer = 6 + G4V_LIN_COUNT + (cfg->use_clipped_linears ? 4 * G4V_LIN_COUNT : 0);
    size_t cap = 3 + (size_t)cfg->num_layers * per_layer + (cfg->standardize ? 2 : 0);
    builder b = {g4v_malloc_array(cap, sizeof(g4v_wanted)), 0, cap};
    if (!b.w) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory for the tensor list");

    add(&b, &ck->input_proj, 2, D, 3 * p * p, 0, "vision_tower.patch_embedder.input_proj.weight");
    add(&b, &ck->position_table, 3, 2, cfg->position_embedding_size, D,
        "vision_tower.patch_embedder.position_embedding_table");
    add(&b, &ck->embed_proj, 2, cfg->text_hidden_size, D, 0,
        "embed_vision.embedding_projection.weight");
    if (cfg->standardize) {
        add(&b, &ck->std_bias, 1, D, 0, 0, "vision_tower.std_bias");
        add(&b, &ck->std_scale, 1, D, 0, 0, "vision_tower.std_scale");
    }
    const int64_t lin_shape[G4V_LIN_COUNT][2] = {{q, D}, {kv, D}, {kv, D}, {D, q},
                                                 {I, D}, {I, D},  {D, I}};
    for (int i = 0; i < cfg->num_layers; i++) {
        g4v_layer_weights *L = &ck->layers[i];
        const char *pre = "vision_tower.encoder.layers";
        add(&b, &L->input_layernorm, 1, D, 0, 0, "%s.%d.input_layernorm.weight", pre, i);
        add(&b, &L->post_attention_layernorm, 1, D, 0, 0, "%s.%d.post_attention_layernorm.weight",
            pre, i);
        add(&b, &L->pre_feedforward_layernorm, 1, D, 0, 0, "%s.%d.pre_feedforward_layernorm.weight",
            pre, i);
        add(&b, &L->post_feedforward_layernorm, 1, D, 0, 0,
            "%s.%d.post_feedforward_layernorm.weight", pre, i);
        add(&b, &L->q_norm, 1, d, 0, 0, "%s.%d.self_attn.q_norm.weight", pre, i);
        add(&b, &L->k_norm, 1, d, 0, 0, "%s.%d.self_attn.k_norm.weight", pre, i);
        for (int j = 0; j < G4V_LIN_COUNT; j++) {
            add(&b, &L->lin[j], 2, lin_shape[j][0], lin_shape[j][1], 0, "%s.%d.%s.linear.weight",
                pre, i, g4v_lin_names[j]);
            if (!cfg->use_clipped_linears) continue;
            for (int k = 0; k < 4; k++)
                add(&b, &clips[((size_t)i * G4V_LIN_COUNT + j) * 4 + k], 0, 0, 0, 0, "%s.%d.%s.%s",
                    pre, i, g4v_lin_names[j], g4v_clip_keys[k]);
        }
    }
    qsort(b.w, b.n, sizeof *b.w, cmp_wanted);
    *out = b.w;
    *n = b.n;
    return G4V_OK;
}

/* The canonical spelling of a name without "model.", written into key (cap bytes); 0 if it does
 * not fit. transformers loads the unified embedder as embed_vision.{patch_*,pos_*} and
 * embed_vision.multimodal_embedder.embedding_projection, and files re-saved from it keep those
 * names; the Hub files say vision_embedder.* and embed_vision.embedding_projection. */
static int canonical(const char *name, char *key, size_t cap) {
    static const char ev[] = "embed_vision.", mm[] = "multimodal_embedder.";
    const char *head = "", *tail = name;
    if (!strncmp(name, ev, sizeof ev - 1)) {
        const char *rest = name + sizeof ev - 1;
        if (!strncmp(rest, mm, sizeof mm - 1)) {
            head = ev;
            tail = rest + sizeof mm - 1;
        } else if (!strncmp(rest, "patch_", 6) || !strncmp(rest, "pos_", 4)) {
            head = "vision_embedder.";
            tail = rest;
        }
    }
    size_t a = strlen(head), b = strlen(tail);
    if (a + b >= cap) return 0;
    memcpy(key, head, a);
    memcpy(key + a, tail, b + 1);
    return 1;
}

g4v_wanted *g4v_wanted_find(g4v_wanted *w, size_t n, const char *name, int *prefixed) {
    *prefixed = !strncmp(name, "model.", 6);
    g4v_wanted key;
    if (!canonical(name + (*prefixed ? 6 : 0), key.name, sizeof key.name)) return NULL;
    return bsearch(&key, w, n, sizeof *w, cmp_wanted);
}
