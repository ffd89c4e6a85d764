/* encode_batch.c - g4v_encode_batch and g4v_encode_rgb_batch: many images in one call. Each entry
 * is prepared exactly as its single call prepares it (encode.c: options, read and decode or
 * check, resize, cache lookup); the entries that need the tower wait for a pass, which goes
 * through it as one batch (g4v_model_run_batch: rows stacked, attention per image, so every
 * image's soft tokens are bit for bit its single encode's) once it holds PASS_ROWS patch rows or
 * the entries are done. Each entry's features are copied to its place in the ctx's batch buffer,
 * in entry order. An entry that fails fails alone, with the status and message its single call
 * would give. */
#include "api_internal.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "io/fsutil.h"

#include <string.h>

/* Patch rows a pass gathers before it runs: the encoder's own pass size (batch_rows), so that a
 * pass is one encoder pass and the pixels held waiting stay bounded (~6 MB at 768 B per row). */
#define PASS_ROWS 8192

/* One call's state. */
typedef struct batch {
    g4v_ctx *c;
    g4v_batch_item *items; /* the library's copies, n of them */
    int n;
    int use_cache;     /* 0: g4v_encode_rgb_batch, which never consults the cache */
    int prefix_source; /* 1: messages start with the source as the single call's do */
    g4v_encode_step *steps;
    size_t *offset;  /* each entry's first float in c->batch_features */
    size_t used;     /* floats placed or reserved there */
    int *pending;    /* entries waiting for the pass */
    int npending;
    size_t pending_rows;
    int first_fail;    /* the first entry that failed (-1: none) */
    int first_in_pass; /* 1: it failed in a pass (with every entry waiting there) */
} batch;

/* The entry fails: its status, its message (from ctx->err) kept, its result zeroed. */
static void entry_fail(batch *b, int i, int st, int in_pass) {
    g4v_ctx *c = b->c;
    if (b->first_fail < 0 || i < b->first_fail) {
        b->first_fail = i;
        b->first_in_pass = in_pass;
    }
    b->items[i].status = (g4v_status)st;
    c->batch_errs[i] = c->err;
    b->items[i].error = c->batch_errs[i].msg;
    memset(&b->items[i].result, 0, sizeof b->items[i].result);
    g4v_err_clear(&c->err);
}

/* Reserves `values` floats for entry i at the end of the batch buffer (what is there is kept). */
static int reserve(batch *b, int i, size_t values) {
    g4v_ctx *c = b->c;
    size_t need = b->used + values;
    if (need > c->batch_feat_cap) {
        size_t cap = c->batch_feat_cap * 2 > need ? c->batch_feat_cap * 2 : need;
        int st = g4v_ctx_grow_buffer((void **)&c->batch_features, &c->batch_feat_cap, cap,
                                 sizeof(float), b->used, &c->err);
        if (st) return st;
    }
    b->offset[i] = b->used;
    b->used = need;
    return G4V_OK;
}

/* Prepares entry i as its single call would (g4v_encode_file / _memory / _rgb). */
static int prepare(batch *b, int i, g4v_result *hit) {
    g4v_ctx *c = b->c;
    const g4v_batch_item *it = &b->items[i];
    g4v_encode_step *st = &b->steps[i];
    int inputs = (it->path != NULL) + (it->bytes != NULL) + (it->rgb != NULL);
    if (inputs != 1)
        return g4v_fail(&c->err, G4V_ERR_ARG,
                        "a batch entry gives exactly one of path, bytes and rgb (found %d)",
                        inputs);
    int rc;
    if (it->path) {
        unsigned char *buf;
        size_t size;
        /* fsutil messages already name the path; only image errors need it in front */
        rc = g4v_read_file(it->path, c->model->opts.max_file_bytes, "max_file_bytes", &buf, &size,
                           &c->err);
        if (rc) return rc;
        rc = g4v_encode_prepare_bytes(c, buf, size, it->opts, st, hit);
        if (rc && b->prefix_source) g4v_err_prefix(&c->err, "%s", it->path);
        g4v_free(buf);
        return rc;
    }
    if (it->bytes) {
        rc = g4v_encode_prepare_bytes(c, it->bytes, it->size, it->opts, st, hit);
        if (rc && b->prefix_source) g4v_err_prefix(&c->err, "memory buffer");
        return rc;
    }
    rc = g4v_encode_prepare_rgb(c, it->rgb, it->width, it->height, it->stride, it->opts,
                                b->use_cache, st, hit);
    if (rc && b->prefix_source) g4v_err_prefix(&c->err, "RGB buffer");
    return rc;
}

/* Runs the steps which[0..n) (which NULL: steps[0..n)) through the tower as one pass
 * (g4v_model_run_batch), their rows one after another in out. The batch's passes and the video
 * frames (encode_video.c) both go through here. */
int g4v_encode_run_steps(g4v_ctx *c, const g4v_encode_step *steps, const int *which, int n,
                         float *out) {
    g4v_encoder_image *im = g4v_calloc((size_t)n, sizeof *im);
    if (!im) return g4v_fail(&c->err, G4V_ERR_NOMEM, "out of memory for a pass of %d images", n);
    for (int k = 0; k < n; k++)
        im[k] = steps[which ? which[k] : k].px;
    int st = g4v_model_run_batch(c->model, c->ws, c->pool, im, n, out, &c->err);
    g4v_free(im);
    return st;
}

/* Runs the waiting entries through the tower together, into the ctx's scratch buffer, and copies
 * each one's rows to its place; a failure fails every waiting entry. */
static int run_pass(batch *b) {
    g4v_ctx *c = b->c;
    if (!b->npending) return G4V_OK;
    size_t values = 0;
    for (int k = 0; k < b->npending; k++)
        values += g4v_encode_step_values(c, &b->steps[b->pending[k]]);
    int st = g4v_ctx_grow_buffer((void **)&c->features, &c->feat_cap, values, sizeof(float), 0,
                                 &c->err);
    if (!st) st = g4v_encode_run_steps(c, b->steps, b->pending, b->npending, c->features);
    const float *rows = c->features;
    g4v_err pass_err = c->err;
    for (int k = 0; k < b->npending; k++) {
        int i = b->pending[k];
        g4v_encode_step *s = &b->steps[i];
        size_t nv = g4v_encode_step_values(c, s);
        if (st) {
            c->err = pass_err;
            entry_fail(b, i, st, 1);
        } else {
            float *dst = c->batch_features + b->offset[i];
            memcpy(dst, rows, nv * sizeof(float));
            g4v_result *r = &b->items[i].result;
            g4v_encode_fill_result(c, s, dst, NULL, r);
            if (s->cached) g4v_cache_store(c, s->key, r);
        }
        rows += nv;
        g4v_encode_step_free(s);
    }
    b->npending = 0;
    b->pending_rows = 0;
    return st;
}

/* Entry i: prepared, then placed (a cache hit) or set waiting for the pass. 0, or its status. */
static int take(batch *b, int i) {
    g4v_ctx *c = b->c;
    g4v_encode_step *st = &b->steps[i];
    g4v_result hit;
    memset(&hit, 0, sizeof hit);
    int rc = prepare(b, i, &hit);
    if (!rc && st->hit) {
        size_t nv = (size_t)hit.n_tokens * (size_t)hit.dim;
        if (!(rc = reserve(b, i, nv))) {
            memcpy(c->batch_features + b->offset[i], hit.features, nv * sizeof(float));
            hit.features = NULL; /* pointed at the ctx's scratch; set at the end */
            b->items[i].result = hit;
            b->items[i].cache_hit = 1;
        }
    } else if (!rc) {
        const g4v_vision_config *cfg = &c->model->ck->cfg;
        size_t rows = (size_t)(st->px.width / cfg->patch_size) *
                      (size_t)(st->px.height / cfg->patch_size);
        if (!(rc = reserve(b, i, g4v_encode_step_values(c, st)))) {
            b->pending[b->npending++] = i;
            b->pending_rows += rows;
        }
    }
    if (rc) {
        g4v_encode_step_free(st);
        entry_fail(b, i, rc, 0);
    }
    return rc;
}

/* Points every good entry's result at its rows (and bf16 copies where asked). */
static int finish_results(batch *b, double seconds) {
    g4v_ctx *c = b->c;
    int any_bf16 = 0;
    for (int i = 0; i < b->n; i++)
        any_bf16 |= b->items[i].status == G4V_OK && b->steps[i].bf16;
    if (any_bf16 && g4v_ctx_grow_buffer((void **)&c->batch_bf16, &c->batch_bf16_cap, b->used,
                                    sizeof(uint16_t), 0, &c->err))
        return G4V_ERR_NOMEM;
    for (int i = 0; i < b->n; i++) {
        g4v_batch_item *it = &b->items[i];
        if (it->status != G4V_OK) continue;
        size_t nv = (size_t)it->result.n_tokens * (size_t)it->result.dim;
        it->result.features = c->batch_features + b->offset[i];
        if (b->steps[i].bf16) {
            g4v_encode_round_bf16(it->result.features, c->batch_bf16 + b->offset[i], nv);
            it->result.features_bf16 = c->batch_bf16 + b->offset[i];
        }
        it->result.seconds = seconds;
    }
    return G4V_OK;
}

/* The whole call over b->items: 0 when every entry succeeded, else the first failed entry's
 * status (*first its index). stop_at_error: the first failure ends the call. */
static int run_batch(batch *b, int stop_at_error, int *first) {
    g4v_ctx *c = b->c;
    double t0 = g4v_now_s();
    int n = b->n, rc = G4V_OK;
    *first = -1;
    b->steps = g4v_calloc((size_t)n, sizeof *b->steps);
    b->offset = g4v_calloc((size_t)n, sizeof *b->offset);
    b->pending = g4v_calloc((size_t)n, sizeof *b->pending);
    if (!b->steps || !b->offset || !b->pending ||
        ((size_t)n > c->batch_errs_cap &&
         g4v_ctx_grow_buffer((void **)&c->batch_errs, &c->batch_errs_cap, (size_t)n, sizeof(g4v_err),
                         0, &c->err))) {
        rc = g4v_fail(&c->err, G4V_ERR_NOMEM, "out of memory for a batch of %d images", n);
        goto done;
    }
    b->used = 0;
    b->first_fail = -1;
    for (int i = 0; i < n; i++) {
        int st = take(b, i);
        if (!st && b->pending_rows >= PASS_ROWS) st = run_pass(b);
        if (st && stop_at_error) break;
    }
    if (stop_at_error && b->first_fail >= 0) goto done; /* the waiting entries are dropped */
    run_pass(b);
    rc = finish_results(b, g4v_now_s() - t0);
done:
    for (int i = 0; b->steps && i < n; i++)
        g4v_encode_step_free(&b->steps[i]);
    g4v_free(b->steps);
    g4v_free(b->offset);
    g4v_free(b->pending);
    if (rc) return rc; /* the call itself failed: the caller fails every entry */
    int hits = 0;
    for (int i = 0; i < n; i++) hits += b->items[i].cache_hit;
    c->cache_hit = hits == n;
    *first = b->first_fail;
    return *first < 0 ? G4V_OK : b->items[*first].status;
}

/* A struct of the caller's layout may be larger than ours (a later header); never smaller. */
#define ITEM_AT(items, size, i) ((g4v_batch_item *)((char *)(items) + (size_t)(i) * (size)))

g4v_status g4v_encode_batch_sized(g4v_ctx *c, g4v_batch_item *items, int n, size_t item_size) {
    int ok_size = item_size >= sizeof(g4v_batch_item) && item_size <= G4V_API_MAX_STRUCT_SIZE;
    if (!c) return G4V_ERR_ARG;
    g4v_err_clear(&c->err);
    c->cache_hit = 0;
    if (!items || n < 1 || !ok_size)
        return g4v_fail(&c->err, G4V_ERR_ARG,
                        "g4v_encode_batch: items must not be NULL, n must be at least 1 (found "
                        "%d) and item_size at least %zu (found %zu)",
                        n, sizeof(g4v_batch_item), item_size);
    batch b = {.c = c, .n = n, .use_cache = 1, .prefix_source = 1};
    b.items = g4v_calloc((size_t)n, sizeof *b.items);
    if (!b.items) { /* every entry says so too: a caller may read only the entries */
        g4v_fail(&c->err, G4V_ERR_NOMEM, "out of memory for a batch of %d images", n);
        for (int i = 0; i < n; i++) {
            g4v_batch_item *it = ITEM_AT(items, item_size, i);
            it->status = G4V_ERR_NOMEM;
            it->cache_hit = 0;
            it->error = c->err.msg;
            memset(&it->result, 0, sizeof it->result);
        }
        return G4V_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) {
        b.items[i] = *ITEM_AT(items, item_size, i);
        b.items[i].status = G4V_OK;
        b.items[i].cache_hit = 0;
        b.items[i].error = "";
        memset(&b.items[i].result, 0, sizeof b.items[i].result);
    }
    int first = -1, st = run_batch(&b, 0, &first);
    if (st && first < 0) { /* the call failed as a whole: every entry with it */
        for (int i = 0; i < n; i++) {
            b.items[i].status = (g4v_status)st;
            b.items[i].error = g4v_ctx_error(c);
            memset(&b.items[i].result, 0, sizeof b.items[i].result);
        }
        g4v_err_prefix(&c->err, "batch of %d images", n);
    } else if (st) {
        int failed = 0;
        for (int i = 0; i < n; i++) failed += b.items[i].status != G4V_OK;
        g4v_fail(&c->err, st, "batch: %d of %d entries failed; entry %d: %s", failed, n, first,
                 b.items[first].error);
    }
    for (int i = 0; i < n; i++) *ITEM_AT(items, item_size, i) = b.items[i];
    g4v_free(b.items);
    return (g4v_status)st;
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
    batch b = {.c = c, .n = n, .use_cache = 0, .prefix_source = 0};
    b.items = g4v_calloc((size_t)n, sizeof *b.items);
    if (!b.items)
        return g4v_fail(&c->err, G4V_ERR_NOMEM, "out of memory for a batch of %d images", n);
    for (int i = 0; i < n; i++)
        b.items[i] = (g4v_batch_item){.rgb = images[i].rgb, .width = images[i].width,
                                      .height = images[i].height, .stride = images[i].stride,
                                      .opts = opts, .error = ""};
    int first = -1, st = run_batch(&b, 1, &first);
    if (!st) {
        for (int i = 0; i < n; i++) out[i] = b.items[i].result;
    } else {
        /* all or nothing: the first failure names its image, or the batch if a pass failed */
        if (first >= 0) g4v_fail(&c->err, st, "%s", b.items[first].error);
        if (first >= 0 && !b.first_in_pass)
            g4v_err_prefix(&c->err, "RGB buffer %d of the batch", first);
        else
            g4v_err_prefix(&c->err, "batch of %d RGB buffers", n);
    }
    g4v_free(b.items);
    return (g4v_status)st;
}
