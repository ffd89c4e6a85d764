/* encode.c - g4v_encode_file / _memory / _rgb: bring an image to its target size (decode, EXIF,
 * Pillow- or torchvision-exact resize; src/image), run the encoder into the ctx's output buffer, fill g4v_result.
 * The ctx buffers grow to the largest output seen and are reused. Errors are left in ctx->err
 * with the source (file path or "memory buffer") in front. */
#include "api_internal.h"

#include "base/alloc.h"
#include "base/budget.h"
#include "base/clock.h"
#include "base/dtype.h"
#include "kernels/sha256.h"
#include "io/fsutil.h"

#include <string.h>

static void encode_options_defaults(g4v_encode_options *o) {
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->apply_exif = -1;
    o->resize = -1;
}

void g4v_encode_options_init_sized(g4v_encode_options *o, size_t size) {
    g4v_encode_options d;
    encode_options_defaults(&d);
    g4v_api_init_struct(o, size, &d, sizeof d);
}

int g4v_api_resolve_resize(const g4v_model *m, int requested, int *resize, g4v_err *err) {
    *resize = requested < 0 ? m->opts.resize : requested;
    if (requested < -1 || (*resize != G4V_RESIZE_PILLOW && *resize != G4V_RESIZE_TORCHVISION))
        return g4v_fail(err, G4V_ERR_ARG,
                        "resize must be -1 (the model's), G4V_RESIZE_PILLOW (0) or "
                        "G4V_RESIZE_TORCHVISION (1), found %d",
                        requested);
    return G4V_OK;
}

/* Checks opts and resolves them against the model's defaults into st. */
int g4v_encode_resolve(const g4v_ctx *c, const g4v_encode_options *in, g4v_encode_step *st,
                       g4v_err *err) {
    g4v_encode_options o;
    encode_options_defaults(&o);
    if (g4v_api_read_opts(&o, sizeof o, in, "g4v_encode_options", err)) return G4V_ERR_ARG;
    st->budget = o.budget ? o.budget : c->model->opts.budget;
    st->exif = o.apply_exif < 0 ? c->model->opts.apply_exif : o.apply_exif;
    st->bf16 = o.bf16;
    st->resize = G4V_RESIZE_PILLOW;
    if (g4v_budget_require(st->budget, err)) return G4V_ERR_ARG;
    if (st->exif != 0 && st->exif != 1)
        return g4v_fail(err, G4V_ERR_ARG, "apply_exif must be -1, 0 or 1, found %d", o.apply_exif);
    if (st->bf16 != 0 && st->bf16 != 1)
        return g4v_fail(err, G4V_ERR_ARG, "bf16 must be 0 or 1, found %d", o.bf16);
    return g4v_api_resolve_resize(c->model, o.resize, &st->resize, err);
}

void g4v_encode_fill_result(const g4v_ctx *c, const g4v_encode_step *st, const float *feat,
                            const uint16_t *feat16, g4v_result *out) {
    const g4v_vision_config *cfg = &c->model->ck->cfg;
    int side = cfg->patch_size * cfg->pooling_kernel_size;
    out->grid_w = st->px.width / side;
    out->grid_h = st->px.height / side;
    out->n_tokens = out->grid_w * out->grid_h;
    out->dim = cfg->text_hidden_size;
    out->src_width = st->src_w;
    out->src_height = st->src_h;
    out->width = st->px.width;
    out->height = st->px.height;
    out->budget = st->budget;
    out->features = feat;
    out->features_bf16 = feat16;
    out->boi_token_id = cfg->boi_token_id;
    out->image_token_id = cfg->image_token_id;
    out->eoi_token_id = cfg->eoi_token_id;
}

size_t g4v_encode_step_values(const g4v_ctx *c, const g4v_encode_step *st) {
    const g4v_vision_config *cfg = &c->model->ck->cfg;
    size_t side = (size_t)cfg->patch_size * (size_t)cfg->pooling_kernel_size;
    return (size_t)st->px.width / side * ((size_t)st->px.height / side) *
           (size_t)cfg->text_hidden_size;
}

void g4v_encode_round_bf16(const float *src, uint16_t *dst, size_t n) {
    for (size_t i = 0; i < n; i++) dst[i] = g4v_f32_to_bf16(src[i]);
}

void g4v_encode_step_free(g4v_encode_step *st) {
    g4v_image_free(&st->img);
}

/* The target size must be whole pooled cells (the image layer's sizes always are). */
static int check_target(g4v_ctx *c, const g4v_encode_step *st) {
    const g4v_vision_config *cfg = &c->model->ck->cfg;
    int side = cfg->patch_size * cfg->pooling_kernel_size;
    if (st->px.width / side <= 0 || st->px.height / side <= 0 || st->px.width % side ||
        st->px.height % side)
        return g4v_fail(&c->err, G4V_ERR_INTERNAL, "target size %dx%d is not a multiple of %d",
                        st->px.width, st->px.height, side);
    return G4V_OK;
}

/* The single calls' end, once prepared: a hit as it is, a miss encoded into the ctx's buffer
 * and stored; then the bf16 copy if asked (made here for both, never by the cache). */
static int encode_prepared(g4v_ctx *c, const g4v_encode_step *st, g4v_result *out) {
    size_t n = st->hit ? (size_t)out->n_tokens * (size_t)out->dim : g4v_encode_step_values(c, st);
    int rc = G4V_OK;
    if (st->hit) {
        c->cache_hit = 1;
    } else {
        rc = g4v_ctx_grow_buffer((void **)&c->features, &c->feat_cap, n, sizeof(float), 0, &c->err);
        if (!rc)
            rc = g4v_model_run(c->model, c->ws, c->pool, st->px.rgb, st->px.width,
                               st->px.height, st->px.stride, c->features, &c->err);
        if (rc) return rc;
        g4v_encode_fill_result(c, st, c->features, NULL, out);
        if (st->cached) g4v_cache_store(c, st->key, out);
    }
    if (st->bf16) {
        rc = g4v_ctx_grow_buffer((void **)&c->features_bf16, &c->bf16_cap, n, sizeof(uint16_t), 0,
                             &c->err);
        if (rc) return rc;
        g4v_encode_round_bf16(out->features, c->features_bf16, n);
        out->features_bf16 = c->features_bf16;
    }
    return G4V_OK;
}

static int finish(g4v_ctx *c, int st, g4v_result *out, double t0, const char *what) {
    if (st) return g4v_call_fail(c, st, out, sizeof *out, what);
    out->seconds = g4v_now_s() - t0;
    return G4V_OK;
}

int g4v_encode_prepare_bytes(g4v_ctx *c, const void *bytes, size_t size,
                             const g4v_encode_options *opts, g4v_encode_step *st, g4v_result *hit) {
    int rc = g4v_encode_resolve(c, opts, st, &c->err);
    if (rc) return rc;
    if (size > c->model->opts.max_file_bytes)
        return g4v_fail(&c->err, G4V_ERR_LIMIT,
                        "%zu bytes, above the limit of %llu bytes (max_file_bytes)", size,
                        (unsigned long long)c->model->opts.max_file_bytes);
    if (c->cache) {
        uint8_t digest[G4V_SHA256_BYTES];
        g4v_sha256(bytes, size, digest);
        st->cached = g4v_cache_key(c, "bytes", digest, st->budget, st->exif, st->resize,
                                   st->key) == G4V_OK;
        if (st->cached && g4v_cache_lookup(c, st->key, st->budget, hit)) {
            st->hit = 1;
            return G4V_OK;
        }
    }
    g4v_image_opts io = c->model->image_opts;
    io.apply_exif = st->exif;
    io.resize_order = g4v_api_resize_order(st->resize);
    g4v_image_info info;
    memset(&info, 0, sizeof info);
    rc = g4v_image_load(bytes, size, st->budget, &io, &st->img, &info, &c->err);
    if (rc) return rc;
    st->src_w = info.width;
    st->src_h = info.height;
    st->px = (g4v_encoder_image){st->img.rgb, st->img.width, st->img.height,
                                 (size_t)st->img.width * 3};
    return check_target(c, st);
}

static int encode_bytes(g4v_ctx *c, const void *bytes, size_t size, const g4v_encode_options *opts,
                        g4v_result *out) {
    g4v_encode_step st = {0};
    int rc = g4v_encode_prepare_bytes(c, bytes, size, opts, &st, out);
    if (!rc) rc = encode_prepared(c, &st, out);
    g4v_encode_step_free(&st);
    return rc;
}

g4v_status g4v_encode_memory(g4v_ctx *c, const void *bytes, size_t size, const g4v_encode_options *opts,
                      g4v_result *out) {
    int st = g4v_call_begin(c, out, sizeof *out);
    if (st) return st;
    double t0 = g4v_now_s();
    if (!bytes && size)
        st = g4v_fail(&c->err, G4V_ERR_ARG, "bytes is NULL");
    else
        st = encode_bytes(c, bytes, size, opts, out);
    return finish(c, st, out, t0, "memory buffer");
}

g4v_status g4v_encode_file(g4v_ctx *c, const char *path, const g4v_encode_options *opts, g4v_result *out) {
    int st = g4v_call_begin(c, out, sizeof *out);
    if (st) return st;
    double t0 = g4v_now_s();
    if (!path) return finish(c, g4v_fail(&c->err, G4V_ERR_ARG, "path is NULL"), out, t0, NULL);
    unsigned char *buf;
    size_t size;
    /* fsutil messages already name the path; only image errors need it in front. */
    st = g4v_read_file(path, c->model->opts.max_file_bytes, "max_file_bytes", &buf, &size, &c->err);
    if (!st) {
        st = encode_bytes(c, buf, size, opts, out);
        if (st) g4v_err_prefix(&c->err, "%s", path);
        g4v_free(buf);
    }
    return finish(c, st, out, t0, NULL);
}

int g4v_encode_prepare_rgb(g4v_ctx *c, const uint8_t *rgb, int width, int height, size_t stride,
                           const g4v_encode_options *opts, int use_cache, g4v_encode_step *st,
                           g4v_result *hit) {
    int rc = g4v_encode_resolve(c, opts, st, &c->err);
    if (rc) return rc;
    const g4v_image_opts *io = &c->model->image_opts;
    if (!rgb || width <= 0 || height <= 0 || stride < (size_t)width * 3)
        return g4v_fail(&c->err, G4V_ERR_ARG,
                        "invalid RGB buffer: %p, %dx%d, stride %zu (needs >= 3 * width)",
                        (const void *)rgb, width, height, stride);
    if ((uint64_t)width * (uint64_t)height > io->max_pixels || width > io->max_dimension ||
        height > io->max_dimension)
        return g4v_fail(&c->err, G4V_ERR_LIMIT,
                        "%dx%d exceeds the limits (max_pixels %llu, max_dimension %d)", width,
                        height, (unsigned long long)io->max_pixels, io->max_dimension);
    int tw = 0, th = 0;
    if ((rc = g4v_target_size(height, width, st->budget, &th, &tw, &c->err))) return rc;
    st->src_w = width;
    st->src_h = height;
    if (use_cache && c->cache) {
        /* the pixels and their size, row by row (the stride is not part of the image) */
        g4v_sha256_ctx s;
        g4v_sha256_init(&s);
        g4v_sha256_u64(&s, (uint64_t)width);
        g4v_sha256_u64(&s, (uint64_t)height);
        for (int y = 0; y < height; y++)
            g4v_sha256_update(&s, rgb + (size_t)y * stride, (size_t)width * 3);
        uint8_t digest[G4V_SHA256_BYTES];
        g4v_sha256_final(&s, digest);
        st->cached = g4v_cache_key(c, "rgb", digest, st->budget, 0, st->resize, st->key) == G4V_OK;
        if (st->cached && g4v_cache_lookup(c, st->key, st->budget, hit)) {
            st->hit = 1;
            return G4V_OK;
        }
    }
    if (tw == width && th == height) {
        /* Already at the target size: the resize would be the identity, encode in place. */
        st->px = (g4v_encoder_image){rgb, width, height, stride};
    } else {
        rc = g4v_image_resize(rgb, width, height, stride, tw, th,
                              g4v_api_resize_order(st->resize), &st->img, &c->err);
        if (rc) return rc;
        st->px = (g4v_encoder_image){st->img.rgb, tw, th, (size_t)tw * 3};
    }
    return check_target(c, st);
}

g4v_status g4v_encode_rgb(g4v_ctx *c, const uint8_t *rgb, int width, int height, size_t stride,
                   const g4v_encode_options *opts, g4v_result *out) {
    int rc = g4v_call_begin(c, out, sizeof *out);
    if (rc) return rc;
    double t0 = g4v_now_s();
    g4v_encode_step st = {0};
    rc = g4v_encode_prepare_rgb(c, rgb, width, height, stride, opts, 1, &st, out);
    if (!rc) rc = encode_prepared(c, &st, out);
    g4v_encode_step_free(&st);
    return finish(c, rc, out, t0, "RGB buffer");
}

g4v_status g4v_result_copy(const g4v_result *r, float *dst, size_t dst_count, char *errbuf,
                           size_t errbuf_size) {
    g4v_err err;
    g4v_err_clear(&err);
    g4v_api_copy_msg(errbuf, errbuf_size, "");
    int st = G4V_OK;
    size_t n = r ? (size_t)r->n_tokens * (size_t)r->dim : 0;
    if (!r || !r->features || !dst)
        st = g4v_fail(&err, G4V_ERR_ARG,
                      "g4v_result_copy: the result (with features) and dst must not be NULL");
    else if (dst_count < n)
        st = g4v_fail(&err, G4V_ERR_ARG,
                      "g4v_result_copy: dst holds %zu floats, the result has %zu", dst_count, n);
    else
        memcpy(dst, r->features, n * sizeof(float));
    g4v_api_copy_msg(errbuf, errbuf_size, err.msg);
    return st;
}

size_t g4v_prompt_tokens(const g4v_result *r, int32_t *ids, size_t cap) {
    if (!r) return 0;
    size_t need = (size_t)r->n_tokens + 2;
    for (size_t i = 0; ids && i < cap && i < need; i++)
        ids[i] = i == 0 ? r->boi_token_id : i + 1 == need ? r->eoi_token_id : r->image_token_id;
    return need;
}
