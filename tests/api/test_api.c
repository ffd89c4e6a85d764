/* test_api.c - the public API's behaviour (include/g4v.h) on a tiny synthetic checkpoint:
 * options and defaults, info, plan, the three encode entry points agreeing bit for bit (file,
 * memory, decoded RGB with a padded stride), per-encode budget / exif overrides, bf16 output,
 * prompt span, copy-out, and errors that name their cause without crashing.
 * Usage: test_api FIXTURES (tests/api/make_fixtures.py output). */
#include "g4v.h"
#include "image/image.h" /* only to decode a PNG independently for the RGB entry point */
#include "small_gguf.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dir;
static g4v_model *model;
static g4v_ctx *ctx;

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

static float *copy_out(const g4v_result *r) {
    size_t n = (size_t)r->n_tokens * r->dim;
    float *p = malloc(n * sizeof(float) + 1);
    if (p) g4v_result_copy(r, p, n, NULL, 0);
    return p;
}

static void test_basics(void) {
    CHECK(!strcmp(g4v_version(), "0.2.0"));
    CHECK(!strcmp(g4v_status_name(G4V_ERR_MODEL), "G4V_ERR_MODEL"));
    CHECK(!strcmp(g4v_status_name(999), "G4V_ERR_UNKNOWN"));
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    CHECK(mo.budget == 0 && mo.apply_exif == 1 && mo.math == G4V_MATH_FAST);
    CHECK(mo.resize == G4V_RESIZE_PILLOW);
    CHECK(mo.max_pixels > 0 && mo.max_dimension > 0 && mo.max_header_bytes > 0);
    CHECK(mo.max_file_bytes == (uint64_t)1 << 30 && mo.max_config_bytes == 16000000u &&
          mo.max_tensor_count == 1000000u);
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    CHECK(eo.budget == 0 && eo.apply_exif == -1 && eo.bf16 == 0 && eo.resize == -1);
}

static void test_budgets(void) {
    static const int budgets[] = {G4V_BUDGETS};
    int n = (int)(sizeof budgets / sizeof budgets[0]), in_list = 0;
    CHECK(n == 5 && budgets[0] == 70 && budgets[n - 1] == 1120);
    for (int i = 0; i < n; i++) {
        CHECK(g4v_budget_valid(budgets[i]));
        in_list += budgets[i] == G4V_DEFAULT_BUDGET;
    }
    CHECK(in_list == 1);
    CHECK(!g4v_budget_valid(0) && !g4v_budget_valid(300) && !g4v_budget_valid(-70));
    char msg[128] = "x";
    CHECK(g4v_budget_check(280, msg, sizeof msg) == G4V_OK && msg[0] == '\0');
    CHECK(g4v_budget_check(300, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK(!strcmp(msg, "unsupported token budget 300 (use one of 70, 140, 280, 560, 1120)"));
    CHECK(g4v_budget_check(300, NULL, 0) == G4V_ERR_ARG);
    char tiny[8];
    CHECK(g4v_budget_check(300, tiny, sizeof tiny) == G4V_ERR_ARG && strlen(tiny) == 7);
    /* the same constants as functions (for bindings) */
    int got[8] = {0};
    CHECK(g4v_budgets(NULL, 0) == n && g4v_budgets(got, 2) == n && got[0] == 70 &&
          got[1] == 140 && got[2] == 0);
    CHECK(g4v_budgets(got, 8) == n && !memcmp(got, budgets, sizeof budgets));
    CHECK(g4v_default_budget() == G4V_DEFAULT_BUDGET &&
          g4v_default_video_budget() == G4V_DEFAULT_VIDEO_BUDGET &&
          g4v_video_alloc_cap() == G4V_VIDEO_ALLOC_CAP);
}

/* The math mode's names and parse: each name reads back as its mode, anything else is refused
 * with one message; a model carries the mode it was loaded with, and each mode has its own
 * fingerprint. */
static void test_math_mode(void) {
    static const char *const names[] = {"fast", "precise", "int8", "int8-blocks"};
    static const g4v_math_mode modes[] = {G4V_MATH_FAST, G4V_MATH_PRECISE, G4V_MATH_INT8,
                                          G4V_MATH_INT8_BLOCKS};
    char msg[512] = "x", path[1024], fp[4][G4V_FINGERPRINT_HEX];
    for (int i = 0; i < 4; i++) {
        CHECK(!strcmp(g4v_math_mode_name(modes[i]), names[i]));
        g4v_math_mode m = (g4v_math_mode)-1;
        CHECK(g4v_math_mode_parse(names[i], &m, msg, sizeof msg) == G4V_OK && m == modes[i]);
        CHECK(msg[0] == '\0');
    }
    CHECK(!strcmp(g4v_math_mode_name((g4v_math_mode)4), "unknown"));
    CHECK(!strcmp(g4v_math_mode_name((g4v_math_mode)-1), "unknown"));
    static const char *const bad[] = {"Fast", "int8_blocks", "int8-block", "", "fast "};
    for (int i = 0; i < 5; i++) {
        g4v_math_mode m = G4V_MATH_PRECISE;
        CHECK(g4v_math_mode_parse(bad[i], &m, msg, sizeof msg) == G4V_ERR_ARG);
        CHECK(m == G4V_MATH_PRECISE); /* untouched */
        CHECK_CONTAINS(msg, "(use fast, precise, int8 or int8-blocks)");
    }
    CHECK(g4v_math_mode_parse("int9", NULL, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK(!strcmp(msg, "unknown math mode 'int9' (use fast, precise, int8 or int8-blocks)"));
    CHECK(g4v_math_mode_parse(NULL, NULL, NULL, 0) == G4V_ERR_ARG);

    snprintf(path, sizeof path, "%s/tiny", dir);
    g4v_model_options mo;
    for (int i = 0; i < 4; i++) {
        g4v_model_options_init(&mo);
        mo.metadata_only = 1;
        mo.math = modes[i];
        g4v_model *m = NULL;
        g4v_model_info info;
        REQUIRE(g4v_model_load(path, &mo, &m, msg, sizeof msg) == G4V_OK);
        CHECK(g4v_model_get_info(m, &info, NULL, 0) == G4V_OK && info.math == modes[i]);
        CHECK(g4v_model_fingerprint(m, fp[i], sizeof fp[i], NULL, 0) == G4V_OK);
        for (int j = 0; j < i; j++) CHECK(strcmp(fp[i], fp[j]));
        g4v_model_free(m);
    }
    g4v_model *m = (g4v_model *)1;
    g4v_model_options_init(&mo);
    mo.math = (g4v_math_mode)4;
    CHECK(g4v_model_load(path, &mo, &m, msg, sizeof msg) == G4V_ERR_ARG && m == NULL);
    CHECK_CONTAINS(msg, "math must be");
    /* the ABI-only slots (tests/api/test_abi.c reads them as an older caller) cannot add a
     * second mode to math */
    g4v_model_options_init(&mo);
    mo.math = G4V_MATH_INT8;
    mo.legacy_precise = 1;
    CHECK(g4v_model_load(path, &mo, &m, msg, sizeof msg) == G4V_ERR_ARG && m == NULL);
    CHECK_CONTAINS(msg, "legacy_precise");
}

static void test_load_errors(void) {
    char msg[512], path[1024];
    g4v_model *m = (g4v_model *)1;
    CHECK(g4v_model_load("/nonexistent/model", NULL, &m, msg, sizeof msg) == G4V_ERR_IO);
    CHECK(m == NULL);
    CHECK_CONTAINS(msg, "/nonexistent/model");
    CHECK(g4v_model_load(NULL, NULL, &m, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK(g4v_model_load(dir, NULL, NULL, NULL, 0) == G4V_ERR_ARG); /* NULL errbuf is fine */
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.budget = 300;
    snprintf(path, sizeof path, "%s/tiny", dir);
    CHECK(g4v_model_load(path, &mo, &m, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK_CONTAINS(msg, "300");
    g4v_model_options_init(&mo);
    mo.resize = 2;
    CHECK(g4v_model_load(path, &mo, &m, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK_CONTAINS(msg, "resize");
    g4v_model_options_init(&mo);
    /* G4V_ERR_LIMIT only for a limit the caller sets, and the message names it */
    mo.max_header_bytes = 16; /* smaller than any real header */
    CHECK(g4v_model_load(path, &mo, &m, msg, sizeof msg) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(msg, "(max_header_bytes)");
    g4v_model_options_init(&mo);
    mo.max_config_bytes = 16;
    CHECK(g4v_model_load(path, &mo, &m, msg, sizeof msg) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(msg, "(max_config_bytes)");
    g4v_model_options_init(&mo);
    mo.max_tensor_count = 1;
    CHECK(g4v_model_load(path, &mo, &m, msg, sizeof msg) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(msg, "(max_tensor_count)");
    char tiny[8];
    CHECK(g4v_model_load("/nonexistent", NULL, &m, tiny, sizeof tiny) == G4V_ERR_IO);
    CHECK(strlen(tiny) == 7); /* truncated, terminated */
    CHECK(g4v_ctx_create(NULL, NULL, &ctx, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK(!strcmp(g4v_ctx_error(NULL), "g4v_ctx_error: ctx is NULL"));

    /* a mistyped G4V_ISA is refused with the accepted values, not run as portable; auto loads */
    const char *saved = getenv("G4V_ISA");
    char keep[64] = "";
    if (saved) snprintf(keep, sizeof keep, "%s", saved);
    setenv("G4V_ISA", "avx5l2", 1);
    m = (g4v_model *)1;
    CHECK(g4v_model_load(path, NULL, &m, msg, sizeof msg) == G4V_ERR_ARG && m == NULL);
    CHECK_CONTAINS(msg, "G4V_ISA=\"avx5l2\"");
    CHECK_CONTAINS(msg, "auto, amx, avx512, avx512-noamx, avx512-nobf16, avx2, neon-bf16, neon, "
                        "portable");
    g4v_preprocess_options po;
    g4v_preprocess_options_init(&po);
    g4v_pixels *px = (g4v_pixels *)1;
    CHECK(g4v_preprocess_file("/nonexistent.png", &po, &px, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK_CONTAINS(msg, "G4V_ISA=\"avx5l2\"");
    setenv("G4V_ISA", "auto", 1);
    REQUIRE(g4v_model_load(path, NULL, &m, msg, sizeof msg) == G4V_OK);
    setenv("G4V_ISA", "avx5l2", 1); /* set between load and ctx: the ctx refuses it too */
    CHECK(g4v_ctx_create(m, NULL, &ctx, msg, sizeof msg) == G4V_ERR_ARG && ctx == NULL);
    CHECK_CONTAINS(msg, "G4V_ISA=\"avx5l2\"");
    g4v_model_free(m);
    if (saved)
        setenv("G4V_ISA", keep, 1);
    else
        unsetenv("G4V_ISA");
}

static void test_info_plan(void) {
    g4v_model_info info;
    REQUIRE(g4v_model_get_info(model, &info, NULL, 0) == G4V_OK);
    CHECK(info.hidden_size == 64 && info.num_layers == 2 && info.dim == 96);
    CHECK(info.num_heads == 4 && info.num_kv_heads == 2 && info.head_dim == 16);
    CHECK(info.patch_size == 16 && info.pooling_kernel_size == 3);
    CHECK(info.boi_token_id == 255999 && info.image_token_id == 258880 &&
          info.eoi_token_id == 258882);
    CHECK(info.default_budget == 280 && info.param_count > 0 && info.weight_bytes > 0);
    CHECK(!strcmp(info.naming, "hf"));
    g4v_model_options mo; /* the model was loaded with the defaults */
    g4v_model_options_init(&mo);
    CHECK(info.max_pixels == mo.max_pixels && info.max_dimension == mo.max_dimension &&
          info.max_file_bytes == mo.max_file_bytes &&
          info.max_header_bytes == mo.max_header_bytes &&
          info.max_config_bytes == mo.max_config_bytes &&
          info.max_tensor_count == mo.max_tensor_count);
    int tw, th, n;
    /* 150x100 at 280: factor sqrt(645120/15000) = 6.558 -> 983.7 x 655.8 -> 960 x 624 */
    CHECK(g4v_model_plan(model, 150, 100, 280, &tw, &th, &n, NULL, 0) == G4V_OK);
    CHECK(tw == 960 && th == 624 && n == 20 * 13);
    CHECK(g4v_model_plan(model, 150, 100, 0, NULL, NULL, &n, NULL, 0) == G4V_OK && n == 260);
    CHECK(g4v_model_plan(model, 150, 100, 100, &tw, &th, &n, NULL, 0) == G4V_ERR_ARG);
    CHECK(g4v_model_plan(model, 0, 100, 280, &tw, &th, &n, NULL, 0) == G4V_ERR_ARG);

    /* metadata_only: the same info, fingerprint and plan as the full load, no encoding */
    char path[1024], msg[512], fa[80], fb[80];
    snprintf(path, sizeof path, "%s/tiny", dir);
    g4v_model_options_init(&mo);
    mo.metadata_only = 1;
    g4v_model *meta = NULL;
    REQUIRE(g4v_model_load(path, &mo, &meta, msg, sizeof msg) == G4V_OK);
    g4v_model_info mi;
    CHECK(g4v_model_get_info(meta, &mi, NULL, 0) == G4V_OK && mi.param_count == info.param_count &&
          mi.weight_bytes == info.weight_bytes && !strcmp(mi.variant, info.variant) &&
          !strcmp(mi.kernels, info.kernels) && mi.num_layers == info.num_layers);
    CHECK(g4v_model_fingerprint(model, fa, sizeof fa, NULL, 0) == G4V_OK &&
          g4v_model_fingerprint(meta, fb, sizeof fb, NULL, 0) == G4V_OK && !strcmp(fa, fb));
    CHECK(g4v_model_plan(meta, 150, 100, 280, &tw, &th, &n, NULL, 0) == G4V_OK && n == 260);
    g4v_ctx *mc = (g4v_ctx *)1;
    CHECK(g4v_ctx_create(meta, NULL, &mc, msg, sizeof msg) == G4V_ERR_ARG && mc == NULL);
    CHECK_CONTAINS(msg, "metadata_only");
    g4v_model_free(meta);
    mo.metadata_only = 2;
    CHECK(g4v_model_load(path, &mo, &meta, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK_CONTAINS(msg, "metadata_only");
}

/* The limits set at load are in force and reported by g4v_model_get_info: max_file_bytes refuses
 * a larger file or buffer before decoding it. */
static void test_file_limit(const char *png, const char *bytes, size_t nb) {
    char msg[512], mdir[1024];
    snprintf(mdir, sizeof mdir, "%s/tiny", dir);
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.max_file_bytes = nb - 1;
    g4v_model *m;
    g4v_ctx *c;
    mo.max_pixels = 1234567;
    mo.max_tensor_count = 0; /* 0: the default */
    REQUIRE(g4v_model_load(mdir, &mo, &m, msg, sizeof msg) == G4V_OK);
    g4v_model_info info;
    REQUIRE(g4v_model_get_info(m, &info, NULL, 0) == G4V_OK);
    CHECK(info.max_file_bytes == nb - 1 && info.max_pixels == 1234567 &&
          info.max_tensor_count == 1000000 && info.max_dimension == 65500);
    REQUIRE(g4v_ctx_create(m, NULL, &c, msg, sizeof msg) == G4V_OK);
    g4v_result r;
    CHECK(g4v_encode_file(c, png, NULL, &r) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(g4v_ctx_error(c), "(max_file_bytes)");
    CHECK(g4v_encode_memory(c, bytes, nb, NULL, &r) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(g4v_ctx_error(c), "(max_file_bytes)");
    CHECK(g4v_encode_memory(c, bytes, nb - 1, NULL, &r) != G4V_ERR_LIMIT); /* admitted */
    g4v_ctx_free(c);
    g4v_model_free(m);
}

static void test_entry_points_agree(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/img0.png", dir);
    g4v_result r;
    REQUIRE(g4v_encode_file(ctx, path, NULL, &r) == G4V_OK);
    CHECK(!strcmp(g4v_ctx_error(ctx), ""));
    CHECK(r.src_width == 150 && r.src_height == 100 && r.width == 960 && r.height == 624);
    CHECK(r.grid_w == 20 && r.grid_h == 13 && r.n_tokens == 260 && r.dim == 96);
    CHECK(r.budget == 280 && r.features && !r.features_bf16 && r.seconds > 0);
    float *a = copy_out(&r);
    int finite = 1;
    for (size_t i = 0; i < (size_t)r.n_tokens * r.dim; i++) finite &= isfinite(a[i]) != 0;
    CHECK(finite);

    size_t nb;
    char *bytes = slurp(path, &nb);
    REQUIRE(bytes);
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.bf16 = 1;
    REQUIRE(g4v_encode_memory(ctx, bytes, nb, &eo, &r) == G4V_OK);
    CHECK(r.n_tokens == 260 && !memcmp(a, r.features, 260 * 96 * sizeof(float)));
    REQUIRE(r.features_bf16);
    int bf_ok = 1;
    for (size_t i = 0; i < 260 * 96; i++) {
        uint32_t u;
        memcpy(&u, &a[i], 4);
        uint16_t want = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16); /* RNE, finite */
        bf_ok &= r.features_bf16[i] == want;
    }
    CHECK(bf_ok);

    /* Decoded pixels in a padded buffer: same target size, same resize, same features. */
    g4v_image img;
    REQUIRE(g4v_image_decode(bytes, nb, NULL, &img, NULL) == G4V_OK);
    size_t stride = (size_t)img.width * 3 + 13;
    uint8_t *padded = calloc((size_t)img.height, stride);
    for (int y = 0; y < img.height; y++)
        memcpy(padded + y * stride, img.rgb + (size_t)y * img.width * 3, (size_t)img.width * 3);
    REQUIRE(g4v_encode_rgb(ctx, padded, img.width, img.height, stride, NULL, &r) == G4V_OK);
    CHECK(r.n_tokens == 260 && !memcmp(a, r.features, 260 * 96 * sizeof(float)));
    CHECK(r.features_bf16 == NULL);

    /* Already at the target size (480x336 at 70 is exactly 161,280 px: encoded in place, the
     * padded stride honoured). */
    enum { W = 480, H = 336, PAD = 5, N = 70 };
    int tw = 0, th = 0;
    CHECK(g4v_model_plan(model, W, H, 70, &tw, &th, NULL, NULL, 0) == G4V_OK && tw == W && th == H);
    uint8_t *big = calloc(H, W * 3 + PAD);
    for (size_t i = 0; i < (size_t)H * (W * 3 + PAD); i++) big[i] = (uint8_t)(i * 7);
    g4v_encode_options_init(&eo);
    eo.budget = 70;
    REQUIRE(g4v_encode_rgb(ctx, big, W, H, W * 3 + PAD, &eo, &r) == G4V_OK);
    CHECK(r.n_tokens == N && r.budget == 70 && r.width == W);
    float *b = copy_out(&r);
    uint8_t *tight = malloc((size_t)H * W * 3);
    for (int y = 0; y < H; y++) memcpy(tight + y * W * 3, big + y * (W * 3 + PAD), W * 3);
    REQUIRE(g4v_encode_rgb(ctx, tight, W, H, W * 3, &eo, &r) == G4V_OK);
    CHECK(!memcmp(b, r.features, (size_t)N * 96 * sizeof(float)));

    /* Prompt span and copy-out. */
    int32_t ids[64];
    int32_t ids100[100];
    CHECK(g4v_prompt_tokens(&r, NULL, 0) == N + 2);
    CHECK(g4v_prompt_tokens(&r, ids, 64) == N + 2); /* truncated to 64, count still N + 2 */
    CHECK(g4v_prompt_tokens(&r, ids100, 100) == N + 2);
    CHECK(ids100[0] == 255999 && ids100[1] == 258880 && ids100[N] == 258880 &&
          ids100[N + 1] == 258882 && ids[63] == 258880);
    CHECK(g4v_result_copy(&r, b, (size_t)N * 96 - 1, NULL, 0) == G4V_ERR_ARG);

    free(a);
    free(b);
    free(big);
    free(tight);
    free(padded);
    g4v_image_free(&img);
    free(bytes);
}

/* g4v_encode_rgb_batch: each image's features are bit for bit g4v_encode_rgb's (sizes that need
 * a resize, one already at its target size with a padded stride, one tiny), bf16 copies follow,
 * results point into one buffer in order, and a bad image is named by its index. */
static void test_batch(void) {
    enum { NI = 4 };
    const int w[NI] = {150, 480, 31, 200}, h[NI] = {100, 336, 7, 260};
    const size_t pad[NI] = {0, 5, 0, 3};
    g4v_rgb_image im[NI];
    float *alone[NI];
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.budget = 70;
    eo.bf16 = 1;
    g4v_result r, out[NI];
    for (int i = 0; i < NI; i++) {
        size_t stride = (size_t)w[i] * 3 + pad[i];
        uint8_t *px = malloc((size_t)h[i] * stride);
        for (size_t k = 0; k < (size_t)h[i] * stride; k++) px[k] = (uint8_t)(k * (7 + i) >> 2);
        im[i] = (g4v_rgb_image){px, w[i], h[i], stride};
        REQUIRE(g4v_encode_rgb(ctx, px, w[i], h[i], stride, &eo, &r) == G4V_OK);
        alone[i] = copy_out(&r);
    }
    REQUIRE(g4v_encode_rgb_batch(ctx, im, NI, &eo, out) == G4V_OK);
    const float *next = out[0].features;
    for (int i = 0; i < NI; i++) {
        REQUIRE(g4v_encode_rgb(ctx, im[i].rgb, w[i], h[i], im[i].stride, &eo, &r) == G4V_OK);
        CHECK(out[i].n_tokens == r.n_tokens && out[i].width == r.width && out[i].height == r.height);
        CHECK(out[i].src_width == w[i] && out[i].grid_w == r.grid_w && out[i].budget == 70);
        CHECK(out[i].features == next);
        next += (size_t)out[i].n_tokens * out[i].dim;
    }
    /* the ctx buffers were reused by the encodes above: run the batch again to compare */
    REQUIRE(g4v_encode_rgb_batch(ctx, im, NI, &eo, out) == G4V_OK);
    for (int i = 0; i < NI; i++) {
        size_t n = (size_t)out[i].n_tokens * out[i].dim;
        CHECK_MSG(!memcmp(alone[i], out[i].features, n * sizeof(float)),
                  "batch image %d differs from g4v_encode_rgb", i);
        int bf_ok = out[i].features_bf16 != NULL;
        for (size_t k = 0; bf_ok && k < n; k++) {
            uint32_t u;
            memcpy(&u, &out[i].features[k], 4);
            bf_ok &= out[i].features_bf16[k] == (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        }
        CHECK(bf_ok);
    }
    im[2].stride = 2;
    CHECK(g4v_encode_rgb_batch(ctx, im, NI, &eo, out) == G4V_ERR_ARG);
    CHECK_CONTAINS(g4v_ctx_error(ctx), "RGB buffer 2 of the batch");
    CHECK(out[0].features == NULL && out[3].n_tokens == 0);
    CHECK(g4v_encode_rgb_batch(ctx, im, 0, &eo, out) == G4V_ERR_ARG);
    CHECK(g4v_encode_rgb_batch(ctx, NULL, 2, &eo, out) == G4V_ERR_ARG);
    eo.budget = 300;
    CHECK(g4v_encode_rgb_batch(ctx, im, 1, &eo, out) == G4V_ERR_ARG);
    for (int i = 0; i < NI; i++) {
        free((void *)im[i].rgb);
        free(alone[i]);
    }
}

static void test_overrides(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/rot6.jpg", dir); /* stored 160x90, EXIF orientation 6 */
    g4v_result r;
    REQUIRE(g4v_encode_file(ctx, path, NULL, &r) == G4V_OK);
    CHECK(r.src_width == 90 && r.src_height == 160);
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.apply_exif = 0;
    REQUIRE(g4v_encode_file(ctx, path, &eo, &r) == G4V_OK);
    CHECK(r.src_width == 160 && r.src_height == 90);
    eo.budget = 140;
    REQUIRE(g4v_encode_file(ctx, path, &eo, &r) == G4V_OK);
    CHECK(r.budget == 140 && r.n_tokens <= 140 && r.n_tokens > 70);
    /* resize: torchvision's differs from Pillow's (the default) in some bytes, so in features;
     * the same size and grid */
    size_t n = (size_t)r.n_tokens * r.dim;
    float *pil = malloc(n * sizeof *pil);
    REQUIRE(pil && g4v_result_copy(&r, pil, n, NULL, 0) == G4V_OK);
    int gw = r.grid_w, gh = r.grid_h;
    eo.resize = G4V_RESIZE_TORCHVISION;
    REQUIRE(g4v_encode_file(ctx, path, &eo, &r) == G4V_OK);
    CHECK(r.grid_w == gw && r.grid_h == gh && memcmp(r.features, pil, n * sizeof *pil) != 0);
    eo.resize = G4V_RESIZE_PILLOW;
    REQUIRE(g4v_encode_file(ctx, path, &eo, &r) == G4V_OK);
    CHECK(memcmp(r.features, pil, n * sizeof *pil) == 0);
    free(pil);
}

static void test_encode_errors(void) {
    char path[1024];
    g4v_result r;
    memset(&r, 0x55, sizeof r);
    CHECK(g4v_encode_file(ctx, "/nonexistent.png", NULL, &r) == G4V_ERR_IO);
    CHECK_CONTAINS(g4v_ctx_error(ctx), "/nonexistent.png");
    CHECK(r.features == NULL && r.n_tokens == 0); /* zeroed on failure */
    static const unsigned char junk[] = "this is not an image at all";
    CHECK(g4v_encode_memory(ctx, junk, sizeof junk, NULL, &r) != G4V_OK);
    CHECK_CONTAINS(g4v_ctx_error(ctx), "memory buffer");
    snprintf(path, sizeof path, "%s/img2.png", dir);
    size_t nb;
    char *bytes = slurp(path, &nb);
    REQUIRE(bytes);
    CHECK(g4v_encode_memory(ctx, bytes, nb / 2, NULL, &r) == G4V_ERR_IMAGE); /* truncated */
    CHECK(strlen(g4v_ctx_error(ctx)) > 15);
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.budget = 100;
    CHECK(g4v_encode_memory(ctx, bytes, nb, &eo, &r) == G4V_ERR_ARG);
    CHECK_CONTAINS(g4v_ctx_error(ctx), "100");
    eo.budget = 0;
    eo.apply_exif = 7;
    CHECK(g4v_encode_memory(ctx, bytes, nb, &eo, &r) == G4V_ERR_ARG);
    eo.apply_exif = -1;
    for (int bad = -2; bad <= 2; bad += 4) { /* resize: -1, 0, 1 only */
        eo.resize = bad;
        CHECK(g4v_encode_memory(ctx, bytes, nb, &eo, &r) == G4V_ERR_ARG);
        CHECK_CONTAINS(g4v_ctx_error(ctx), "resize");
    }
    eo.resize = -1;
    uint8_t px[12] = {0};
    CHECK(g4v_encode_rgb(ctx, px, 2, 2, 5, NULL, &r) == G4V_ERR_ARG); /* stride < 3w */
    CHECK_CONTAINS(g4v_ctx_error(ctx), "stride");
    CHECK(g4v_encode_rgb(ctx, NULL, 2, 2, 6, NULL, &r) == G4V_ERR_ARG);
    CHECK(g4v_encode_rgb(ctx, px, 70000, 1, 3 * 70000, NULL, &r) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(g4v_ctx_error(ctx), "max_dimension");
    test_file_limit(path, bytes, nb);
    CHECK(g4v_encode_memory(ctx, bytes, nb, NULL, NULL) == G4V_ERR_ARG);
    /* A 1x1 image is upscaled like any other (HF does the same): at 70, 384x384, 64 tokens. */
    eo.apply_exif = -1;
    eo.budget = 70;
    CHECK(g4v_encode_rgb(ctx, px, 1, 1, 3, &eo, &r) == G4V_OK && r.n_tokens == 64);
    /* The ctx works normally after errors. */
    CHECK(g4v_encode_memory(ctx, bytes, nb, NULL, &r) == G4V_OK && r.n_tokens > 0);
    CHECK(!strcmp(g4v_ctx_error(ctx), ""));
    free(bytes);
}

/* What the front ends use of the library (g4v.h "What programs around libg4v share with it"). */
static void test_shared_helpers(void) {
    /* SHA-256: FIPS 180-2 appendix B.1 and B.2, the second fed in uneven pieces */
    static const uint8_t abc[G4V_HASH_BYTES] = {
        0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
        0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
    static const uint8_t two_blocks[G4V_HASH_BYTES] = {
        0x24, 0x8d, 0x6a, 0x61, 0xd2, 0x06, 0x38, 0xb8, 0xe5, 0xc0, 0x26, 0x93, 0x0c, 0x3e, 0x60, 0x39,
        0xa3, 0x3c, 0xe4, 0x59, 0x64, 0xff, 0x21, 0x67, 0xf6, 0xec, 0xed, 0xd4, 0x19, 0xdb, 0x06, 0xc1};
    const char *msg2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    uint8_t d[G4V_HASH_BYTES];
    g4v_hash_state s;
    g4v_hash_init(&s);
    g4v_hash_update(&s, "abc", 3);
    g4v_hash_final(&s, d);
    CHECK(!memcmp(d, abc, sizeof d));
    g4v_hash_init(&s);
    for (size_t at = 0, step = 1; at < strlen(msg2); at += step, step = step * 2 + 1)
        g4v_hash_update(&s, msg2 + at, at + step <= strlen(msg2) ? step : strlen(msg2) - at);
    g4v_hash_final(&s, d);
    CHECK(!memcmp(d, two_blocks, sizeof d));

    /* the JSON lock is the library's: not held after a load (which parses config.json) */
    g4v_json_lock();
    g4v_json_unlock();

    char path[1024], msg[512];
    snprintf(path, sizeof path, "%s/api_info.gguf", dir);
    REQUIRE(small_gguf_write(path) == 0);
    g4v_gguf_info info;
    memset(&info, 0x5a, sizeof info);
    CHECK_MSG(g4v_gguf_read_info(path, &info, msg, sizeof msg) == G4V_OK, "%s", msg);
    CHECK(!strcmp(info.architecture, "clip") && !strcmp(info.type, "mmproj"));
    CHECK(!strcmp(info.projector_type, "gemma4v"));
    CHECK(info.tensors == 3 && info.vision_tensors == 2 && info.has_chat_template == 1);
    CHECK(g4v_gguf_read_info(NULL, &info, msg, sizeof msg) == G4V_ERR_ARG && msg[0]);
    CHECK(g4v_gguf_read_info_sized(path, &info, 0, msg, sizeof msg) == G4V_ERR_ARG && msg[0]);
    snprintf(path, sizeof path, "%s/no-such.gguf", dir);
    CHECK(g4v_gguf_read_info(path, &info, msg, sizeof msg) == G4V_ERR_IO && msg[0]);
    snprintf(path, sizeof path, "%s/tiny/config.json", dir); /* not a GGUF */
    g4v_status st = g4v_gguf_read_info(path, &info, msg, sizeof msg);
    CHECK_MSG(st == G4V_ERR_MODEL && msg[0], "%s: %s", g4v_status_name(st), msg);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_api FIXTURES\n");
        return 2;
    }
    dir = argv[1];
    char path[1024], msg[512];
    snprintf(path, sizeof path, "%s/tiny", dir);
    test_basics();
    test_budgets();
    test_math_mode();
    test_load_errors();
    if (g4v_model_load(path, NULL, &model, msg, sizeof msg)) {
        fprintf(stderr, "load %s: %s\n", path, msg);
        return 1;
    }
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = 2;
    if (g4v_ctx_create(model, &co, &ctx, msg, sizeof msg)) {
        fprintf(stderr, "ctx: %s\n", msg);
        return 1;
    }
    test_info_plan();
    test_entry_points_agree();
    test_batch();
    test_overrides();
    test_encode_errors();
    test_shared_helpers();
    g4v_ctx_free(ctx);
    g4v_model_free(model);
    return test_summary("test_api");
}
