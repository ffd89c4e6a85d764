/* mmproj_gguf.c - a llama.cpp mmproj GGUF (projector gemma4v: the towers of e2b/e4b/26B-A4B/31B;
 * gemma4uv: the 12B unified embedder) opened as a g4v_checkpoint, the same struct a safetensors
 * directory fills, so everything above src/io is unchanged. docs/GGUF.md is the contract.
 *
 * Steps: parse the header (gguf.c) -> the vision config from the clip.vision.* keys, the values
 * llama.cpp hard-codes (llama.cpp/tools/mtmd/clip.cpp) and the tensor shapes -> the wanted list
 * of names.c (canonical names, expected shapes) -> each canonical name to its GGUF name and
 * layout -> validate type, shape and data range, refuse overlaps -> map the used ranges -> views,
 * or owned copies for what the converter changed or what our kernels do not read:
 *   - the patch embedding: llama.cpp stores the conv layout [E, 3, p, p] (channel outermost);
 *     we restore HF's [E, p*p*3] (y, x, channel fastest). The 12B embedder's patch_dense columns
 *     and patch_ln1 vector got the same channel-first permutation from the converter.
 *   - the 12B position table: stored [2, P, E], we use [P, 2, E].
 *   - Q8_0 tensors are widened to F32: d * q is exact in f32 (an 11-bit f16 scale times an 8-bit
 *     integer), so the weights the kernels see are exactly the file's.
 *   - in a MOSTLY_BF16 file the converter writes the patch embedding as F32 (widened from bf16);
 *     when every value is a bf16 we keep it as BF16, so a BF16 GGUF gives the same bits as the
 *     safetensors checkpoint it came from (the BF16 and F32 GEMM kernels are not bit-identical).
 * Everything else (F32, F16, BF16) stays a read-only view of the mapping. The encoder reads
 * norms, clip scalars and position rows as floats whatever their dtype, so the converter's F32
 * copies of bf16 vectors give the same bits too.
 */
#include "io/mmproj_gguf.h"

#include "io/budget_defaults.h"
#include "io/checkpoint_internal.h"
#include "io/config.h"
#include "io/gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FTYPE_BF16 32 /* llama_ftype MOSTLY_BF16 */
/* torch.nn.LayerNorm's default eps: the 12B embedder's three LayerNorms (docs/NUMERICS.md §9.1);
 * the mmproj's layer_norm_epsilon is the RMSNorm's (llama.cpp hard-codes 1e-5 for them too). */
#define UNIFIED_LAYER_NORM_EPS 1e-5

enum { X_VIEW, X_CHW, X_SWAP01 };

typedef struct src_info {
    const g4v_gguf_tensor *t;
    uint64_t nbytes; /* in the file */
    int xform;       /* X_* */
    int side;        /* X_CHW: the patch side whose (c, y, x) order is undone */
    int conv;        /* X_CHW of the tower's patch embedding: stored as [E, 3, p, p] */
    char gname[G4V_GGUF_MAX_NAME];
    const void *data; /* mapped */
} src_info;

typedef struct gl {
    const char *path;
    const g4v_checkpoint_limits *lim;
    g4v_gguf_file f;
    g4v_checkpoint *ck;
    g4v_err *err;
    int64_t ftype;
    char proj[32];
    g4v_wanted *w;
    size_t nw;
    src_info *src; /* [nw] */
} gl;

/* ---- configuration ---------------------------------------------------------------------- */

/* The shortest decimal that reads back as the f32 v, as a double: the converter wrote 1e-6 as
 * an f32 key; the config then says 1e-06 as config.json does (same f32 for the kernels). */
static double f32_decimal(float v) {
    char buf[32];
    for (int prec = 1; prec <= 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)v);
        if (strtof(buf, NULL) == v) return strtod(buf, NULL);
    }
    return v;
}

static int get_int(gl *L, const char *key, int64_t lo, int64_t hi, int required, int64_t def,
                   int *dst) {
    int64_t v = def;
    int present;
    int st = g4v_gguf_get_int(&L->f, key, lo, hi, &v, &present, L->err);
    if (st) return st;
    if (!present && required)
        return g4v_fail(L->err, G4V_ERR_MODEL, "%s: metadata %s is missing", L->path, key);
    *dst = (int)v;
    return G4V_OK;
}

/* ggml torch-order shape (outermost first) of t as a string. */
static void shape_of(const g4v_gguf_tensor *t, char *buf, size_t cap) {
    int64_t s[G4V_GGUF_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++)
        s[i] = t->ne[t->ndim - 1 - i];
    g4v_shape_str(buf, cap, t->ndim, s);
}

/* P and the width from v.position_embd.weight ([2, P, width] in torch order). */
static int position_rows(gl *L, int width, int *P) {
    const g4v_gguf_tensor *t = g4v_gguf_tensor_find(&L->f, "v.position_embd.weight");
    if (!t)
        return g4v_fail(L->err, G4V_ERR_MODEL, "%s: missing tensor v.position_embd.weight",
                        L->path);
    if (t->ndim != 3 || t->ne[0] != width || t->ne[2] != 2 || t->ne[1] < 1 || t->ne[1] > 1 << 20) {
        char sh[128];
        shape_of(t, sh, sizeof sh);
        return g4v_fail(L->err, G4V_ERR_MODEL,
                        "%s: tensor v.position_embd.weight: expected shape [2, P, %d] with P in "
                        "[1, 1048576], found %s",
                        L->path, width, sh);
    }
    *P = (int)t->ne[1];
    return G4V_OK;
}

/* T from mm.input_projection.weight ([T, width]); clip.vision.projection_dim must agree. */
static int text_width(gl *L, int width, int *T) {
    const g4v_gguf_tensor *t = g4v_gguf_tensor_find(&L->f, "mm.input_projection.weight");
    if (!t)
        return g4v_fail(L->err, G4V_ERR_MODEL, "%s: missing tensor mm.input_projection.weight",
                        L->path);
    if (t->ndim != 2 || t->ne[0] != width || t->ne[1] < 1 || t->ne[1] > 1 << 17) {
        char sh[128];
        shape_of(t, sh, sizeof sh);
        return g4v_fail(L->err, G4V_ERR_MODEL,
                        "%s: tensor mm.input_projection.weight: expected shape [T, %d], found %s",
                        L->path, width, sh);
    }
    *T = (int)t->ne[1];
    int pd = *T, st = get_int(L, "clip.vision.projection_dim", 1, 1 << 17, 0, *T, &pd);
    if (st) return st;
    if (pd != *T)
        return g4v_fail(L->err, G4V_ERR_MODEL,
                        "%s: clip.vision.projection_dim %d disagrees with mm.input_projection.weight "
                        "(%d rows)",
                        L->path, pd, *T);
    return G4V_OK;
}

static int has_suffix(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

static int read_tower(gl *L, g4v_vision_config *c) {
    int st;
    const int64_t dim = 65536;
    if ((st = get_int(L, "clip.vision.embedding_length", 1, dim, 1, 0, &c->hidden_size)) ||
        (st = get_int(L, "clip.vision.feed_forward_length", 1, dim, 1, 0, &c->intermediate_size)) ||
        (st = get_int(L, "clip.vision.block_count", 1, 1024, 1, 0, &c->num_layers)) ||
        (st = get_int(L, "clip.vision.attention.head_count", 1, 4096, 1, 0, &c->num_heads)))
        return st;
    /* Not written by the converter for Gemma 4: d and Hkv follow from the tensors (llama.cpp
     * takes d = D / H and Hkv = H, which holds for every released model). */
    int d = 0, hkv = 0;
    const g4v_gguf_tensor *qn = g4v_gguf_tensor_find(&L->f, "v.blk.0.attn_q_norm.weight");
    int d_def = qn && qn->ndim == 1 && qn->ne[0] > 0 && qn->ne[0] <= dim ? (int)qn->ne[0]
                                                                           : c->hidden_size / c->num_heads;
    if ((st = get_int(L, "clip.vision.attention.head_dim", 1, dim, 0, d_def, &d))) return st;
    if (d < 1)
        return g4v_fail(L->err, G4V_ERR_MODEL, "%s: cannot tell the head width", L->path);
    const g4v_gguf_tensor *k = g4v_gguf_tensor_find(&L->f, "v.blk.0.attn_k.weight");
    int hkv_def = k && k->ndim == 2 && k->ne[1] % d == 0 && k->ne[1] / d >= 1 &&
                          k->ne[1] / d <= 4096
                      ? (int)(k->ne[1] / d)
                      : c->num_heads;
    if ((st = get_int(L, "clip.vision.attention.head_count_kv", 1, 4096, 0, hkv_def, &hkv)))
        return st;
    c->head_dim = d;
    c->num_kv_heads = hkv;
    if (c->num_heads % c->num_kv_heads)
        return g4v_fail(L->err, G4V_ERR_MODEL,
                        "%s: %d attention heads are not a multiple of %d key/value heads", L->path,
                        c->num_heads, c->num_kv_heads);
    if ((int64_t)c->num_heads * d > dim)
        return g4v_fail(L->err, G4V_ERR_MODEL, "%s: heads x head width above %lld", L->path,
                        (long long)dim);
    if ((st = position_rows(L, c->hidden_size, &c->position_embedding_size))) return st;
    if ((st = text_width(L, c->hidden_size, &c->text_hidden_size))) return st;
    /* Optional parts: clip scalars (absent = unclipped, as llama.cpp), standardize. */
    for (size_t i = 0; i < L->f.nt; i++) {
        const char *n = L->f.t[i].name;
        if (!strncmp(n, "v.blk.", 6) &&
            (has_suffix(n, ".input_min") || has_suffix(n, ".input_max") ||
             has_suffix(n, ".output_min") || has_suffix(n, ".output_max")))
            c->use_clipped_linears = 1;
        if (!strncmp(n, "v.blk.", 6) && strstr(n, ".out_scale."))
            return g4v_fail(L->err, G4V_ERR_UNSUPPORTED,
                            "%s: tensor %s: per-layer output scales are not part of the Gemma 4 "
                            "vision tower",
                            L->path, n);
    }
    c->standardize = g4v_gguf_tensor_find(&L->f, "v.std_bias") ||
                     g4v_gguf_tensor_find(&L->f, "v.std_scale");
    c->rope_theta = 100.0; /* clip.cpp: hparams.rope_theta = 100 for gemma4v */
    snprintf(c->variant, sizeof c->variant, "%s",
             g4v_config_variant(c->hidden_size, c->text_hidden_size));
    return G4V_OK;
}

static int read_unified(gl *L, g4v_vision_config *c) {
    int st = get_int(L, "clip.vision.embedding_length", 1, 65536, 1, 0, &c->hidden_size);
    if (st) return st;
    if ((st = position_rows(L, c->hidden_size, &c->position_embedding_size))) return st;
    if ((st = text_width(L, c->hidden_size, &c->text_hidden_size))) return st;
    c->kind = G4V_KIND_UNIFIED;
    c->layer_norm_eps = UNIFIED_LAYER_NORM_EPS;
    snprintf(c->variant, sizeof c->variant, "%s",
             c->hidden_size == 3840 && c->text_hidden_size == 3840 ? "12b" : "custom");
    return G4V_OK;
}

static int read_config(gl *L) {
    g4v_vision_config *c = &L->ck->cfg;
    memset(c, 0, sizeof *c);
    char s[64];
    int present, st;
    if ((st = g4v_gguf_get_str(&L->f, "general.type", s, sizeof s, &present, L->err))) return st;
    if (present && strcmp(s, "mmproj"))
        return g4v_fail(L->err, G4V_ERR_UNSUPPORTED,
                        "%s: general.type is '%s': this is not an mmproj (projector) GGUF; llama.cpp "
                        "ships the vision encoder as a separate mmproj-*.gguf file",
                        L->path, s);
    if ((st = g4v_gguf_get_str(&L->f, "general.architecture", s, sizeof s, &present, L->err)))
        return st;
    if (present && strcmp(s, "clip"))
        return g4v_fail(L->err, G4V_ERR_UNSUPPORTED,
                        "%s: general.architecture is '%s', not 'clip': not an mmproj GGUF", L->path,
                        s);
    int has_vision = 1;
    if ((st = g4v_gguf_get_bool(&L->f, "clip.has_vision_encoder", &has_vision, NULL, L->err)))
        return st;
    if (!has_vision)
        return g4v_fail(L->err, G4V_ERR_UNSUPPORTED,
                        "%s: clip.has_vision_encoder is false (an audio-only projector?)", L->path);
    /* clip.cpp: clip.projector_type, else (mixed modalities) clip.vision.projector_type */
    if ((st = g4v_gguf_get_str(&L->f, "clip.projector_type", L->proj, sizeof L->proj, &present,
                               L->err)))
        return st;
    if (!present &&
        (st = g4v_gguf_get_str(&L->f, "clip.vision.projector_type", L->proj, sizeof L->proj,
                               &present, L->err)))
        return st;
    if (!present)
        return g4v_fail(L->err, G4V_ERR_MODEL,
                        "%s: no clip.projector_type or clip.vision.projector_type: not an mmproj "
                        "GGUF",
                        L->path);
    int unified = !strcmp(L->proj, "gemma4uv");
    if (!unified && strcmp(L->proj, "gemma4v"))
        return g4v_fail(L->err, G4V_ERR_UNSUPPORTED,
                        "%s: projector type '%s' is not a Gemma 4 vision projector (gemma4v, "
                        "gemma4uv)",
                        L->path, L->proj);
    int64_t ft = -1;
    if ((st = g4v_gguf_get_int(&L->f, "general.file_type", 0, 1 << 20, &ft, NULL, L->err)))
        return st;
    L->ftype = ft;
    if ((st = get_int(L, "clip.vision.patch_size", 1, 256, 1, 0, &c->patch_size))) return st;
    /* clip.cpp: n_merge = 3 unless clip.vision.projector.scale_factor says otherwise */
    if ((st = get_int(L, "clip.vision.projector.scale_factor", 1, 64, 0, 3,
                      &c->pooling_kernel_size)))
        return st;
    double eps = 1e-6;
    int is_f32 = 0;
    if ((st = g4v_gguf_get_float(&L->f, "clip.vision.attention.layer_norm_epsilon", &eps, &is_f32,
                                 &present, L->err)))
        return st;
    if (!present)
        return g4v_fail(L->err, G4V_ERR_MODEL,
                        "%s: metadata clip.vision.attention.layer_norm_epsilon is missing",
                        L->path);
    if (!(eps >= 0.0 && eps <= 1.0))
        return g4v_fail(L->err, G4V_ERR_MODEL,
                        "%s: clip.vision.attention.layer_norm_epsilon %g is outside [0, 1]",
                        L->path, eps);
    c->rms_norm_eps = is_f32 ? f32_decimal((float)eps) : eps;
    c->default_output_length = 280; /* not stored; HF's default */
    g4v_budget_defaults_builtin(c);
    /* The mmproj has no token ids: Gemma 4's (docs/NUMERICS.md §5.1). */
    c->image_token_id = 258880;
    c->boi_token_id = 255999;
    c->eoi_token_id = 258882;
    c->video_token_id = 258884;
    return unified ? read_unified(L, c) : read_tower(L, c);
}

/* ---- names ------------------------------------------------------------------------------ */

typedef struct name_rule {
    const char *canon, *gguf;
} name_rule;

/* Layer-local names (after "vision_tower.encoder.layers.N."), clip scalars aside. */
static const name_rule layer_rules[] = {
    {"input_layernorm.weight", "ln1.weight"},
    {"post_attention_layernorm.weight", "attn_post_norm.weight"},
    {"pre_feedforward_layernorm.weight", "ln2.weight"},
    {"post_feedforward_layernorm.weight", "ffn_post_norm.weight"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
};
static const char *const lin_gguf[G4V_LIN_COUNT] = {"attn_q",   "attn_k", "attn_v",  "attn_out",
                                                    "ffn_gate", "ffn_up", "ffn_down"};

/* Whole names; X_CHW side 0 means the tower's patch_size, -1 the unified patch side. */
static const struct {
    const char *canon, *gguf;
    int xform, side;
} top_rules[] = {
    {"vision_tower.patch_embedder.input_proj.weight", "v.patch_embd.weight", X_CHW, 0},
    {"vision_tower.patch_embedder.position_embedding_table", "v.position_embd.weight", X_VIEW, 0},
    {"vision_tower.std_bias", "v.std_bias", X_VIEW, 0},
    {"vision_tower.std_scale", "v.std_scale", X_VIEW, 0},
    {"embed_vision.embedding_projection.weight", "mm.input_projection.weight", X_VIEW, 0},
    {"vision_embedder.patch_ln1.weight", "v.patch_norm.1.weight", X_CHW, -1},
    {"vision_embedder.patch_ln1.bias", "v.patch_norm.1.bias", X_CHW, -1},
    {"vision_embedder.patch_dense.weight", "v.patch_embd.weight", X_CHW, -1},
    {"vision_embedder.patch_dense.bias", "v.patch_embd.bias", X_VIEW, 0},
    {"vision_embedder.patch_ln2.weight", "v.patch_norm.2.weight", X_VIEW, 0},
    {"vision_embedder.patch_ln2.bias", "v.patch_norm.2.bias", X_VIEW, 0},
    {"vision_embedder.pos_embedding", "v.position_embd.weight", X_SWAP01, 0},
    {"vision_embedder.pos_norm.weight", "v.patch_norm.3.weight", X_VIEW, 0},
    {"vision_embedder.pos_norm.bias", "v.patch_norm.3.bias", X_VIEW, 0},
};

/* The GGUF name and layout of canonical name canon (llama.cpp's gguf-py tensor_mapping.py and
 * the Gemma 4 converter; docs/GGUF.md §2). 0 if there is none (a bug in the table). */
static int gguf_name(const gl *L, const char *canon, src_info *s) {
    const g4v_vision_config *c = &L->ck->cfg;
    for (size_t i = 0; i < sizeof top_rules / sizeof top_rules[0]; i++)
        if (!strcmp(canon, top_rules[i].canon)) {
            snprintf(s->gname, sizeof s->gname, "%s", top_rules[i].gguf);
            s->xform = top_rules[i].xform;
            s->side = top_rules[i].side == 0 ? c->patch_size
                                             : c->patch_size * c->pooling_kernel_size;
            s->conv = top_rules[i].xform == X_CHW && top_rules[i].side == 0;
            return 1;
        }
    static const char pre[] = "vision_tower.encoder.layers.";
    if (strncmp(canon, pre, sizeof pre - 1)) return 0;
    char *end;
    long layer = strtol(canon + sizeof pre - 1, &end, 10);
    if (*end != '.') return 0;
    const char *rest = end + 1;
    s->xform = X_VIEW;
    for (size_t i = 0; i < sizeof layer_rules / sizeof layer_rules[0]; i++)
        if (!strcmp(rest, layer_rules[i].canon)) {
            snprintf(s->gname, sizeof s->gname, "v.blk.%ld.%s", layer, layer_rules[i].gguf);
            return 1;
        }
    for (int j = 0; j < G4V_LIN_COUNT; j++) {
        size_t n = strlen(g4v_lin_names[j]);
        if (strncmp(rest, g4v_lin_names[j], n) || rest[n] != '.') continue;
        const char *tail = rest + n + 1; /* "linear.weight" or a clip key */
        if (!strcmp(tail, "linear.weight")) tail = "weight";
        snprintf(s->gname, sizeof s->gname, "v.blk.%ld.%s.%s", layer, lin_gguf[j], tail);
        return 1;
    }
    return 0;
}

/* The torch-order shape the GGUF tensor must have for wanted entry w. */
static int expected_shape(const g4v_wanted *w, const src_info *s, int64_t *shape) {
    if (s->xform == X_SWAP01) { /* [P, 2, E] <- [2, P, E] */
        shape[0] = w->shape[1], shape[1] = w->shape[0], shape[2] = w->shape[2];
        return 3;
    }
    if (s->conv) {
        shape[0] = w->shape[0], shape[1] = 3, shape[2] = shape[3] = s->side; /* conv layout */
        return 4;
    }
    for (int i = 0; i < w->ndim; i++)
        shape[i] = w->shape[i];
    return w->ndim;
}

static int match_all(gl *L) {
    L->src = g4v_calloc(L->nw ? L->nw : 1, sizeof *L->src);
    if (!L->src) return g4v_fail(L->err, G4V_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < L->nw; i++) {
        g4v_wanted *w = &L->w[i];
        src_info *s = &L->src[i];
        if (!gguf_name(L, w->name, s))
            return g4v_fail(L->err, G4V_ERR_INTERNAL, "no GGUF name for %s", w->name);
        s->t = g4v_gguf_tensor_find(&L->f, s->gname);
        if (!s->t)
            return g4v_fail(L->err, G4V_ERR_MODEL, "%s: missing tensor %s (our %s)", L->path,
                            s->gname, w->name);
        int st = g4v_gguf_tensor_check(&L->f, s->t, &s->nbytes, L->err);
        if (st) return st;
        int64_t want[4];
        int nd = expected_shape(w, s, want), ok = 1;
        const g4v_gguf_tensor *t = s->t;
        if (nd == 0) /* a clip scalar: [1] as the converter writes it, or [] */
            ok = t->ne[0] == 1 && t->ne[1] == 1 && t->ne[2] == 1 && t->ne[3] == 1;
        else if (t->ndim != nd)
            ok = 0;
        else
            for (int d = 0; d < nd; d++)
                ok &= t->ne[nd - 1 - d] == want[d];
        if (!ok) {
            char a[160], b[160];
            g4v_shape_str(a, sizeof a, nd, want);
            shape_of(t, b, sizeof b);
            return g4v_fail(L->err, G4V_ERR_MODEL,
                            "%s: tensor %s: expected shape %s (from the metadata), found %s",
                            L->path, s->gname, nd ? a : "[1]", b);
        }
    }
    return G4V_OK;
}

static int cmp_by_offset(const void *a, const void *b) {
    const src_info *x = *(const src_info *const *)a, *y = *(const src_info *const *)b;
    return x->t->offset < y->t->offset ? -1 : x->t->offset > y->t->offset;
}

/* Sorted by offset, refusing overlaps; maps the ranges (one tensor may serve two wanted entries:
 * never, every GGUF name appears once in the tables, but overlap is still refused). */
static int map_all(gl *L) {
    size_t n = L->nw;
    src_info **v = g4v_malloc_array(n ? n : 1, sizeof *v);
    uint64_t *b = g4v_malloc_array(n ? n : 1, sizeof *b), *e = g4v_malloc_array(n ? n : 1, sizeof *e);
    const void **p = g4v_malloc_array(n ? n : 1, sizeof *p);
    int st = G4V_OK;
    if (!v || !b || !e || !p) st = g4v_fail(L->err, G4V_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n && !st; i++)
        v[i] = &L->src[i];
    if (!st) qsort(v, n, sizeof *v, cmp_by_offset);
    for (size_t i = 0; i < n && !st; i++) {
        b[i] = v[i]->t->offset;
        e[i] = v[i]->t->offset + v[i]->nbytes;
        if (i && b[i] < e[i - 1])
            st = g4v_fail(L->err, G4V_ERR_MODEL,
                          "%s: the data of tensors %s [%llu, %llu) and %s [%llu, %llu) overlap",
                          L->path, v[i - 1]->gname, (unsigned long long)b[i - 1],
                          (unsigned long long)e[i - 1], v[i]->gname, (unsigned long long)b[i],
                          (unsigned long long)e[i]);
    }
    struct g4v_checkpoint_files *F = L->ck->files;
    if (!st)
        st = g4v_st_map_ranges(&L->f.io, n, b, e, G4V_CHECKPOINT_MERGE_GAP, p, &F->maps, &F->nmaps,
                               L->err);
    for (size_t i = 0; i < n && !st; i++)
        v[i]->data = p[i];
    g4v_free(v);
    g4v_free(b);
    g4v_free(e);
    g4v_free(p);
    return st;
}

/* ---- views and transforms --------------------------------------------------------------- */

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* Q8_0 blocks -> f32, exactly (ggml's dequantize_row_q8_0: x = d * q). */
static void dequant_q8_0(const unsigned char *src, size_t nelem, float *dst) {
    for (size_t blk = 0; blk < nelem / G4V_Q8_BLOCK; blk++, src += G4V_Q8_0_BLOCK_BYTES) {
        float d = g4v_f16_to_f32(rd16(src));
        for (int j = 0; j < G4V_Q8_BLOCK; j++)
            dst[blk * G4V_Q8_BLOCK + (size_t)j] = d * (float)(int8_t)src[2 + j];
    }
}

/* dst[rows][(y * side + x) * 3 + c] = src[rows][c][y][x]: undoes the converter's (c, y, x). */
static void undo_chw(const unsigned char *src, unsigned char *dst, size_t rows, int side,
                     size_t es) {
    size_t area = (size_t)side * side, q = 3 * area;
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < 3; c++)
            for (size_t yx = 0; yx < area; yx++)
                memcpy(dst + (r * q + yx * 3 + c) * es, src + (r * q + c * area + yx) * es, es);
}

/* dst[p][a][e] = src[a][p][e] for a < 2. */
static void swap01(const unsigned char *src, unsigned char *dst, size_t P, size_t E, size_t es) {
    for (size_t a = 0; a < 2; a++)
        for (size_t p = 0; p < P; p++)
            memcpy(dst + ((p * 2 + a) * E) * es, src + ((a * P + p) * E) * es, E * es);
}

static int keep(gl *L, void *block) {
    struct g4v_checkpoint_files *F = L->ck->files;
    void **grown = g4v_realloc(F->owned, (F->nowned + 1) * sizeof *grown);
    if (!grown) {
        g4v_free_large(block);
        return g4v_fail(L->err, G4V_ERR_NOMEM, "out of memory");
    }
    F->owned = grown;
    F->owned[F->nowned++] = block;
    return G4V_OK;
}

static int all_bf16(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[4 * i] || p[4 * i + 1]) return 0; /* low 16 bits of a little-endian f32 */
    return 1;
}

static int fill_one(gl *L, size_t i) {
    g4v_wanted *w = &L->w[i];
    src_info *s = &L->src[i];
    g4v_tensor *t = w->dst;
    const g4v_gguf_tensor *gt = s->t;
    size_t nelem = 1;
    for (int d = 0; d < gt->ndim; d++)
        nelem *= (size_t)gt->ne[d];
    t->ndim = w->ndim;
    for (int d = 0; d < w->ndim; d++)
        t->shape[d] = w->shape[d];
    if (w->ndim == 0 && gt->ndim == 1) { /* a [1] clip scalar: kept as [1] (hashed as []) */
        t->ndim = 1;
        t->shape[0] = 1;
    }
    int q8 = gt->type == G4V_GGML_Q8_0;
    g4v_dtype dt = gt->type == G4V_GGML_F32 || q8 ? G4V_DT_F32
                   : gt->type == G4V_GGML_F16    ? G4V_DT_F16
                                                 : G4V_DT_BF16;
    if (s->xform == X_VIEW && !q8) {
        t->dtype = dt;
        t->data = s->data;
        t->nbytes = (size_t)s->nbytes;
        return G4V_OK;
    }
    /* Narrow the converter's F32 patch embedding back to BF16 in a MOSTLY_BF16 file. */
    int narrow = s->xform == X_CHW && gt->type == G4V_GGML_F32 && L->ftype == FTYPE_BF16 &&
                 all_bf16(s->data, nelem);
    size_t es = g4v_dtype_size(dt), out_es = narrow ? 2 : es;
    if (nelem > SIZE_MAX / 4)
        return g4v_fail(L->err, G4V_ERR_UNSUPPORTED, "%s: tensor %s too large for this host",
                        L->path, s->gname);
    unsigned char *out = g4v_malloc_large(nelem ? nelem * out_es : 1);
    if (!out)
        return g4v_fail(L->err, G4V_ERR_NOMEM, "%s: out of memory widening tensor %s", L->path,
                        s->gname);
    int st = keep(L, out);
    if (st) return st;
    const unsigned char *from = s->data;
    unsigned char *tmp = NULL;
    if (q8) {
        if (s->xform == X_VIEW) {
            dequant_q8_0(from, nelem, (float *)out);
            t->q8_0 = from; /* the blocks, for INT8_BLOCKS's direct packing */
            from = NULL;
        } else {
            tmp = g4v_malloc_large(nelem ? nelem * 4 : 1);
            if (!tmp)
                return g4v_fail(L->err, G4V_ERR_NOMEM, "%s: out of memory widening tensor %s",
                                L->path, s->gname);
            dequant_q8_0(from, nelem, (float *)tmp);
            from = tmp;
        }
    }
    if (narrow) { /* the f32 words' high halves, in place in out (as raw f32 first) */
        unsigned char *f32 = g4v_malloc_large(nelem ? nelem * 4 : 1);
        if (!f32)
            return g4v_fail(L->err, G4V_ERR_NOMEM, "%s: out of memory for tensor %s", L->path,
                            s->gname);
        undo_chw(from, f32, nelem / (3 * (size_t)s->side * s->side), s->side, 4);
        for (size_t k = 0; k < nelem; k++)
            memcpy(out + 2 * k, f32 + 4 * k + 2, 2);
        g4v_free_large(f32);
        dt = G4V_DT_BF16;
    } else if (from && s->xform == X_CHW)
        undo_chw(from, out, nelem / (3 * (size_t)s->side * s->side), s->side, es);
    else if (from && s->xform == X_SWAP01)
        swap01(from, out, (size_t)gt->ne[1], (size_t)gt->ne[0], es);
    g4v_free_large(tmp);
    if (q8 && !L->lim->read_weights) g4v_drop_mapped_pages(s->data, (size_t)s->nbytes);
    t->dtype = dt;
    t->data = out;
    t->nbytes = nelem * g4v_dtype_size(dt);
    t->owned = 1;
    return G4V_OK;
}

static void describe(gl *L) {
    g4v_checkpoint *ck = L->ck;
    ck->param_count = 0;
    ck->weight_bytes = 0;
    for (size_t i = 0; i < L->nw; i++) {
        const g4v_tensor *t = L->w[i].dst;
        ck->param_count += (int64_t)(t->nbytes / g4v_dtype_size(t->dtype));
        ck->weight_bytes += (size_t)L->src[i].nbytes; /* as stored in the file */
    }
    snprintf(ck->naming, sizeof ck->naming, "gguf");
    const char *base = strrchr(L->path, '/');
    base = base ? base + 1 : L->path;
    char fb[24];
    const char *ft = L->ftype >= 0 ? g4v_gguf_file_type_name(L->ftype, fb) : "no file type";
    snprintf(ck->source, sizeof ck->source, "%.400s (GGUF v%u mmproj, %s, %s)", base,
             L->f.version, L->proj, ft);
}

int g4v_mmproj_gguf_load(const char *path, const g4v_checkpoint_limits *lim, g4v_checkpoint *ck,
                         g4v_err *err) {
    g4v_checkpoint_limits deflim;
    if (!lim) {
        g4v_checkpoint_limits_default(&deflim);
        lim = &deflim;
    }
    gl L = {.path = path, .lim = lim, .ck = ck, .err = err, .ftype = -1};
    int st = g4v_gguf_open(path, lim, &L.f, err);
    if (st) return st;
    if ((st = read_config(&L))) goto done;
    const g4v_vision_config *cfg = &ck->cfg;
    if ((st = g4v_checkpoint_alloc_parts(ck, err))) goto done;
    if ((st = g4v_wanted_build(cfg, ck, ck->files->clips, &L.w, &L.nw, err))) goto done;
    ck->files->wanted = L.w;
    ck->files->nwanted = L.nw;
    if ((st = match_all(&L)) || (st = map_all(&L))) goto done;
    for (size_t i = 0; i < L.nw && !st; i++)
        st = fill_one(&L, i);
    if (!st) st = g4v_checkpoint_decode_clips(ck, path, err);
    if (!st) describe(&L);
done:
    g4v_free(L.src);
    g4v_gguf_close(&L.f);
    return st;
}
