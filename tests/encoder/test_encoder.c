/* test_encoder.c - g4v_encoder's contract on an in-memory checkpoint (no files, no io layer):
 * argument and shape errors name the problem, results are bit-identical for 1/2/3 threads and
 * across workspace reuse (a large image, a small one, the large one again), and allocation
 * failures (when built with G4V_FAULT_INJECTION) are reported, never crash.
 * Numerical correctness is checked against the float64 reference by test_encoder_ref.py. */
#include "base/alloc.h"
#include "base/pool.h"
#include "encoder/encoder.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>

enum { D = 64, I = 128, NL = 2, H = 4, HKV = 2, HD = 16, P = 16, T = 32, PD = 768 };

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float frand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static g4v_tensor make(int ndim, int64_t s0, int64_t s1, int64_t s2, float scale, float base) {
    g4v_tensor t = {G4V_DT_F32, ndim, {s0, s1, s2, 0}, NULL, 0, 0, NULL};
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)t.shape[i];
    float *x = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x[i] = base + scale * frand();
    t.data = x;
    t.nbytes = n * sizeof(float);
    return t;
}

/* qk0: the base of layer 0's q/k norm weights (0.5: sharpness ~1; 2.0: ~16, a sharp layer that
 * takes FAST's f32 path, docs/NUMERICS.md §6.5, beside the ordinary layer 1) */
static g4v_checkpoint *fake_checkpoint(float qk0) {
    g4v_checkpoint *ck = calloc(1, sizeof *ck);
    g4v_vision_config *c = &ck->cfg;
    snprintf(c->variant, sizeof c->variant, "custom");
    c->hidden_size = D, c->intermediate_size = I, c->num_layers = NL, c->num_heads = H;
    c->num_kv_heads = HKV, c->head_dim = HD, c->patch_size = 16, c->pooling_kernel_size = 3;
    c->position_embedding_size = P, c->default_output_length = 280, c->text_hidden_size = T;
    c->rope_theta = 100.0, c->rms_norm_eps = 1e-6, c->use_clipped_linears = 1;
    c->standardize = 1;
    ck->input_proj = make(2, D, PD, 0, 0.06f, 0);
    ck->position_table = make(3, 2, P, D, 0.5f, 0);
    ck->embed_proj = make(2, T, D, 0, 0.2f, 0);
    ck->std_bias = make(1, D, 0, 0, 0.1f, 0);
    ck->std_scale = make(1, D, 0, 0, 0.1f, 1.0f);
    ck->layers = calloc(NL, sizeof *ck->layers);
    const int64_t shp[G4V_LIN_COUNT][2] = {{H * HD, D}, {HKV * HD, D}, {HKV * HD, D}, {D, H * HD},
                                           {I, D},      {I, D},        {D, I}};
    for (int l = 0; l < NL; l++) {
        g4v_layer_weights *w = &ck->layers[l];
        for (int j = 0; j < G4V_LIN_COUNT; j++) {
            w->lin[j] = make(2, shp[j][0], shp[j][1], 0, 1.7f / sqrtf((float)shp[j][1]), 0);
            g4v_clip cl = {-2.5f, 2.5f, -2.0f, 2.0f};
            w->clip[j] = cl;
        }
        w->input_layernorm = make(1, D, 0, 0, 0.1f, 1.0f);
        w->post_attention_layernorm = make(1, D, 0, 0, 0.1f, 1.0f);
        w->pre_feedforward_layernorm = make(1, D, 0, 0, 0.1f, 1.0f);
        w->post_feedforward_layernorm = make(1, D, 0, 0, 0.1f, 1.0f);
        w->q_norm = make(1, HD, 0, 0, 0.1f, l == 0 ? qk0 : 0.5f);
        w->k_norm = make(1, HD, 0, 0, 0.1f, l == 0 ? qk0 : 0.5f);
    }
    return ck;
}

static void free_checkpoint(g4v_checkpoint *ck) {
    free((void *)ck->input_proj.data), free((void *)ck->position_table.data);
    free((void *)ck->embed_proj.data), free((void *)ck->std_bias.data);
    free((void *)ck->std_scale.data);
    for (int l = 0; l < NL; l++) {
        g4v_layer_weights *w = &ck->layers[l];
        for (int j = 0; j < G4V_LIN_COUNT; j++)
            free((void *)w->lin[j].data);
        free((void *)w->input_layernorm.data), free((void *)w->post_attention_layernorm.data);
        free((void *)w->pre_feedforward_layernorm.data);
        free((void *)w->post_feedforward_layernorm.data);
        free((void *)w->q_norm.data), free((void *)w->k_norm.data);
    }
    free(ck->layers);
    free(ck);
}

static uint8_t *image(int w, int h, unsigned seed) {
    uint8_t *p = malloc((size_t)w * h * 3);
    for (size_t i = 0; i < (size_t)w * h * 3; i++)
        p[i] = (uint8_t)((i * 2654435761u + seed) >> 13);
    return p;
}

static void test_errors(g4v_checkpoint *ck) {
    g4v_err err;
    g4v_encoder *enc = NULL;
    REQUIRE(g4v_encoder_create(ck, NULL, &enc, &err) == G4V_OK);
    g4v_workspace *ws = g4v_workspace_create();
    uint8_t *img = image(96, 96, 1);
    float out[4 * T];
    CHECK(g4v_encoder_run(enc, ws, NULL, img, 50, 48, 150, out, &err) == G4V_ERR_ARG);
    CHECK_CONTAINS(err.msg, "multiples of 48");
    CHECK(g4v_encoder_run(enc, ws, NULL, img, 48, 0, 144, out, &err) == G4V_ERR_ARG);
    CHECK(g4v_encoder_run(enc, ws, NULL, img, 48, 48, 100, out, &err) == G4V_ERR_ARG);
    CHECK_CONTAINS(err.msg, "stride");
    CHECK(g4v_encoder_run(enc, ws, NULL, NULL, 48, 48, 144, out, &err) == G4V_ERR_ARG);
    /* P = 16 rows per axis: a 17-patch-wide grid (272 px is not a multiple of 48; use 288 = 18) */
    uint8_t *wide = image(288, 48, 2);
    CHECK(g4v_encoder_run(enc, ws, NULL, wide, 288, 48, 288 * 3, out, &err) == G4V_ERR_UNSUPPORTED);
    CHECK_CONTAINS(err.msg, "position table");
    free(wide);
    free(img);
    g4v_workspace_free(ws);
    g4v_encoder_free(enc);

    /* a wrong shape is named */
    g4v_tensor saved = ck->layers[1].lin[G4V_LIN_UP];
    ck->layers[1].lin[G4V_LIN_UP].shape[0] = I + 1;
    CHECK(g4v_encoder_create(ck, NULL, &enc, &err) == G4V_ERR_MODEL && enc == NULL);
    CHECK_CONTAINS(err.msg, "layer 1 up_proj");
    CHECK_CONTAINS(err.msg, "expected shape [128, 64]");
    ck->layers[1].lin[G4V_LIN_UP] = saved;
    ck->cfg.head_dim = 18;
    CHECK(g4v_encoder_create(ck, NULL, &enc, &err) != G4V_OK);
    ck->cfg.head_dim = HD;
    ck->cfg.num_kv_heads = 3;
    CHECK(g4v_encoder_create(ck, NULL, &enc, &err) == G4V_ERR_MODEL);
    CHECK_CONTAINS(err.msg, "num_key_value_heads");
    ck->cfg.num_kv_heads = HKV;
    /* clip bounds that are NaN or unordered are refused by the loader (tests/io), not here */
}

static void test_determinism(g4v_checkpoint *ck, g4v_math_mode mode) {
    g4v_err err;
    g4v_encoder *enc = NULL;
    g4v_encoder_opts o = {.mode = mode};
    REQUIRE(g4v_encoder_create(ck, &o, &enc, &err) == G4V_OK);
    g4v_pool *p2 = NULL, *p3 = NULL;
    REQUIRE(g4v_pool_create(2, &p2, &err) == G4V_OK && g4v_pool_create(3, &p3, &err) == G4V_OK);
    g4v_workspace *ws = g4v_workspace_create(), *ws2 = g4v_workspace_create();
    enum { W = 144, HT = 96, N = (W / 48) * (HT / 48) };
    uint8_t *big = image(W, HT, 7), *small = image(48, 48, 9);
    float a[N * T], b[N * T], c[N * T], s1[T], s2[T];
    CHECK(g4v_encoder_run(enc, ws, NULL, big, W, HT, W * 3, a, &err) == G4V_OK);
    CHECK(g4v_encoder_run(enc, ws, p2, small, 48, 48, 144, s1, &err) == G4V_OK);
    CHECK(g4v_encoder_run(enc, ws, p3, big, W, HT, W * 3, b, &err) == G4V_OK);
    CHECK(g4v_encoder_run(enc, ws2, p2, big, W, HT, W * 3, c, &err) == G4V_OK);
    CHECK(g4v_encoder_run(enc, ws2, NULL, small, 48, 48, 144, s2, &err) == G4V_OK);
    CHECK_MSG(!memcmp(a, b, sizeof a) && !memcmp(a, c, sizeof a),
              "mode %d: output depends on thread count or workspace history", (int)mode);
    CHECK(!memcmp(s1, s2, sizeof s1));
    int finite = 1;
    for (int i = 0; i < N * T; i++)
        finite &= isfinite(a[i]);
    CHECK(finite);
    /* any chunking of the rows gives the same bits (N * 9 = 54 patches: chunks of 1, 7, 53) */
    for (int ci = 0; ci < 3; ci++) {
        const int rows[] = {1, 7, 53};
        g4v_encoder_opts oc = {.mode = mode, .chunk_rows = rows[ci]};
        g4v_encoder *ec = NULL;
        REQUIRE(g4v_encoder_create(ck, &oc, &ec, &err) == G4V_OK);
        CHECK(g4v_encoder_run(ec, ws2, ci ? p2 : NULL, big, W, HT, W * 3, c, &err) == G4V_OK);
        CHECK_MSG(!memcmp(a, c, sizeof a), "mode %d: chunks of %d rows change the output",
                  (int)mode, rows[ci]);
        g4v_encoder_free(ec);
    }
    /* a padded row stride reads the same pixels */
    uint8_t *padded = malloc((size_t)HT * (W * 3 + 5));
    for (int y = 0; y < HT; y++)
        memcpy(padded + (size_t)y * (W * 3 + 5), big + (size_t)y * W * 3, W * 3);
    CHECK(g4v_encoder_run(enc, ws, p2, padded, W, HT, W * 3 + 5, c, &err) == G4V_OK);
    CHECK(!memcmp(a, c, sizeof a));
    free(padded), free(big), free(small);
    g4v_workspace_free(ws), g4v_workspace_free(ws2);
    g4v_pool_destroy(p2), g4v_pool_destroy(p3);
    g4v_encoder_free(enc);
}

/* A batch of images of different sizes gives each image's soft tokens bit for bit as encoding it
 * alone: with chunks that straddle images (7 rows), passes split by batch_rows (100 rows: images
 * 2+3 share a pass, the 144x96 one runs alone) or not, on 1 and 2 threads. An image that attended
 * to another image's patches, or a position counted across images, changes the bits. */
static void test_batch(g4v_checkpoint *ck, g4v_math_mode mode) {
    g4v_err err;
    g4v_pool *p2 = NULL;
    REQUIRE(g4v_pool_create(2, &p2, &err) == G4V_OK);
    g4v_workspace *ws = g4v_workspace_create();
    const int w[] = {144, 48, 96, 48}, h[] = {96, 48, 48, 144};
    enum { NI = 4, NTOK = 6 + 1 + 2 + 3 };
    g4v_encoder_image im[NI];
    float alone[NTOK * T], batched[NTOK * T];
    g4v_encoder *single = NULL;
    g4v_encoder_opts o = {.mode = mode};
    REQUIRE(g4v_encoder_create(ck, &o, &single, &err) == G4V_OK);
    float *dst = alone;
    for (int i = 0; i < NI; i++) {
        im[i] = (g4v_encoder_image){image(w[i], h[i], 20 + i), w[i], h[i], (size_t)w[i] * 3};
        CHECK(g4v_encoder_run(single, ws, NULL, im[i].rgb, w[i], h[i], im[i].stride, dst, &err) ==
              G4V_OK);
        dst += (w[i] / 48) * (h[i] / 48) * T;
    }
    const struct { int chunk; size_t batch; } cfgs[] = {{0, 0}, {7, 0}, {7, 100}, {1000, 100}};
    for (int ci = 0; ci < 4; ci++) {
        g4v_encoder_opts ob = {.mode = mode, .chunk_rows = cfgs[ci].chunk,
                               .batch_rows = cfgs[ci].batch};
        g4v_encoder *eb = NULL;
        REQUIRE(g4v_encoder_create(ck, &ob, &eb, &err) == G4V_OK);
        memset(batched, 0, sizeof batched);
        CHECK(g4v_encoder_run_batch(eb, ws, ci & 1 ? p2 : NULL, im, NI, batched, &err) == G4V_OK);
        CHECK_MSG(!memcmp(alone, batched, sizeof alone),
                  "mode %d, chunk %d, batch_rows %zu: a batch differs from its images alone",
                  (int)mode, cfgs[ci].chunk, cfgs[ci].batch);
        g4v_encoder_free(eb);
    }
    /* errors name the image */
    im[2].stride = 10;
    CHECK(g4v_encoder_run_batch(single, ws, NULL, im, NI, batched, &err) == G4V_ERR_ARG);
    CHECK_CONTAINS(err.msg, "image 2 of the batch");
    CHECK(g4v_encoder_run_batch(single, ws, NULL, im, 0, batched, &err) == G4V_ERR_ARG);
    for (int i = 0; i < NI; i++)
        free((void *)im[i].rgb);
    g4v_encoder_free(single);
    g4v_workspace_free(ws);
    g4v_pool_destroy(p2);
}

static void test_alloc_failures(g4v_checkpoint *ck) {
#ifdef G4V_FAULT_INJECTION
    uint8_t *img = image(48, 96, 3);
    float out[2 * T];
    int failures = 0;
    for (long n = 0; n < 200; n++) {
        g4v_err err;
        g4v_encoder *enc = NULL;
        g4v_workspace *ws = NULL;
        g4v_alloc_fail_after(n);
        int st = g4v_encoder_create(ck, NULL, &enc, &err);
        if (st == G4V_OK) {
            ws = g4v_workspace_create();
            st = ws ? g4v_encoder_run(enc, ws, NULL, img, 48, 96, 144, out, &err) : G4V_ERR_NOMEM;
        }
        g4v_alloc_fail_after(-1);
        g4v_workspace_free(ws);
        g4v_encoder_free(enc);
        if (st == G4V_OK) break;
        CHECK_MSG(st == G4V_ERR_NOMEM, "allocation %ld failed with status %d", n, st);
        failures++;
    }
    CHECK(failures > 3);
    free(img);
#else
    (void)ck;
#endif
}

/* The sharpness rule of docs/NUMERICS.md §6.5 on known weights. */
static void test_sharpness(void) {
    float a[16], b[16];
    for (int i = 0; i < 16; i++)
        a[i] = 0.5f, b[i] = 0.5f;
    CHECK(fabs(g4v_attention_sharpness(a, b, 16) - 1.0) < 1e-12); /* sqrt(16 * 0.0625) */
    CHECK(!g4v_attention_is_sharp(a, b, 16));
    a[3] = 8.0f; /* one dimension: sqrt(15 * 0.0625 + 16) */
    CHECK(fabs(g4v_attention_sharpness(a, b, 16) - sqrt(15 * 0.0625 + 16)) < 1e-12);
    CHECK(g4v_attention_is_sharp(a, b, 16));
    a[3] = 0.5f;
    for (int i = 0; i < 16; i++) /* exactly at the threshold: not sharp */
        a[i] = (float)(G4V_SHARP_LOGIT_STD / 4.0), b[i] = 1.0f; /* sqrt(16) * 0.5 = 2.0 */
    CHECK(!g4v_attention_is_sharp(a, b, 16));
}

int main(void) {
    test_sharpness();
    /* a model whose layer 0 is sharp and layer 1 is not: FAST runs both paths in one pass, and
     * stays bit-identical across threads, workspace reuse and batching */
    g4v_checkpoint *sharp = fake_checkpoint(2.0f);
    test_determinism(sharp, G4V_MATH_FAST);
    test_batch(sharp, G4V_MATH_FAST);
    free_checkpoint(sharp);
    g4v_checkpoint *ck = fake_checkpoint(0.5f);
    test_errors(ck);
    test_determinism(ck, G4V_MATH_FAST);
    test_determinism(ck, G4V_MATH_PRECISE);
    test_batch(ck, G4V_MATH_FAST);
    test_batch(ck, G4V_MATH_PRECISE);
    test_alloc_failures(ck);
    free_checkpoint(ck);
    return test_summary("test_encoder");
}
