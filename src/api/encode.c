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

/* Checks opts and resolves them against the model's defaults. */
static int resolve(const g4v_ctx *c, const g4v_encode_options *in, int *budget, int *exif,
                   int *bf16, int *resize, g4v_err *err) {
    g4v_encode_options o, *opts = &o;
    encode_options_defaults(&o);
    if (g4v_api_read_opts(&o, sizeof o, in, "g4v_encode_options", err)) return G4V_ERR_ARG;
    *budget = opts->budget ? opts->budget : c->model->opts.budget;
    *exif = opts->apply_exif < 0 ? c->model->opts.apply_exif : opts->apply_exif;
    *bf16 = opts->bf16;
    if (g4v_budget_require(*budget, err)) return G4V_ERR_ARG;
    if (*exif != 0 && *exif != 1)
        return g4v_fail(err, G4V_ERR_ARG, "apply_exif must be -1, 0 or 1, found %d",
                        opts->apply_exif);
    if (*bf16 != 0 && *bf16 != 1)
        return g4v_fail(err, G4V_ERR_ARG, "bf16 must be 0 or 1, found %d", opts->bf16);
    return g4v_api_resolve_resize(c->model, opts->resize, resize, err);
}

/* Grows a ctx-owned buffer to hold n elements of size sz. */
static int grow(void **buf, size_t *cap, size_t n, size_t sz, g4v_err *err) {
    if (n <= *cap) return G4V_OK;
    if (n > SIZE_MAX / sz) /* as calloc: a size that cannot exist cannot be allocated */
        return g4v_fail(err, G4V_ERR_NOMEM, "output of %zu values is too large", n);
    void *p = g4v_malloc_large(n * sz);
    if (!p) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory for %zu output values", n);
    g4v_free_large(*buf);
    *buf = p;
    *cap = n;
    return G4V_OK;
}

/* Fills out for an image with a gw x gh pooled grid whose features start at feat (bf16 copy at
 * feat16 or NULL). */
static void fill_result(const g4v_ctx *c, int gw, int gh, int width, int height, int src_w,
                        int src_h, int budget, const float *feat, const uint16_t *feat16,
                        g4v_result *out) {
    const g4v_vision_config *cfg = &c->model->ck->cfg;
    out->n_tokens = gw * gh;
    out->dim = cfg->text_hidden_size;
    out->grid_w = gw;
    out->grid_h = gh;
    out->src_width = src_w;
    out->src_height = src_h;
    out->width = width;
    out->height = height;
    out->budget = budget;
    out->features = feat;
    out->features_bf16 = feat16;
    out->boi_token_id = cfg->boi_token_id;
    out->image_token_id = cfg->image_token_id;
    out->eoi_token_id = cfg->eoi_token_id;
}

/* Grows the ctx's output buffers to n_values floats (and bf16 values when bf16). */
static int reserve_output(g4v_ctx *c, size_t n_values, int bf16) {
    int st = grow((void **)&c->features, &c->feat_cap, n_values, sizeof(float), &c->err);
    if (!st && bf16)
        st = grow((void **)&c->features_bf16, &c->bf16_cap, n_values, sizeof(uint16_t), &c->err);
    return st;
}

static void round_output(g4v_ctx *c, size_t n_values) {
    for (size_t i = 0; i < n_values; i++)
        c->features_bf16[i] = g4v_f32_to_bf16(c->features[i]);
}

/* Runs the encoder on img (already at its target size) and fills out. */
static int encode_image(g4v_ctx *c, const g4v_image *img, size_t stride, int src_w, int src_h,
                        int budget, int bf16, g4v_result *out) {
    const g4v_vision_config *cfg = &c->model->ck->cfg;
    int side = cfg->patch_size * cfg->pooling_kernel_size;
    int gw = img->width / side, gh = img->height / side;
    if (gw <= 0 || gh <= 0 || img->width % side || img->height % side)
        return g4v_fail(&c->err, G4V_ERR_INTERNAL, "target size %dx%d is not a multiple of %d",
                        img->width, img->height, side);
    size_t n = (size_t)gw * (size_t)gh * (size_t)cfg->text_hidden_size;
    int st = reserve_output(c, n, bf16);
    if (st) return st;
    st = g4v_model_run(c->model, c->ws, c->pool, img->rgb, img->width, img->height, stride,
                       c->features, &c->err);
    if (st) return st;
    if (bf16) round_output(c, n);
    fill_result(c, gw, gh, img->width, img->height, src_w, src_h, budget, c->features,
                bf16 ? c->features_bf16 : NULL, out);
    return G4V_OK;
}

static int finish(g4v_ctx *c, int st, g4v_result *out, double t0, const char *what) {
    if (st) return g4v_call_fail(c, st, out, sizeof *out, what);
    out->seconds = g4v_now_s() - t0;
    return G4V_OK;
}

static int encode_bytes(g4v_ctx *c, const void *bytes, size_t size, const g4v_encode_options *opts,
                        g4v_result *out) {
    int budget, exif, bf16, resize = G4V_RESIZE_PILLOW;
    int st = resolve(c, opts, &budget, &exif, &bf16, &resize, &c->err);
    if (st) return st;
    if (size > c->model->opts.max_file_bytes)
        return g4v_fail(&c->err, G4V_ERR_LIMIT,
                        "%zu bytes, above the limit of %llu bytes (max_file_bytes)", size,
                        (unsigned long long)c->model->opts.max_file_bytes);
    char key[G4V_SHA256_HEX];
    int cached = 0;
    if (c->cache) {
        uint8_t digest[G4V_SHA256_BYTES];
        g4v_sha256(bytes, size, digest);
        cached = g4v_cache_key(c, "bytes", digest, budget, exif, resize, key) == G4V_OK;
        if (cached && g4v_cache_lookup(c, key, budget, bf16, out)) {
            c->cache_hit = 1;
            return G4V_OK;
        }
    }
    g4v_image_opts io = c->model->image_opts;
    io.apply_exif = exif;
    io.resize_order = g4v_api_resize_order(resize);
    g4v_image img = {0, 0, NULL};
    g4v_image_info info;
    memset(&info, 0, sizeof info);
    st = g4v_image_load(bytes, size, budget, &io, &img, &info, &c->err);
    if (!st)
        st = encode_image(c, &img, (size_t)img.width * 3, info.width, info.height, budget, bf16,
                          out);
    g4v_image_free(&img);
    if (!st && cached) g4v_cache_store(c, key, out);
    return st;
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

/* Checks a caller's RGB buffer against the arguments' rules and the model's limits and gives its
 * target size at budget. */
static int check_rgb(g4v_ctx *c, const uint8_t *rgb, int width, int height, size_t stride,
                     int budget, int *tw, int *th) {
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
    return g4v_target_size(height, width, budget, th, tw, &c->err);
}

g4v_status g4v_encode_rgb(g4v_ctx *c, const uint8_t *rgb, int width, int height, size_t stride,
                   const g4v_encode_options *opts, g4v_result *out) {
    int st = g4v_call_begin(c, out, sizeof *out);
    if (st) return st;
    double t0 = g4v_now_s();
    int budget, exif, bf16, resize = G4V_RESIZE_PILLOW, th = 0, tw = 0;
    g4v_image img = {0, 0, NULL};
    if ((st = resolve(c, opts, &budget, &exif, &bf16, &resize, &c->err))) goto done;
    if ((st = check_rgb(c, rgb, width, height, stride, budget, &tw, &th))) goto done;
    char key[G4V_SHA256_HEX];
    int cached = 0;
    if (c->cache) {
        /* the pixels and their size, row by row (the stride is not part of the image) */
        g4v_sha256_ctx s;
        g4v_sha256_init(&s);
        g4v_sha256_u64(&s, (uint64_t)width);
        g4v_sha256_u64(&s, (uint64_t)height);
        for (int y = 0; y < height; y++)
            g4v_sha256_update(&s, rgb + (size_t)y * stride, (size_t)width * 3);
        uint8_t digest[G4V_SHA256_BYTES];
        g4v_sha256_final(&s, digest);
        cached = g4v_cache_key(c, "rgb", digest, budget, 0, resize, key) == G4V_OK;
        if (cached && g4v_cache_lookup(c, key, budget, bf16, out)) {
            c->cache_hit = 1;
            goto done;
        }
    }
    if (tw == width && th == height) {
        /* Already at the target size: the resize would be the identity, encode in place. */
        g4v_image view = {width, height, (uint8_t *)rgb};
        st = encode_image(c, &view, stride, width, height, budget, bf16, out);
    } else {
        st = g4v_image_resize(rgb, width, height, stride, tw, th, g4v_api_resize_order(resize),
                              &img, &c->err);
        if (!st)
            st = encode_image(c, &img, (size_t)img.width * 3, width, height, budget, bf16, out);
    }
    if (!st && cached) g4v_cache_store(c, key, out);
done:
    g4v_image_free(&img);
    return finish(c, st, out, t0, "RGB buffer");
}

g4v_status g4v_encode_rgb_batch(g4v_ctx *c, const g4v_rgb_image *images, int n,
                         const g4v_encode_options *opts, g4v_result *out) {
    if (out && n > 0) memset(out, 0, (size_t)n * sizeof *out);
    if (!c) return G4V_ERR_ARG;
    g4v_err_clear(&c->err);
    c->cache_hit = 0;
    if (!out || !images || n < 1)
        return g4v_fail(&c->err, G4V_ERR_ARG,
                        "batch: images and results must not be NULL and "
                        "n must be at least 1 (found %d)",
                        n);
    double t0 = g4v_now_s();
    const g4v_vision_config *cfg = &c->model->ck->cfg;
    int side = cfg->patch_size * cfg->pooling_kernel_size, budget, exif, bf16, st, i = 0;
    int resize = G4V_RESIZE_PILLOW;
    size_t T = (size_t)cfg->text_hidden_size, values = 0;
    g4v_image *resized = g4v_calloc((size_t)n, sizeof *resized);
    g4v_encoder_image *im = g4v_calloc((size_t)n, sizeof *im);
    if (!resized || !im) {
        st = g4v_fail(&c->err, G4V_ERR_NOMEM, "out of memory for a batch of %d images", n);
        goto done;
    }
    if ((st = resolve(c, opts, &budget, &exif, &bf16, &resize, &c->err))) goto done;
    for (i = 0; i < n; i++) {
        const g4v_rgb_image *r = &images[i];
        int tw = 0, th = 0;
        if ((st = check_rgb(c, r->rgb, r->width, r->height, r->stride, budget, &tw, &th)))
            goto done;
        if (tw == r->width && th == r->height) { /* at the target size: encode in place */
            im[i] = (g4v_encoder_image){r->rgb, tw, th, r->stride};
        } else {
            st = g4v_image_resize(r->rgb, r->width, r->height, r->stride, tw, th,
                                  g4v_api_resize_order(resize), &resized[i], &c->err);
            if (st) goto done;
            im[i] = (g4v_encoder_image){resized[i].rgb, tw, th, (size_t)tw * 3};
        }
        values += (size_t)(tw / side) * (size_t)(th / side) * T;
    }
    i = -1; /* errors from here on concern the whole batch */
    if ((st = reserve_output(c, values, bf16))) goto done;
    if ((st = g4v_model_run_batch(c->model, c->ws, c->pool, im, n, c->features, &c->err)))
        goto done;
    if (bf16) round_output(c, values);
    double seconds = g4v_now_s() - t0;
    for (size_t k = 0, off = 0; k < (size_t)n; k++) {
        int gw = im[k].width / side, gh = im[k].height / side;
        fill_result(c, gw, gh, im[k].width, im[k].height, images[k].width, images[k].height, budget,
                    c->features + off, bf16 ? c->features_bf16 + off : NULL, &out[k]);
        out[k].seconds = seconds;
        off += (size_t)gw * gh * T;
    }
done:
    for (int k = 0; resized && k < n; k++)
        g4v_image_free(&resized[k]);
    g4v_free(resized);
    g4v_free(im);
    if (st) {
        memset(out, 0, (size_t)n * sizeof *out);
        if (i >= 0 && i < n)
            g4v_err_prefix(&c->err, "RGB buffer %d of the batch", i);
        else
            g4v_err_prefix(&c->err, "batch of %d RGB buffers", n);
    }
    return st;
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
