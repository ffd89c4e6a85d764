/* encode_video.c - g4v_encode_video_file / _memory and the video prompt: decode and sample the
 * frames (src/video), resize each with the image rule at the per-frame budget (Pillow- or
 * torchvision-exact, src/image), encode them all as one pass of the batch internals
 * (g4v_encode_run_steps, encode_batch.c) or read them from the feature cache, one entry per frame
 * (frames_rows), and describe each frame (index,
 * timestamp, MM:SS, tokens). The features and the frame records live in the ctx like
 * g4v_result's; the resized frames only during the call. docs/VIDEO.md.
 */
#include "api_internal.h"

#include "base/alloc.h"
#include "base/budget.h"
#include "base/clock.h"
#include "io/fsutil.h"
#include "kernels/sha256.h"
#include "video/video.h"

#include <stdio.h>
#include <string.h>

static void video_options_defaults(g4v_video_options *o) {
    memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->resize = -1;
}

void g4v_video_options_init_sized(g4v_video_options *o, size_t size) {
    g4v_video_options d;
    video_options_defaults(&d);
    g4v_api_init_struct(o, size, &d, sizeof d);
}

/* The sampled frames at their target size, filled by on_frame while the video decodes. */
typedef struct frame_set {
    const g4v_ctx *ctx;
    int budget, wanted, n;
    g4v_resize_order order; /* the resolved resize */
    int tw, th;        /* target size, from the first frame (all frames share the size) */
    g4v_image *frames; /* [wanted], tightly packed RGB8 at tw x th */
} frame_set;

static int on_frame(void *user, int k, int64_t index, const uint8_t *rgb, int width, int height,
                    size_t stride, g4v_err *err) {
    (void)index;
    frame_set *fs = user;
    if (k < 0) { /* the decoder withdrew the frames so far: sampling restarts */
        for (int i = 0; i < fs->n; i++)
            g4v_image_free(&fs->frames[i]);
        fs->n = 0;
        return G4V_OK;
    }
    if (k != fs->n || k >= fs->wanted)
        return g4v_fail(err, G4V_ERR_INTERNAL, "video frame %d arrived out of order", k);
    if (k == 0) {
        int st = g4v_target_size(height, width, fs->budget, &fs->th, &fs->tw, err);
        if (st) return st;
    }
    g4v_image *img = &fs->frames[k];
    int st;
    if (fs->tw == width && fs->th == height) {
        /* already at the target size: the resize would be the identity */
        size_t row = (size_t)width * 3;
        img->rgb = g4v_malloc(row * (size_t)height);
        if (!img->rgb) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory for a video frame");
        img->width = width;
        img->height = height;
        for (int y = 0; y < height; y++)
            memcpy(img->rgb + (size_t)y * row, rgb + (size_t)y * stride, row);
        st = G4V_OK;
    } else {
        st = g4v_image_resize(rgb, width, height, stride, fs->tw, fs->th,
                              fs->order, img, err);
    }
    if (!st) fs->n++;
    return st;
}

/* The frames' rows through the feature cache, if ctx has one, and the batch internals
 * (encode_batch.c): a frame whose key (its pixels at the target size, the budget, the resize
 * rule, the model) has an entry is read from it; the others, each an encode step, go through the
 * tower as one pass (g4v_encode_run_steps: every GEMM over all frames' rows, attention within each
 * frame) and are stored, one entry per frame (bit-identical either way: a frame's rows do not
 * depend on the batch it ran in). Frame i's rows follow frame i-1's in out. *hits counts the
 * frames read. */
static int frames_rows(g4v_ctx *c, const frame_set *fs, int n, int resize, const g4v_video_info *vi,
                       size_t per, size_t T, float *out, int *hits) {
    *hits = 0;
    size_t fr = per * T;
    g4v_encode_step *steps = g4v_calloc((size_t)n, sizeof *steps);
    int *at = g4v_calloc((size_t)n, sizeof *at);
    float *rows = NULL;
    int st = G4V_OK, m = 0;
    if (!steps || !at) {
        st = g4v_fail(&c->err, G4V_ERR_NOMEM, "out of memory for %d frames", n);
        goto done;
    }
    for (int i = 0; i < n; i++) {
        const g4v_image *f = &fs->frames[i];
        g4v_encode_step *s = &steps[i];
        s->budget = fs->budget;
        s->resize = resize;
        s->src_w = vi->width;
        s->src_h = vi->height;
        s->px = (g4v_encoder_image){f->rgb, f->width, f->height, (size_t)f->width * 3};
        if (c->cache) {
            g4v_sha256_ctx h;
            g4v_sha256_init(&h);
            g4v_sha256_u64(&h, (uint64_t)f->width);
            g4v_sha256_u64(&h, (uint64_t)f->height);
            g4v_sha256_update(&h, f->rgb, (size_t)f->width * (size_t)f->height * 3);
            uint8_t digest[G4V_SHA256_BYTES];
            g4v_sha256_final(&h, digest);
            /* no fingerprint: this frame is encoded, not stored */
            s->cached = g4v_cache_key(c, "frame", digest, fs->budget, 0, resize, s->key) == G4V_OK;
            if (s->cached &&
                g4v_cache_lookup_rows(c, s->key, fs->budget, out + (size_t)i * fr, fr)) {
                (*hits)++;
                continue;
            }
        }
        at[m++] = i;
    }
    if (m == n) {
        st = g4v_encode_run_steps(c, steps, NULL, n, out);
    } else if (m) {
        rows = g4v_malloc_large((size_t)m * fr * sizeof(float));
        st = rows ? g4v_encode_run_steps(c, steps, at, m, rows)
                  : g4v_fail(&c->err, G4V_ERR_NOMEM, "out of memory for %d frames' rows", m);
        for (int j = 0; !st && j < m; j++)
            memcpy(out + (size_t)at[j] * fr, rows + (size_t)j * fr, fr * sizeof(float));
    }
    for (int j = 0; !st && j < m; j++) {
        const g4v_encode_step *s = &steps[at[j]];
        if (!s->cached) continue;
        g4v_result r;
        memset(&r, 0, sizeof r);
        g4v_encode_fill_result(c, s, out + (size_t)at[j] * fr, NULL, &r);
        g4v_cache_store(c, s->key, &r);
    }
done:
    g4v_free_large(rows);
    g4v_free(at);
    g4v_free(steps); /* views: fs keeps the pixels */
    return st;
}

static int encode_video_bytes(g4v_ctx *c, const void *bytes, size_t size,
                              const g4v_video_options *in, g4v_video_result *out) {
    g4v_video_options o, *opts = &o;
    video_options_defaults(&o);
    if (g4v_api_read_opts(&o, sizeof o, in, "g4v_video_options", &c->err)) return G4V_ERR_ARG;
    /* defaults: the checkpoint's video_processor (70 per frame, 32 frames when it has none) */
    const g4v_vision_config *cfg = &c->model->ck->cfg;
    int budget = opts->budget ? opts->budget : cfg->default_video_budget;
    int wanted = opts->num_frames ? opts->num_frames : cfg->default_video_frames;
    if (g4v_budget_require(budget, &c->err)) return G4V_ERR_ARG;
    if (wanted < 1 || wanted > G4V_VIDEO_MAX_SAMPLED)
        return g4v_fail(&c->err, G4V_ERR_ARG, "num_frames must be 1..%d, found %d",
                        G4V_VIDEO_MAX_SAMPLED, wanted);
    if (opts->bf16 != 0 && opts->bf16 != 1)
        return g4v_fail(&c->err, G4V_ERR_ARG, "bf16 must be 0 or 1, found %d", opts->bf16);
    int resize = G4V_RESIZE_PILLOW;
    if (g4v_api_resolve_resize(c->model, opts->resize, &resize, &c->err)) return G4V_ERR_ARG;
    const g4v_model_options *mo = &c->model->opts;
    if (size > mo->max_file_bytes)
        return g4v_fail(&c->err, G4V_ERR_LIMIT,
                        "%zu bytes, above the limit of %llu bytes (max_file_bytes)", size,
                        (unsigned long long)mo->max_file_bytes);
    g4v_video_limits lim = {.max_frames = mo->max_video_frames,
                            .max_seconds = mo->max_video_seconds,
                            .max_pixels = mo->max_pixels,
                            .max_dimension = mo->max_dimension};
    frame_set fs = {
        .ctx = c, .budget = budget, .wanted = wanted, .order = g4v_api_resize_order(resize)};
    fs.frames = g4v_calloc((size_t)wanted, sizeof *fs.frames);
    if (!fs.frames) return g4v_fail(&c->err, G4V_ERR_NOMEM, "out of memory for the video frames");
    int64_t idx[G4V_VIDEO_MAX_SAMPLED];
    g4v_video_info vi;
    int n = 0;
    int st = g4v_video_decode(bytes, size, &lim, wanted, on_frame, &fs, &vi, idx, &n, &c->err);
    if (!st && n != fs.n)
        st = g4v_fail(&c->err, G4V_ERR_INTERNAL, "sampled %d frames, resized %d", n, fs.n);
    int side = cfg->patch_size * cfg->pooling_kernel_size;
    int gw = fs.tw / side, gh = fs.th / side;
    size_t per = (size_t)gw * (size_t)gh, T = (size_t)cfg->text_hidden_size;
    size_t rows = per * (size_t)n;
    if (!st && (gw <= 0 || gh <= 0))
        st = g4v_fail(&c->err, G4V_ERR_INTERNAL, "target size %dx%d", fs.tw, fs.th);
    if (!st)
        st = g4v_ctx_grow_buffer((void **)&c->features, &c->feat_cap, rows * T, sizeof(float), 0,
                                 &c->err);
    if (!st && opts->bf16)
        st = g4v_ctx_grow_buffer((void **)&c->features_bf16, &c->bf16_cap, rows * T,
                                 sizeof(uint16_t), 0, &c->err);
    if (!st)
        st = g4v_ctx_grow_buffer((void **)&c->video_frames, &c->video_frames_cap, (size_t)n,
                                 sizeof(g4v_video_frame), 0, &c->err);
    int hits = 0;
    if (!st) st = frames_rows(c, &fs, n, resize, &vi, per, T, c->features, &hits);
    for (int i = 0; i < wanted; i++)
        g4v_image_free(&fs.frames[i]);
    g4v_free(fs.frames);
    if (st) return st;
    c->cache_hit = n > 0 && hits == n;
    if (opts->bf16) g4v_encode_round_bf16(c->features, c->features_bf16, rows * T);
    for (int i = 0; i < n; i++) {
        g4v_video_frame *f = &c->video_frames[i];
        memset(f, 0, sizeof *f);
        f->index = idx[i];
        f->timestamp = g4v_video_timestamp(idx[i], vi.fps);
        g4v_video_mmss(f->timestamp, f->mmss, sizeof f->mmss);
        f->n_tokens = (int)per;
        f->grid_w = gw;
        f->grid_h = gh;
        f->first_row = (size_t)i * per; /* all frames share one size: frames_rows' order */
    }
    out->n_frames = n;
    out->n_tokens = (int)rows;
    out->dim = (int)T;
    out->total_frames = vi.total_frames;
    out->fps = vi.fps;
    out->duration = vi.duration;
    out->src_width = vi.width;
    out->src_height = vi.height;
    out->width = fs.tw;
    out->height = fs.th;
    out->budget = budget;
    out->frames = c->video_frames;
    out->features = c->features;
    out->features_bf16 = opts->bf16 ? c->features_bf16 : NULL;
    out->boi_token_id = cfg->boi_token_id;
    out->video_token_id = cfg->video_token_id;
    out->eoi_token_id = cfg->eoi_token_id;
    snprintf(out->codec, sizeof out->codec, "%s", vi.codec);
    snprintf(out->container, sizeof out->container, "%s", vi.container);
    return G4V_OK;
}

static int finish(g4v_ctx *c, int st, g4v_video_result *out, double t0, const char *what) {
    if (st) return g4v_call_fail(c, st, out, sizeof *out, what);
    out->seconds = g4v_now_s() - t0;
    return G4V_OK;
}

g4v_status g4v_encode_video_memory(g4v_ctx *c, const void *bytes, size_t size,
                            const g4v_video_options *opts, g4v_video_result *out) {
    int st = g4v_call_begin(c, out, sizeof *out);
    if (st) return st;
    double t0 = g4v_now_s();
    if (!bytes || !size)
        st = g4v_fail(&c->err, G4V_ERR_ARG, "empty video buffer");
    else
        st = encode_video_bytes(c, bytes, size, opts, out);
    return finish(c, st, out, t0, "memory buffer");
}

g4v_status g4v_encode_video_file(g4v_ctx *c, const char *path, const g4v_video_options *opts,
                          g4v_video_result *out) {
    int st = g4v_call_begin(c, out, sizeof *out);
    if (st) return st;
    double t0 = g4v_now_s();
    if (!path) return finish(c, g4v_fail(&c->err, G4V_ERR_ARG, "path is NULL"), out, t0, NULL);
    unsigned char *buf;
    size_t size;
    st = g4v_read_file(path, c->model->opts.max_file_bytes, "max_file_bytes", &buf, &size, &c->err);
    if (!st) {
        st = size ? encode_video_bytes(c, buf, size, opts, out)
                  : g4v_fail(&c->err, G4V_ERR_IMAGE, "empty file");
        if (st) g4v_err_prefix(&c->err, "%s", path);
        g4v_free(buf);
    }
    return finish(c, st, out, t0, NULL);
}

/* Appends s to buf at *len (counting what would be written beyond cap, like snprintf). */
static void put(char *buf, size_t cap, size_t *len, const char *s) {
    size_t n = strlen(s);
    if (buf && *len < cap) {
        size_t room = cap - 1 - *len < n ? cap - 1 - *len : n;
        memcpy(buf + *len, s, room);
        buf[*len + room] = '\0';
    }
    *len += n;
}

size_t g4v_video_prompt_text(const g4v_video_result *r, char *buf, size_t cap) {
    if (buf && cap) buf[0] = '\0';
    if (!r || !r->frames) return 0;
    size_t len = 0;
    for (int i = 0; i < r->n_frames; i++) {
        if (i) put(buf, cap, &len, " ");
        put(buf, cap, &len, r->frames[i].mmss);
        put(buf, cap, &len, " <|image>");
        for (int t = 0; t < r->frames[i].n_tokens; t++)
            put(buf, cap, &len, "<|video|>");
        put(buf, cap, &len, "<image|>");
    }
    return len;
}

size_t g4v_video_prompt_tokens(const g4v_video_result *r, int frame, int32_t *ids, size_t cap) {
    if (!r || !r->frames || frame < -1 || frame >= r->n_frames) return 0;
    int lo = frame < 0 ? 0 : frame, hi = frame < 0 ? r->n_frames : frame + 1;
    size_t k = 0;
    for (int i = lo; i < hi; i++) {
        int n = r->frames[i].n_tokens;
        for (int t = -1; t <= n; t++, k++) {
            int32_t id = t < 0 ? r->boi_token_id : t == n ? r->eoi_token_id : r->video_token_id;
            if (ids && k < cap) ids[k] = id;
        }
    }
    return k;
}
