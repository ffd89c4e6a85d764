/* test_alloc_fail.c - allocation-failure sweeps over the load and encode paths (as SQLite does).
 *
 *     test_alloc_fail TINY_MODEL_DIR IMAGE_CORPUS_DIR [UNIFIED_MODEL_DIR [GGUF_MODEL]]
 *
 * Needs a build with -DG4V_FAULT_INJECTION=ON (otherwise it reports itself skipped, exit 77);
 * run under ASan/LSan (make fault, make asan) so that a leak on any error path fails the test.
 * Every sweep runs in both of SQLite's modes. For N = 0, 1, 2, ...: persistent, the N-th
 * allocation and every later one fail (g4v_alloc_fail_after(N)); transient, only the N-th fails
 * (g4v_alloc_fail_once(N)), so error paths that allocate and fallbacks that retry run too. The
 * sweep ends at the first N at which the whole step completes without an injected failure.
 *   load path:   g4v_checkpoint_open + g4v_encoder_create on the tiny checkpoint;
 *   image path:  g4v_image_load (decode + EXIF + target size + resize, budget 70) for one
 *                image per decoder and mode (PNG plain/Adam7/eXIf/raw-profile/XMP/16-bit/
 *                palette, JPEG streamed/oriented/gray/CMYK, GIF, WebP still/animated, BMP RLE);
 *   encode path: the same + g4v_workspace_create + g4v_encoder_run, for a PNG (whole-image
 *                path, orientation 6), a JPEG (streamed, bottom-up) and an animated WebP;
 *   public API:  g4v_model_load + g4v_ctx_create (2 threads) + g4v_encode_memory of a JPEG,
 *                and the same with g4v_encode_batch of three entries;
 *                again on UNIFIED_MODEL_DIR (a 12B-style unified checkpoint) when given;
 *   GGUF:        the load path on GGUF_MODEL (a Q8_0 mmproj GGUF of the tiny checkpoint: header
 *                parse, conv-layout copy, Q8_0 widening) when given.
 * Every failing step must return an error status (G4V_ERR_NOMEM when one of our allocations was
 * the first to fail) without crashing or leaking; a step of the image/encode paths that absorbs
 * its failure must give the same output; and the call after the sweep, without injection, must
 * give bit-identical output to a run before it. A failing check names the step (N) and mode; a
 * crash or sanitizer report during a step is followed by a line naming them too.
 *
 * What is covered: every allocation libg4v makes (all go through base/alloc.h), and cJSON's,
 * because this test routes cJSON through g4v_malloc with cJSON_InitHooks (process-global, so
 * the library itself cannot). cJSON cannot tell a failed allocation from bad syntax: those steps
 * come back as G4V_ERR_MODEL "malformed JSON" and are accepted as any error. Not covered:
 * libjpeg-turbo, giflib and libwebp allocate with plain malloc (libjpeg's memory manager is
 * fixed at its build time; giflib and libwebp have no hooks); libpng is covered when png.c
 * creates its reader with g4v allocation callbacks (png_create_read_struct_2).
 */
#include "base/alloc.h"
#include "encoder/encoder.h"
#include "g4v.h"
#include "image/image.h"
#include "io/model_source.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STEPS 100000
#define BUDGET 70

#ifdef G4V_FAULT_INJECTION

#if defined(__SANITIZE_ADDRESS__)
#define SWEEP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SWEEP_SANITIZED 1
#endif
#endif
#ifdef SWEEP_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

typedef enum { PERSISTENT, TRANSIENT } fail_mode;
static const char *const mode_names[] = {"persistent", "transient"};
static fail_mode mode;       /* of the sweep running */
static const char *sweeping; /* its name, for the death report */

/* ---- cJSON through g4v_malloc, remembering whether it took the first injected failure -------- */
static long fail_at = -1;  /* the N of the current step */
static int cjson_first;    /* the first failing allocation of this step was cJSON's */
static unsigned char *cjson_map; /* dry run: cjson_map[i] = allocation i was cJSON's */
static long cjson_map_len;

static void *cjson_malloc(size_t n) {
    long idx = g4v_alloc_count(); /* the index this allocation gets */
    if (cjson_map && idx < cjson_map_len) cjson_map[idx] = 1;
    void *p = g4v_malloc(n);
    if (!p && idx == fail_at) cjson_first = 1;
    return p;
}

static void begin_step(long n) {
    fail_at = n;
    cjson_first = 0;
    if (mode == TRANSIENT)
        g4v_alloc_fail_once(n);
    else
        g4v_alloc_fail_after(n);
}

#ifdef SWEEP_SANITIZED
/* A crash or sanitizer error aborts the process mid-step: say which step it was. */
static void on_death(void) {
    if (fail_at == LONG_MAX)
        fprintf(stderr, "test_alloc_fail: died in %s, in a run without failures\n", sweeping);
    else if (fail_at >= 0)
        fprintf(stderr, "test_alloc_fail: died in %s, %s mode, step N = %ld\n", sweeping,
                mode_names[mode], fail_at);
}
#endif

/* Allocations attempted in this step; stops injecting. */
static long end_step(void) {
    long used = g4v_alloc_count();
    g4v_alloc_fail_after(-1);
    fail_at = -1;
    return used;
}

typedef struct {
    long steps, nomem, other, tolerated;
} sweep_stats;

/* Records one failing step: NOMEM, or any error when cJSON failed first. */
static void judge(const char *what, long n, int st, const g4v_err *err, sweep_stats *s) {
    s->steps++;
    if (st == G4V_OK) { /* an injected failure was absorbed (e.g. an optional copy) */
        s->tolerated++;
        return;
    }
    if (st == G4V_ERR_NOMEM) {
        s->nomem++;
    } else {
        s->other++;
        CHECK_MSG(cjson_first && st != G4V_ERR_INTERNAL,
                  "%s (%s): allocation N = %ld failing gave %s, not G4V_ERR_NOMEM: %s", what,
                  mode_names[mode], n, g4v_status_name(st), err->msg);
    }
}

/* ---- load path ------------------------------------------------------------------------------ */
typedef struct {
    uint8_t *p;
    size_t n;
} buf;

typedef struct {
    const char *dir; /* the tiny checkpoint */
    const buf *image; /* for the API step */
} step_args;

/* One step; returns the status and sets *used to the allocations attempted. */
typedef int (*step_fn)(const step_args *a, long n, long *used, g4v_err *err);

static int load_step(const step_args *a, long n, long *used, g4v_err *err) {
    const char *dir = a->dir;
    g4v_checkpoint *ck = NULL;
    g4v_encoder *enc = NULL;
    begin_step(n);
    int st = g4v_checkpoint_open(dir, NULL, &ck, err);
    if (!st) st = g4v_encoder_create(ck, NULL, &enc, err);
    *used = end_step();
    g4v_encoder_free(enc);
    g4v_checkpoint_close(ck);
    return st;
}

/* The public API end to end: g4v_model_load + g4v_ctx_create (2 threads: the pool is swept too)
 * + encode(ctx, a), which returns a status (the ctx's message kept in err). */
typedef int (*api_encode_fn)(g4v_ctx *ctx, const step_args *a);

static int api_run(const step_args *a, long n, long *used, g4v_err *err, api_encode_fn encode) {
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.budget = BUDGET;
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = 2;
    g4v_model *model = NULL;
    g4v_ctx *ctx = NULL;
    err->msg[0] = 0;
    begin_step(n);
    int st = g4v_model_load(a->dir, &mo, &model, err->msg, sizeof err->msg);
    if (!st) st = g4v_ctx_create(model, &co, &ctx, err->msg, sizeof err->msg);
    if (!st) {
        st = encode(ctx, a);
        if (st) snprintf(err->msg, sizeof err->msg, "%s", g4v_ctx_error(ctx));
    }
    *used = end_step();
    err->status = st;
    g4v_ctx_free(ctx);
    g4v_model_free(model);
    return st;
}

static int encode_one(g4v_ctx *ctx, const step_args *a) {
    g4v_result r;
    return g4v_encode_memory(ctx, a->image->p, a->image->n, NULL, &r);
}

/* g4v_encode_batch of three entries (the JPEG at two budgets, bf16 on one): every entry must
 * succeed, or the call report the failure. */
static int encode_three(g4v_ctx *ctx, const step_args *a) {
    g4v_encode_options o140;
    g4v_encode_options_init(&o140);
    o140.budget = 140;
    o140.bf16 = 1;
    g4v_batch_item it[3] = {{.bytes = a->image->p, .size = a->image->n},
                            {.bytes = a->image->p, .size = a->image->n, .opts = &o140},
                            {.bytes = a->image->p, .size = a->image->n}};
    int st = g4v_encode_batch(ctx, it, 3);
    for (int i = 0; !st && i < 3; i++)
        if (it[i].status || !it[i].result.features) st = G4V_ERR_INTERNAL;
    return st;
}

static int api_step(const step_args *a, long n, long *used, g4v_err *err) {
    return api_run(a, n, used, err, encode_one);
}

static int api_batch_step(const step_args *a, long n, long *used, g4v_err *err) {
    return api_run(a, n, used, err, encode_three);
}

/* Parsing the tiny checkpoint's header alone takes ~1400 cJSON allocations, and each step parses
 * it again, so a dry run first marks which allocations are cJSON's: every allocation of ours is
 * swept, cJSON's at the first and last of each run of them and every 37th in between (all of
 * them with G4V_SWEEP_ALL=1). */
static void sweep_mapped(const char *what, step_fn step, const step_args *a) {
    g4v_err err;
    long total = 0;
    sweeping = what;
    /* warm-up: per-thread caches (the GEMM scratch) are allocated once and then reused */
    step(a, LONG_MAX, &total, &err);
    cjson_map_len = MAX_STEPS;
    cjson_map = calloc((size_t)cjson_map_len, 1);
    int st = step(a, LONG_MAX, &total, &err);
    unsigned char *map = cjson_map;
    cjson_map = NULL;
    REQUIRE(st == G4V_OK && total < MAX_STEPS);
    int all = getenv("G4V_SWEEP_ALL") != NULL;
    long ours = 0, theirs = 0, swept = 0;
    sweep_stats s = {0};
    for (long n = 0; n < total; n++) {
        ours += !map[n], theirs += map[n];
        int edge = n == 0 || !map[n - 1] || n + 1 == total || !map[n + 1];
        if (map[n] && !all && !edge && n % 37) continue;
        swept++;
        long used;
        memset(&err, 0, sizeof err);
        st = step(a, n, &used, &err);
        if (st == G4V_OK && used <= n) break; /* fewer allocations than the dry run: done */
        judge(what, n, st, &err, &s);
    }
    long used;
    st = step(a, total, &used, &err); /* one past the last: nothing fails */
    CHECK_MSG(st == G4V_OK && used <= total,
              "%s (%s): no clean finish at N = %ld (%s, %ld of %ld allocations)", what,
              mode_names[mode], total, g4v_status_name(st), used, total);
    CHECK_MSG(ours > 10, "%s: only %ld allocations of ours (fault injection compiled in?)", what,
              ours);
    printf("  %s, %s: %ld allocations (%ld ours, %ld cJSON), %ld swept: %ld NOMEM, %ld other "
           "(cJSON first), %ld absorbed\n",
           what, mode_names[mode], total, ours, theirs, swept, s.nomem, s.other, s.tolerated);
    free(map);
}

/* ---- encode path ---------------------------------------------------------------------------- */
static buf load_file(const char *dir, const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    buf b = {NULL, 0};
    FILE *f = fopen(path, "rb");
    if (!f) return b;
    b.p = malloc(1 << 16);
    b.n = fread(b.p, 1, 1 << 16, f);
    fclose(f);
    return b;
}

/* What one run of the path produced (copied with plain malloc, which injection does not touch). */
typedef struct {
    uint8_t *px; /* the target-size image */
    size_t npx;
    float *tok; /* soft tokens, when an encoder is given */
    size_t ntok;
} result;

static void result_free(result *r) {
    free(r->px);
    free(r->tok);
    memset(r, 0, sizeof *r);
}

static int same(const result *a, const result *b) {
    return a->npx == b->npx && a->ntok == b->ntok && !memcmp(a->px, b->px, a->npx) &&
           (!a->ntok || !memcmp(a->tok, b->tok, a->ntok * sizeof *a->tok));
}

/* image bytes -> g4v_image_load at BUDGET, then (enc != NULL) workspace + encoder_run. */
static int run_path(const g4v_encoder *enc, int T, const buf *b, result *r, g4v_err *err) {
    memset(r, 0, sizeof *r);
    g4v_image img;
    g4v_workspace *ws = NULL;
    g4v_image_opts o;
    g4v_image_opts_default(&o);
    int st = g4v_image_load(b->p, b->n, BUDGET, &o, &img, NULL, err);
    if (!st) {
        r->npx = (size_t)img.width * img.height * 3;
        r->px = malloc(r->npx);
        memcpy(r->px, img.rgb, r->npx);
    }
    if (!st && enc) {
        ws = g4v_workspace_create();
        if (!ws) st = g4v_fail(err, G4V_ERR_NOMEM, "workspace: out of memory");
    }
    if (!st && enc) {
        r->ntok = (size_t)(img.width / 48) * (img.height / 48) * T;
        r->tok = malloc(r->ntok * sizeof *r->tok);
        st = g4v_encoder_run(enc, ws, NULL, img.rgb, img.width, img.height, (size_t)img.width * 3,
                             r->tok, err);
    }
    g4v_workspace_free(ws);
    g4v_image_free(&img); /* NULL pixels after a failed load */
    if (st) result_free(r);
    return st;
}

static void sweep_path(const g4v_encoder *enc, int T, const char *dir, const char *name) {
    buf b = load_file(dir, name);
    if (!b.n) {
        CHECK_MSG(0, "%s/%s: cannot read", dir, name);
        free(b.p);
        return;
    }
    g4v_err err;
    result ref, out;
    sweeping = name;
    int st = run_path(enc, T, &b, &ref, &err);
    CHECK_MSG(st == G4V_OK, "%s: %s", name, err.msg);
    sweep_stats s = {0};
    long n = 0;
    for (; st == G4V_OK && n < MAX_STEPS; n++) {
        memset(&err, 0, sizeof err);
        begin_step(n);
        int r = run_path(enc, T, &b, &out, &err);
        long used = end_step();
        /* a failure absorbed (a fallback, a retry) must not change a byte */
        CHECK_MSG(r != G4V_OK || same(&ref, &out), "%s (%s): N = %ld absorbed, output differs",
                  name, mode_names[mode], n);
        result_free(&out);
        if (r == G4V_OK && used <= n) break;
        judge(name, n, r, &err, &s);
    }
    CHECK_MSG(n < MAX_STEPS, "%s (%s): never completed", name, mode_names[mode]);
    /* afterwards, without injection: the same bytes as before the sweep */
    st = run_path(enc, T, &b, &out, &err);
    CHECK_MSG(st == G4V_OK && same(&ref, &out), "%s (%s): the call after the sweep differs (%s)",
              name, mode_names[mode], g4v_status_name(st));
    printf("  %-6s %-10s %-28s %3ld allocations swept: %3ld NOMEM, %ld other, %ld absorbed\n",
           enc ? "encode" : "image", mode_names[mode], name, n, s.nomem, s.other, s.tolerated);
    result_free(&ref);
    result_free(&out);
    free(b.p);
}

/* The image path for every decoder and mode; the whole encode path (workspace and encoder
 * allocations do not depend on the format) for three of them. */
static void sweep_images(const g4v_encoder *enc, int T, const char *dir) {
    static const char *const images[] = {
        "rgb8.png",         "rgb8-adam7.png",  "exif-before.png",
        "exif-after.png",   "raw-profile.png", "xmp.png",
        "rgba16-adam7.png", "pal8-trns.png",   "baseline-420.jpg",
        "orient3.jpg",      "422-orient6.jpg", "orient2-big-endian.jpg",
        "gray.jpg",         "cmyk.jpg",        "interlaced-transparent.gif",
        "overhang.gif",     "lossy.webp",      "alpha-exif.webp",
        "animated.webp",    "rle8.bmp",        "rle4.bmp",
        "tall-1x40.jpg"};
    for (size_t i = 0; i < sizeof images / sizeof images[0]; i++)
        sweep_path(NULL, 0, dir, images[i]);
    static const char *const encoded[] = {"exif-before.png", "orient3.jpg", "animated.webp"};
    for (size_t i = 0; i < sizeof encoded / sizeof encoded[0]; i++)
        sweep_path(enc, T, dir, encoded[i]);
}

#endif /* G4V_FAULT_INJECTION */

int main(int argc, char **argv) {
    if (argc < 3 || argc > 5) {
        fprintf(stderr, "usage: test_alloc_fail TINY_MODEL_DIR IMAGE_CORPUS_DIR "
                        "[UNIFIED_MODEL_DIR [GGUF_MODEL]]\n");
        return 2;
    }
#ifndef G4V_FAULT_INJECTION
    (void)argv;
    printf("test_alloc_fail: skipped (build with -DG4V_FAULT_INJECTION=ON, e.g. make fault)\n");
    return 77;
#else
    cJSON_Hooks hooks = {cjson_malloc, g4v_free};
    cJSON_InitHooks(&hooks);
#ifdef SWEEP_SANITIZED
    __sanitizer_set_death_callback(on_death);
#endif
    g4v_checkpoint *ck = NULL;
    g4v_encoder *enc = NULL;
    g4v_err err;
    if (g4v_checkpoint_open(argv[1], NULL, &ck, &err) || g4v_encoder_create(ck, NULL, &enc, &err)) {
        fprintf(stderr, "test_alloc_fail: cannot load %s: %s\n", argv[1], err.msg);
        return 1;
    }
    buf api_image = load_file(argv[2], "orient3.jpg");
    CHECK_MSG(api_image.n, "%s/orient3.jpg: cannot read", argv[2]);
    step_args a = {argv[1], &api_image};
    step_args unified = {argc >= 4 ? argv[3] : NULL, &api_image};
    step_args gguf = {argc == 5 ? argv[4] : NULL, &api_image};
    for (mode = PERSISTENT; mode <= TRANSIENT; mode++) {
        printf("allocation-failure sweeps, %s mode:\n", mode_names[mode]);
        sweep_mapped("load (checkpoint_open + encoder_create)", load_step, &a);
        if (api_image.n)
            sweep_mapped("API (model_load + ctx_create(2 threads) + encode_memory, orient3.jpg)",
                         api_step, &a);
        if (api_image.n)
            sweep_mapped("API batch (model_load + ctx_create + encode_batch of 3 entries)",
                         api_batch_step, &a);
        if (api_image.n && unified.dir)
            sweep_mapped("API on the unified model (embedder_create, embedder_run)", api_step,
                         &unified);
        /* The load path only: the API step's allocation count varies by a few with thread
         * timing on a loaded machine (the unified API sweep shows the same), and model_load
         * reaches the GGUF code through the same g4v_checkpoint_open. */
        if (gguf.dir)
            sweep_mapped("load of a Q8_0 mmproj GGUF (checkpoint_open + encoder_create)",
                         load_step, &gguf);
        sweep_images(enc, ck->cfg.text_hidden_size, argv[2]);
    }
    free(api_image.p);
    g4v_encoder_free(enc);
    g4v_checkpoint_close(ck);
    return test_summary("test_alloc_fail");
#endif
}
