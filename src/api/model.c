/* model.c - g4v_model: load a checkpoint once (validate, map, pack weights), describe it, plan
 * target sizes. The model is never written after g4v_model_load returns, which is what makes it
 * safe to share between threads. */
#include "api_internal.h"

#include "base/alloc.h"
#include "base/cpu.h"
#include "base/budget.h"
#include "io/model_source.h"
#include "kernels/amx_check.h"

#include <string.h>

void g4v_api_copy_msg(char *buf, size_t cap, const char *msg) {
    if (!buf || cap == 0) return;
    size_t n = strlen(msg);
    if (n >= cap) n = cap - 1;
    memcpy(buf, msg, n);
    buf[n] = '\0';
}

/* Versioned structs (g4v.h "Versions"): a caller's struct may be older (smaller) or newer
 * (larger) than the library's. Only min(its size, ours) bytes are ever read or written. */
void g4v_api_init_struct(void *dst, size_t size, const void *defaults, size_t lib_size) {
    if (!dst || size == 0) return;
    memset(dst, 0, size);
    memcpy(dst, defaults, size < lib_size ? size : lib_size);
    if (size >= sizeof size) memcpy(dst, &size, sizeof size);
}

int g4v_api_read_opts(void *dst, size_t lib_size, const void *src, const char *type,
                      g4v_err *err) {
    if (!src) return G4V_OK; /* NULL options: the defaults already in dst */
    size_t n;
    memcpy(&n, src, sizeof n);
    if (n < sizeof n || n > G4V_API_MAX_STRUCT_SIZE)
        return g4v_fail(err, G4V_ERR_ARG,
                        "%s.struct_size is %zu, not a size this struct can have: fill the "
                        "options with %s_init before use",
                        type, n, type);
    size_t k = n < lib_size ? n : lib_size;
    memcpy((char *)dst + sizeof n, (const char *)src + sizeof n, k - sizeof n);
    memcpy(dst, &lib_size, sizeof lib_size);
    return G4V_OK;
}

void g4v_api_write_out(void *dst, size_t size, const void *src, size_t lib_size) {
    memset(dst, 0, size);
    memcpy(dst, src, size < lib_size ? size : lib_size);
}

static void model_options_defaults(g4v_model_options *o) {
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    g4v_image_opts io;
    g4v_image_opts_default(&io);
    g4v_checkpoint_limits lim;
    g4v_checkpoint_limits_default(&lim);
    o->budget = 0; /* the checkpoint's default (resolved at load) */
    o->apply_exif = 1;
    o->math = G4V_MATH_FAST;
    o->max_pixels = io.max_pixels;
    o->max_dimension = io.max_dimension;
    o->max_header_bytes = lim.max_header_bytes;
    o->max_file_bytes = (uint64_t)1 << 30;
    o->max_config_bytes = lim.max_config_bytes;
    o->max_tensor_count = lim.max_tensor_count;
    o->max_video_frames = 216000;
    o->max_video_seconds = 3600.0;
}

void g4v_model_options_init_sized(g4v_model_options *o, size_t size) {
    g4v_model_options d;
    model_options_defaults(&d);
    g4v_api_init_struct(o, size, &d, sizeof d);
}

/* The math mode: o->math, or for a caller built against a header from before that field (its
 * struct_size ends before it, or at it where the old struct had tail padding: either way math
 * reads G4V_MATH_FAST) the legacy slots it set, checked as they always were. From here on
 * o->math alone says the mode (g4v_model_get_info derives the legacy slots from it). */
static int resolve_math(g4v_model_options *o, g4v_err *err) {
    if ((unsigned)o->math > G4V_MATH_INT8_BLOCKS)
        return g4v_fail(err, G4V_ERR_ARG,
                        "math must be G4V_MATH_FAST, _PRECISE, _INT8 or _INT8_BLOCKS, found %d",
                        (int)o->math);
    if (o->math != G4V_MATH_FAST) {
        if (o->legacy_precise || o->legacy_int8)
            return g4v_fail(err, G4V_ERR_ARG,
                            "math is set, so the ABI-only slots legacy_precise and legacy_int8 "
                            "must be 0 (found %d and %d)",
                            o->legacy_precise, o->legacy_int8);
    } else {
        if (o->legacy_precise != 0 && o->legacy_precise != 1)
            return g4v_fail(err, G4V_ERR_ARG, "precise must be 0 or 1, found %d",
                            o->legacy_precise);
        if (o->legacy_int8 < 0 || o->legacy_int8 > 2)
            return g4v_fail(err, G4V_ERR_ARG, "int8 must be 0, 1 or 2 (per 32-block), found %d",
                            o->legacy_int8);
        if (o->legacy_int8 && o->legacy_precise)
            return g4v_fail(err, G4V_ERR_ARG, "precise and int8 are two math modes: set one");
        o->math = o->legacy_precise       ? G4V_MATH_PRECISE
                  : o->legacy_int8 == 2 ? G4V_MATH_INT8_BLOCKS
                  : o->legacy_int8      ? G4V_MATH_INT8
                                        : G4V_MATH_FAST;
    }
    return G4V_OK;
}

/* Fills zeros with defaults and checks ranges. */
static int resolve_options(const g4v_model_options *in, g4v_model_options *o, g4v_err *err) {
    g4v_model_options d;
    model_options_defaults(&d);
    *o = d;
    if (g4v_api_read_opts(o, sizeof *o, in, "g4v_model_options", err)) return G4V_ERR_ARG;
    if (!o->max_pixels) o->max_pixels = d.max_pixels;
    if (!o->max_dimension) o->max_dimension = d.max_dimension;
    if (!o->max_header_bytes) o->max_header_bytes = d.max_header_bytes;
    if (!o->max_file_bytes) o->max_file_bytes = d.max_file_bytes;
    if (!o->max_config_bytes) o->max_config_bytes = d.max_config_bytes;
    if (!o->max_tensor_count) o->max_tensor_count = d.max_tensor_count;
    if (!o->max_video_frames) o->max_video_frames = d.max_video_frames;
    if (o->max_video_seconds == 0) o->max_video_seconds = d.max_video_seconds;
    if (!(o->max_video_seconds > 0)) /* negative or NaN */
        return g4v_fail(err, G4V_ERR_ARG, "max_video_seconds must be positive, found %g",
                        o->max_video_seconds);
    if (o->budget && g4v_budget_require(o->budget, err)) return G4V_ERR_ARG;
    if (o->apply_exif != 0 && o->apply_exif != 1)
        return g4v_fail(err, G4V_ERR_ARG, "apply_exif must be 0 or 1, found %d", o->apply_exif);
    if (resolve_math(o, err)) return G4V_ERR_ARG;
    if (o->resize != G4V_RESIZE_PILLOW && o->resize != G4V_RESIZE_TORCHVISION)
        return g4v_fail(err, G4V_ERR_ARG,
                        "resize must be G4V_RESIZE_PILLOW (0) or G4V_RESIZE_TORCHVISION (1), "
                        "found %d",
                        o->resize);
    if (o->read_weights != 0 && o->read_weights != 1)
        return g4v_fail(err, G4V_ERR_ARG, "read_weights must be 0 or 1, found %d", o->read_weights);
    if (o->pack_weights != 0 && o->pack_weights != 1)
        return g4v_fail(err, G4V_ERR_ARG, "pack_weights must be 0 or 1, found %d", o->pack_weights);
    if (o->metadata_only != 0 && o->metadata_only != 1)
        return g4v_fail(err, G4V_ERR_ARG, "metadata_only must be 0 or 1, found %d",
                        o->metadata_only);
    if (o->max_dimension < 0)
        return g4v_fail(err, G4V_ERR_ARG, "max_dimension must be positive, found %d",
                        o->max_dimension);
    return G4V_OK;
}

#define STR_(...) #__VA_ARGS__
#define STR(...) STR_(__VA_ARGS__)

/* budget 0 in the load options: the checkpoint's own default (io/budget_defaults.h), which must
 * be one the library supports. */
static int default_budget(const g4v_checkpoint *ck, int *budget, g4v_err *err) {
    const g4v_vision_config *c = &ck->cfg;
    if (!g4v_budget_valid(c->default_budget))
        return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                        "the checkpoint's default soft-token budget (%s) is %d, not one of "
                        "%s: pass a budget explicitly (g4v_model_options.budget, --tokens)",
                        c->default_budget_from, c->default_budget, STR(G4V_BUDGETS));
    *budget = c->default_budget;
    return G4V_OK;
}

/* The network of m->ck's kind into m->net (docs/ARCHITECTURE.md §2 "Model kinds"). */
static int net_create(g4v_model *m, const g4v_encoder_opts *eo, g4v_err *err) {
    m->net.kind = m->ck->cfg.kind;
    switch (m->net.kind) {
    case G4V_KIND_TOWER:
        return g4v_encoder_create(m->ck, eo, &m->net.as.tower, err);
    case G4V_KIND_UNIFIED:
        return g4v_embedder_create(m->ck, eo, &m->net.as.unified, err);
    }
    return g4v_fail(err, G4V_ERR_INTERNAL, "model kind %d", (int)m->net.kind);
}

static void net_kernel_path(const g4v_vision_net *n, char *buf, size_t cap) {
    switch (n->kind) {
    case G4V_KIND_TOWER:
        g4v_encoder_kernel_path(n->as.tower, buf, cap);
        return;
    case G4V_KIND_UNIFIED:
        g4v_embedder_kernel_path(n->as.unified, buf, cap);
        return;
    }
}

static int net_weights_in_place(const g4v_vision_net *n) {
    switch (n->kind) {
    case G4V_KIND_TOWER:
        return n->as.tower ? g4v_encoder_weights_in_place(n->as.tower) : 0;
    case G4V_KIND_UNIFIED:
        return n->as.unified ? g4v_embedder_weights_in_place(n->as.unified) : 0;
    }
    return 0;
}

static void net_free(g4v_vision_net *n) {
    switch (n->kind) {
    case G4V_KIND_TOWER:
        g4v_encoder_free(n->as.tower);
        break;
    case G4V_KIND_UNIFIED:
        g4v_embedder_free(n->as.unified);
        break;
    }
    n->as.tower = NULL;
}

g4v_status g4v_model_load(const char *dir, const g4v_model_options *opts, g4v_model **out, char *errbuf,
                   size_t errbuf_size) {
    g4v_err err;
    g4v_err_clear(&err);
    g4v_api_copy_msg(errbuf, errbuf_size, "");
    if (out) *out = NULL;
    g4v_model_options o;
    int st;
    if (!dir || !out) {
        st = g4v_fail(&err, G4V_ERR_ARG, "g4v_model_load: dir and out must not be NULL");
        goto fail;
    }
    if ((st = resolve_options(opts, &o, &err))) goto fail;
    /* the kernel table is chosen here for the model's life: a mistyped G4V_ISA stops it */
    if ((st = g4v_cpu_isa_check(&err))) goto fail;
    g4v_model *m = g4v_calloc(1, sizeof *m);
    if (!m) {
        st = g4v_fail(&err, G4V_ERR_NOMEM, "out of memory allocating the model");
        goto fail;
    }
    m->opts = o;
    pthread_mutex_init(&m->fp_lock, NULL);
    g4v_image_opts_default(&m->image_opts);
    m->image_opts.max_pixels = o.max_pixels;
    m->image_opts.max_dimension = o.max_dimension;
    m->image_opts.apply_exif = o.apply_exif;
    m->image_opts.resize_order = g4v_api_resize_order(o.resize);
    g4v_checkpoint_limits lim;
    g4v_checkpoint_limits_default(&lim);
    lim.max_header_bytes = o.max_header_bytes;
    lim.max_config_bytes = o.max_config_bytes;
    lim.max_tensor_count = o.max_tensor_count;
    lim.read_weights = o.read_weights;
    /* The checkpoint is mapped read-only: packed weights' pages can be dropped (peak RSS). The
     * weights are packed by one thread per CPU; without threads (g4v_pool_create failed), by
     * this one. */
    g4v_pool *packers = NULL;
    if (!o.metadata_only && g4v_pool_create(0, &packers, NULL)) packers = NULL;
    g4v_encoder_opts eo = {.mode = o.math,
                           /* a heap copy must stay; nothing packed, nothing to drop */
                           .drop_mapped_pages = !o.read_weights && !o.metadata_only,
                           .check_only = o.metadata_only,
                           .pack_weights = o.pack_weights,
                           .pool = packers};
    if (!(st = g4v_checkpoint_open(dir, &lim, &m->ck, &err))) st = net_create(m, &eo, &err);
    g4v_pool_destroy(packers);
    if (!st && !m->opts.budget) st = default_budget(m->ck, &m->opts.budget, &err);
    if (st) {
        g4v_model_free(m);
        goto fail;
    }
    net_kernel_path(&m->net, m->kernel_path, sizeof m->kernel_path);
    g4v_cpu_rule_line(m->kernel_rule, sizeof m->kernel_rule); /* docs/NUMERICS.md §6.6 */
    *out = m;
    return G4V_OK;
fail:
    g4v_api_copy_msg(errbuf, errbuf_size, err.msg);
    return st;
}

void g4v_model_free(g4v_model *m) {
    if (!m) return;
    net_free(&m->net);
    g4v_checkpoint_close(m->ck);
    pthread_mutex_destroy(&m->fp_lock);
    g4v_free(m);
}

int g4v_model_run(const g4v_model *m, g4v_workspace *ws, g4v_pool *pool, const uint8_t *rgb,
                  int width, int height, size_t stride, float *out, g4v_err *err) {
    switch (m->net.kind) {
    case G4V_KIND_TOWER:
        return g4v_encoder_run(m->net.as.tower, ws, pool, rgb, width, height, stride, out, err);
    case G4V_KIND_UNIFIED:
        return g4v_embedder_run(m->net.as.unified, ws, pool, rgb, width, height, stride, out,
                                err);
    }
    return g4v_fail(err, G4V_ERR_INTERNAL, "model kind %d", (int)m->net.kind);
}

int g4v_model_run_batch(const g4v_model *m, g4v_workspace *ws, g4v_pool *pool,
                        const g4v_encoder_image *im, int n, float *out, g4v_err *err) {
    /* The tower encodes a batch as one (its GEMMs see every image's rows); the embedder has no
     * cross-image work, so it runs image by image. */
    if (m->net.kind == G4V_KIND_TOWER)
        return g4v_encoder_run_batch(m->net.as.tower, ws, pool, im, n, out, err);
    size_t T = (size_t)m->ck->cfg.text_hidden_size,
           side = (size_t)m->ck->cfg.patch_size * (size_t)m->ck->cfg.pooling_kernel_size;
    for (int i = 0; i < n; i++) {
        int st = g4v_model_run(m, ws, pool, im[i].rgb, im[i].width, im[i].height, im[i].stride,
                               out, err);
        if (st) {
            if (n > 1) g4v_err_prefix(err, "image %d of the batch", i);
            return st;
        }
        out += (size_t)im[i].width / side * ((size_t)im[i].height / side) * T;
    }
    return G4V_OK;
}

static void copy_str(char *dst, size_t cap, const char *src) {
    g4v_api_copy_msg(dst, cap, src);
}

typedef struct dtype_census {
    int64_t tensors[3];
    uint64_t bytes[3];
} dtype_census;

static void count_tensor(void *user, const char *name, const g4v_tensor *t) {
    (void)name;
    dtype_census *c = user;
    if ((unsigned)t->dtype < 3) {
        c->tensors[t->dtype]++;
        c->bytes[t->dtype] += t->nbytes;
    }
}

g4v_status g4v_model_get_info_sized(const g4v_model *m, g4v_model_info *out, size_t out_size,
                                    char *errbuf, size_t errbuf_size) {
    g4v_api_copy_msg(errbuf, errbuf_size, "");
    if (!m || !out || out_size < sizeof(size_t)) {
        g4v_api_copy_msg(errbuf, errbuf_size,
                         "g4v_model_get_info: model and info must not be NULL, and info_size "
                         "must be sizeof(g4v_model_info)");
        return G4V_ERR_ARG;
    }
    g4v_model_info whole, *info = &whole;
    memset(info, 0, sizeof *info);
    const g4v_vision_config *c = &m->ck->cfg;
    copy_str(info->variant, sizeof info->variant, c->variant);
    info->hidden_size = c->hidden_size;
    info->intermediate_size = c->intermediate_size;
    info->num_layers = c->num_layers;
    info->num_heads = c->num_heads;
    info->num_kv_heads = c->num_kv_heads;
    info->head_dim = c->head_dim;
    info->patch_size = c->patch_size;
    info->pooling_kernel_size = c->pooling_kernel_size;
    info->position_embedding_size = c->position_embedding_size;
    info->dim = c->text_hidden_size;
    info->default_budget = m->opts.budget;
    info->config_output_length = c->default_output_length;
    info->use_clipped_linears = c->use_clipped_linears;
    info->standardize = c->standardize;
    info->math = m->opts.math;
    /* what a caller of the old layout reads as precise and int8 */
    info->legacy_precise = m->opts.math == G4V_MATH_PRECISE;
    info->legacy_int8 = m->opts.math == G4V_MATH_INT8_BLOCKS ? 2 : m->opts.math == G4V_MATH_INT8;
    info->apply_exif = m->opts.apply_exif;
    info->resize = m->opts.resize;
    info->image_token_id = c->image_token_id;
    info->boi_token_id = c->boi_token_id;
    info->eoi_token_id = c->eoi_token_id;
    info->video_token_id = c->video_token_id;
    info->param_count = m->ck->param_count;
    info->weight_bytes = m->ck->weight_bytes;
    copy_str(info->naming, sizeof info->naming, m->ck->naming);
    copy_str(info->source, sizeof info->source, m->ck->source);
    info->max_pixels = m->opts.max_pixels;
    info->max_dimension = m->opts.max_dimension;
    info->max_file_bytes = m->opts.max_file_bytes;
    info->max_header_bytes = m->opts.max_header_bytes;
    info->max_config_bytes = m->opts.max_config_bytes;
    info->max_tensor_count = m->opts.max_tensor_count;
    copy_str(info->kind, sizeof info->kind, g4v_model_kind_name(c->kind));
    info->max_video_frames = m->opts.max_video_frames;
    info->max_video_seconds = m->opts.max_video_seconds;
    copy_str(info->kernels, sizeof info->kernels, m->kernel_path);
    copy_str(info->kernel_rule, sizeof info->kernel_rule, m->kernel_rule);
    /* base/amx.c's probe, G4V_ISA and the kernel layer's start-up self-test (amx_check.h) */
    info->amx_usable = g4v_amx_dispatch_status(info->amx, sizeof info->amx);
    g4v_amx_check_verdict(info->amx_self_test, sizeof info->amx_self_test);
    info->sharp_threshold = G4V_SHARP_LOGIT_STD;
    if (m->net.kind == G4V_KIND_TOWER && m->net.as.tower)
        for (int i = 0; i < c->num_layers; i++) {
            double sh = 0;
            int precise = 0;
            if (g4v_encoder_layer_sharpness(m->net.as.tower, i, &sh, &precise)) break;
            info->n_sharp += sh > G4V_SHARP_LOGIT_STD;
            info->n_precise += precise;
            if (i >= G4V_INFO_MAX_LAYERS) continue;
            info->layer_sharpness[i] = (float)sh;
            info->layer_precise[i] = (unsigned char)precise;
            info->n_layers_listed = i + 1;
        }
    info->weights_in_place = net_weights_in_place(&m->net);
    info->rope_theta = c->rope_theta;
    info->rms_norm_eps = c->rms_norm_eps;
    info->layer_norm_eps = c->layer_norm_eps;
    info->numerics_version = G4V_NUMERICS_VERSION;
    dtype_census dc;
    memset(&dc, 0, sizeof dc);
    g4v_checkpoint_foreach(m->ck, count_tensor, &dc);
    static const g4v_dtype order[3] = {G4V_DT_BF16, G4V_DT_F16, G4V_DT_F32};
    for (int i = 0; i < 3; i++) {
        if (!dc.tensors[order[i]]) continue;
        g4v_dtype_count *d = &info->dtypes[info->n_dtypes++];
        copy_str(d->name, sizeof d->name, g4v_dtype_name(order[i]));
        d->tensors = dc.tensors[order[i]];
        d->bytes = dc.bytes[order[i]];
    }
    g4v_api_write_out(out, out_size, info, sizeof *info);
    return G4V_OK;
}

g4v_status g4v_model_plan(const g4v_model *m, int width, int height, int budget, int *target_w,
                          int *target_h, int *n_tokens, char *errbuf, size_t errbuf_size) {
    g4v_err err;
    g4v_err_clear(&err);
    g4v_api_copy_msg(errbuf, errbuf_size, "");
    int st = G4V_OK, th = 0, tw = 0;
    if (!m)
        st = g4v_fail(&err, G4V_ERR_ARG, "g4v_model_plan: model must not be NULL");
    else if (width <= 0 || height <= 0)
        st = g4v_fail(&err, G4V_ERR_ARG, "g4v_model_plan: the size must be positive, found %dx%d",
                      width, height);
    else if (!(st = g4v_budget_require(budget ? budget : m->opts.budget, &err)))
        st = g4v_target_size(height, width, budget ? budget : m->opts.budget, &th, &tw, &err);
    if (st) {
        g4v_api_copy_msg(errbuf, errbuf_size, err.msg);
        return st;
    }
    int side = m->ck->cfg.patch_size * m->ck->cfg.pooling_kernel_size;
    if (target_w) *target_w = tw;
    if (target_h) *target_h = th;
    if (n_tokens) *n_tokens = (tw / side) * (th / side);
    return G4V_OK;
}
