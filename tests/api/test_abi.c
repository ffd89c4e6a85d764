/* test_abi.c - the public structs can grow without breaking callers (g4v.h "Versions").
 *
 * A program built against an older g4v.h has smaller option / info / stats structs than this
 * library. Here such a caller is simulated with truncated copies of the layouts, each followed by
 * guard bytes: the library must write nothing past the caller's struct, and fields the older
 * caller does not have must take their defaults. A newer caller (struct larger than the
 * library's) must have its unknown tail zeroed, not left as garbage, and its extra options
 * ignored. Options never initialized (struct_size 0) are refused with a message naming the init
 * call. The frozen structs keep their layout. Also: every fallible call without a ctx reports
 * why in its errbuf.
 *
 * usage: test_abi FIXTURES   (tests/api/make_fixtures.py's directory)
 */
#include "g4v.h"
#include "small_gguf.h"
#include "test_util.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 0xA5
#define GUARD_BYTES 64

static int guard_intact(const unsigned char *g) {
    for (int i = 0; i < GUARD_BYTES; i++)
        if (g[i] != GUARD) return 0;
    return 1;
}

/* An older g4v_model_options: the first three fields only. */
typedef struct old_model_options {
    size_t struct_size;
    int budget, apply_exif, precise;
} old_model_options;

/* An older g4v_model_info: variant and hidden_size only. */
typedef struct old_model_info {
    char variant[32];
    int hidden_size;
} old_model_info;

/* An older g4v_encode_options: budget only. */
typedef struct old_encode_options {
    size_t struct_size;
    int budget;
} old_encode_options;

/* An older g4v_cache_stats: hits and misses. */
typedef struct old_cache_stats {
    uint64_t hits, misses;
} old_cache_stats;

typedef struct old_video_options {
    size_t struct_size;
    int budget;
} old_video_options;


/* g4v_model_options and g4v_model_info as g4v.h 0.2.0 had them, before the math field: the mode
 * in two ints, `precise` and `int8`, whose slots the new header keeps as legacy_precise and
 * legacy_int8 (ABI only). A program built against that header must load the same model and read
 * the same values as it always did. */
typedef struct v020_model_options {
    size_t struct_size;
    int budget, apply_exif, precise;
    uint64_t max_pixels;
    int max_dimension;
    uint64_t max_header_bytes, max_file_bytes, max_config_bytes, max_tensor_count;
    uint64_t max_video_frames;
    double max_video_seconds;
    int read_weights, resize, metadata_only, int8;
} v020_model_options;

typedef struct v020_model_info {
    char variant[32];
    int hidden_size, intermediate_size, num_layers, num_heads, num_kv_heads, head_dim;
    int patch_size, pooling_kernel_size, position_embedding_size;
    int dim, default_budget, config_output_length;
    int use_clipped_linears, standardize, precise, apply_exif;
    int32_t image_token_id, boi_token_id, eoi_token_id, video_token_id;
    int64_t param_count;
    uint64_t weight_bytes;
    char naming[8], source[512];
    uint64_t max_pixels;
    int max_dimension;
    uint64_t max_file_bytes, max_header_bytes, max_config_bytes, max_tensor_count;
    char kind[16];
    uint64_t max_video_frames;
    double max_video_seconds;
    char kernels[512];
    int resize;
    double rope_theta, rms_norm_eps, layer_norm_eps;
    int numerics_version, n_dtypes;
    g4v_dtype_count dtypes[4];
    int int8;
} v020_model_info;

_Static_assert(offsetof(v020_model_options, precise) ==
                   offsetof(g4v_model_options, legacy_precise) &&
               offsetof(v020_model_options, int8) == offsetof(g4v_model_options, legacy_int8) &&
               sizeof(v020_model_options) <= offsetof(g4v_model_options, math) + sizeof(int),
               "0.2.0's math slots stay where they were; math comes after them");
_Static_assert(offsetof(v020_model_info, precise) == offsetof(g4v_model_info, legacy_precise) &&
               offsetof(v020_model_info, int8) == offsetof(g4v_model_info, legacy_int8) &&
               offsetof(v020_model_info, resize) == offsetof(g4v_model_info, resize) &&
               sizeof(v020_model_info) <= offsetof(g4v_model_info, math) + sizeof(int),
               "0.2.0's g4v_model_info is a prefix of today's");

static const char *dir;

static void test_init_guards(void) {
    struct {
        old_model_options o;
        unsigned char guard[GUARD_BYTES];
    } w;
    memset(&w, GUARD, sizeof w);
    g4v_model_options_init_sized((g4v_model_options *)&w.o, sizeof w.o);
    CHECK(guard_intact(w.guard));
    CHECK(w.o.struct_size == sizeof w.o);
    CHECK(w.o.budget == 0 && w.o.apply_exif == 1 && w.o.precise == 0);

    struct {
        old_encode_options o;
        unsigned char guard[GUARD_BYTES];
    } e;
    memset(&e, GUARD, sizeof e);
    g4v_encode_options_init_sized((g4v_encode_options *)&e.o, sizeof e.o);
    CHECK(guard_intact(e.guard) && e.o.struct_size == sizeof e.o && e.o.budget == 0);

    struct {
        old_video_options o;
        unsigned char guard[GUARD_BYTES];
    } v;
    memset(&v, GUARD, sizeof v);
    g4v_video_options_init_sized((g4v_video_options *)&v.o, sizeof v.o);
    CHECK(guard_intact(v.guard) && v.o.struct_size == sizeof v.o && v.o.budget == 0);

    struct {
        size_t struct_size; /* a g4v_ctx_options from before threads existed */
        unsigned char guard[GUARD_BYTES];
    } c;
    memset(&c, GUARD, sizeof c);
    g4v_ctx_options_init_sized((g4v_ctx_options *)&c, sizeof c.struct_size);
    CHECK(guard_intact(c.guard) && c.struct_size == sizeof c.struct_size);

    struct {
        size_t struct_size;
        unsigned char guard[GUARD_BYTES];
    } k;
    memset(&k, GUARD, sizeof k);
    g4v_cache_options_init_sized((g4v_cache_options *)&k, sizeof k.struct_size);
    CHECK(guard_intact(k.guard) && k.struct_size == sizeof k.struct_size);

    /* A newer caller: its unknown tail is zeroed, its guard untouched. */
    struct {
        g4v_model_options o;
        int future[4];
        unsigned char guard[GUARD_BYTES];
    } n;
    memset(&n, GUARD, sizeof n);
    size_t newer = offsetof(__typeof__(n), guard);
    g4v_model_options_init_sized(&n.o, newer);
    CHECK(guard_intact(n.guard) && n.o.struct_size == newer && n.o.budget == 0);
    CHECK(n.future[0] == 0 && n.future[1] == 0 && n.future[2] == 0 && n.future[3] == 0);
}

static void test_old_caller(void) {
    char path[1024], msg[512];
    snprintf(path, sizeof path, "%s/tiny", dir);

    /* Older options: budget set, every later field (max_*, read_weights, resize) missing. */
    old_model_options oo;
    g4v_model_options_init_sized((g4v_model_options *)&oo, sizeof oo);
    oo.budget = 70;
    g4v_model *m = NULL;
    REQUIRE(g4v_model_load(path, (const g4v_model_options *)&oo, &m, msg, sizeof msg) == G4V_OK);
    g4v_model_info info;
    REQUIRE(g4v_model_get_info(m, &info, msg, sizeof msg) == G4V_OK);
    g4v_model_options d;
    g4v_model_options_init(&d);
    CHECK(info.default_budget == 70 && info.apply_exif == 1 && info.math == G4V_MATH_FAST);
    CHECK(info.max_pixels == d.max_pixels && info.max_dimension == d.max_dimension);
    CHECK(info.max_file_bytes == d.max_file_bytes && info.max_video_frames == d.max_video_frames);
    CHECK(info.max_video_seconds == d.max_video_seconds && info.resize == G4V_RESIZE_PILLOW);

    /* Older info: nothing written past it. */
    struct {
        old_model_info i;
        unsigned char guard[GUARD_BYTES];
    } w;
    memset(&w, GUARD, sizeof w);
    CHECK(g4v_model_get_info_sized(m, (g4v_model_info *)&w.i, sizeof w.i, msg, sizeof msg) ==
          G4V_OK);
    CHECK(guard_intact(w.guard));
    CHECK(!strcmp(w.i.variant, info.variant) && w.i.hidden_size == info.hidden_size);

    /* Newer info: the tail past the library's struct is zeroed, nothing past the caller's. */
    struct {
        g4v_model_info i;
        unsigned char future[48];
        unsigned char guard[GUARD_BYTES];
    } n;
    memset(&n, GUARD, sizeof n);
    CHECK(g4v_model_get_info_sized(m, &n.i, offsetof(__typeof__(n), guard), msg, sizeof msg) ==
          G4V_OK);
    CHECK(guard_intact(n.guard) && n.i.hidden_size == info.hidden_size);
    int zero = 1;
    for (size_t i = 0; i < sizeof n.future; i++) zero &= n.future[i] == 0;
    CHECK(zero);

    /* Older ctx options (no threads field) and encode options (budget only). */
    struct {
        size_t struct_size;
    } co;
    g4v_ctx_options_init_sized((g4v_ctx_options *)&co, sizeof co);
    g4v_ctx *ctx = NULL;
    CHECK(g4v_ctx_create(m, (const g4v_ctx_options *)&co, &ctx, msg, sizeof msg) == G4V_OK);
    if (ctx) {
        old_encode_options eo;
        g4v_encode_options_init_sized((g4v_encode_options *)&eo, sizeof eo);
        eo.budget = 140;
        static uint8_t rgb[96 * 64 * 3];
        for (size_t i = 0; i < sizeof rgb; i++) rgb[i] = (uint8_t)(i * 7);
        g4v_result r;
        CHECK_MSG(g4v_encode_rgb(ctx, rgb, 96, 64, 96 * 3, (const g4v_encode_options *)&eo, &r) ==
                      G4V_OK,
                  "%s", g4v_ctx_error(ctx));
        CHECK(r.budget == 140 && r.features_bf16 == NULL);
        /* Uninitialized options are refused, naming the init call. */
        g4v_encode_options bad;
        memset(&bad, 0, sizeof bad);
        CHECK(g4v_encode_rgb(ctx, rgb, 96, 64, 96 * 3, &bad, &r) == G4V_ERR_ARG);
        CHECK_MSG(strstr(g4v_ctx_error(ctx), "g4v_encode_options_init") != NULL, "%s",
                  g4v_ctx_error(ctx));
        g4v_ctx_free(ctx);
    }
    g4v_model_free(m);

    g4v_model_options bad;
    memset(&bad, 0, sizeof bad);
    CHECK(g4v_model_load(path, &bad, &m, msg, sizeof msg) == G4V_ERR_ARG && m == NULL);
    CHECK_MSG(strstr(msg, "g4v_model_options_init") != NULL, "%s", msg);
}

/* A caller built against 0.2.0's header chooses the math mode with precise / int8 and reads it
 * back from info.precise / info.int8: the same model (its fingerprint is the one math gives) and
 * the same values, and the pair it could always write (precise and int8) is refused as before. */
static void test_v020_math(void) {
    static const struct {
        int precise, int8;
        g4v_math_mode math;
    } cases[] = {{0, 0, G4V_MATH_FAST},
                 {1, 0, G4V_MATH_PRECISE},
                 {0, 1, G4V_MATH_INT8},
                 {0, 2, G4V_MATH_INT8_BLOCKS}};
    char path[1024], msg[512], want[G4V_FINGERPRINT_HEX], got[G4V_FINGERPRINT_HEX];
    snprintf(path, sizeof path, "%s/tiny", dir);
    for (int c = 0; c < 4; c++) {
        struct {
            v020_model_options o;
            unsigned char guard[GUARD_BYTES];
        } w;
        memset(&w, GUARD, sizeof w);
        g4v_model_options_init_sized((g4v_model_options *)&w.o, sizeof w.o);
        CHECK(guard_intact(w.guard) && w.o.precise == 0 && w.o.int8 == 0);
        w.o.precise = cases[c].precise;
        w.o.int8 = cases[c].int8;
        g4v_model *old = NULL, *now = NULL;
        REQUIRE(g4v_model_load(path, (const g4v_model_options *)&w.o, &old, msg, sizeof msg) ==
                G4V_OK);
        g4v_model_options mo;
        g4v_model_options_init(&mo);
        mo.math = cases[c].math;
        REQUIRE(g4v_model_load(path, &mo, &now, msg, sizeof msg) == G4V_OK);
        CHECK(g4v_model_fingerprint(now, want, sizeof want, NULL, 0) == G4V_OK);
        CHECK(g4v_model_fingerprint(old, got, sizeof got, NULL, 0) == G4V_OK);
        CHECK_MSG(!strcmp(got, want), "precise %d int8 %d", cases[c].precise, cases[c].int8);
        for (int k = 0; k < 2; k++) { /* either model, read through the old layout */
            struct {
                v020_model_info i;
                unsigned char guard[GUARD_BYTES];
            } r;
            memset(&r, GUARD, sizeof r);
            CHECK(g4v_model_get_info_sized(k ? now : old, (g4v_model_info *)&r.i, sizeof r.i, msg,
                                           sizeof msg) == G4V_OK);
            CHECK(guard_intact(r.guard));
            CHECK_MSG(r.i.precise == cases[c].precise && r.i.int8 == cases[c].int8,
                      "case %d: read precise %d int8 %d", c, r.i.precise, r.i.int8);
            CHECK(r.i.resize == G4V_RESIZE_PILLOW && r.i.n_dtypes > 0);
        }
        g4v_model_info info;
        CHECK(g4v_model_get_info(old, &info, NULL, 0) == G4V_OK && info.math == cases[c].math);
        g4v_model_free(old);
        g4v_model_free(now);
    }
    v020_model_options both;
    g4v_model_options_init_sized((g4v_model_options *)&both, sizeof both);
    both.precise = 1;
    both.int8 = 1;
    g4v_model *m = (g4v_model *)1;
    CHECK(g4v_model_load(path, (const g4v_model_options *)&both, &m, msg, sizeof msg) ==
              G4V_ERR_ARG &&
          m == NULL);
    CHECK_MSG(strstr(msg, "two math modes") != NULL, "%s", msg);
    /* the oldest layout above (budget, apply_exif, precise) still reaches PRECISE */
    old_model_options oo;
    g4v_model_options_init_sized((g4v_model_options *)&oo, sizeof oo);
    oo.precise = 1;
    REQUIRE(g4v_model_load(path, (const g4v_model_options *)&oo, &m, msg, sizeof msg) == G4V_OK);
    g4v_model_info info;
    CHECK(g4v_model_get_info(m, &info, NULL, 0) == G4V_OK && info.math == G4V_MATH_PRECISE);
    g4v_model_free(m);
}

static void test_cache_stats(void) {
    char cdir[1024], msg[512];
    snprintf(cdir, sizeof cdir, "%s/abi_cache", dir);
    g4v_cache_options co;
    g4v_cache_options_init(&co);
    g4v_cache *c = NULL;
    REQUIRE(g4v_cache_open(cdir, &co, &c, msg, sizeof msg) == G4V_OK);
    struct {
        old_cache_stats s;
        unsigned char guard[GUARD_BYTES];
    } w;
    memset(&w, GUARD, sizeof w);
    CHECK(g4v_cache_get_stats_sized(c, (g4v_cache_stats *)&w.s, sizeof w.s, msg, sizeof msg) ==
          G4V_OK);
    CHECK(guard_intact(w.guard) && w.s.hits == 0 && w.s.misses == 0);
    g4v_cache_stats s;
    CHECK(g4v_cache_get_stats(NULL, &s, msg, sizeof msg) == G4V_ERR_ARG && msg[0]);
    g4v_cache_close(c);
}

/* Every fallible call without a ctx says why in its errbuf. */
static void test_errbufs(void) {
    char path[1024], msg[512];
    snprintf(path, sizeof path, "%s/tiny", dir);
    g4v_model *m = NULL;
    REQUIRE(g4v_model_load(path, NULL, &m, msg, sizeof msg) == G4V_OK);
    int n = 0;
    CHECK(g4v_model_plan(m, 100, 100, 300, NULL, NULL, &n, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK_MSG(strstr(msg, "unsupported token budget 300") != NULL, "%s", msg);
    CHECK(g4v_model_plan(m, 0, 100, 0, NULL, NULL, &n, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK_MSG(strstr(msg, "positive") != NULL, "%s", msg);
    CHECK(g4v_model_plan(m, 100, 100, 0, NULL, NULL, &n, msg, sizeof msg) == G4V_OK && !msg[0]);
    char hex[G4V_FINGERPRINT_HEX];
    CHECK(g4v_model_fingerprint(m, hex, 10, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK_MSG(strstr(msg, "G4V_FINGERPRINT_HEX") != NULL, "%s", msg);
    CHECK(g4v_model_fingerprint(m, hex, sizeof hex, msg, sizeof msg) == G4V_OK && !msg[0]);
    g4v_model_info info;
    CHECK(g4v_model_get_info(NULL, &info, msg, sizeof msg) == G4V_ERR_ARG && msg[0]);
    g4v_result r;
    memset(&r, 0, sizeof r);
    float f[4];
    CHECK(g4v_result_copy(&r, f, 4, msg, sizeof msg) == G4V_ERR_ARG && msg[0]);
    static const float feat[6] = {1, 2, 3, 4, 5, 6};
    r.n_tokens = 2, r.dim = 3, r.features = feat;
    CHECK(g4v_result_copy(&r, f, 4, msg, sizeof msg) == G4V_ERR_ARG);
    CHECK_MSG(strstr(msg, "holds 4 floats, the result has 6") != NULL, "%s", msg);
    /* errbuf may be NULL */
    CHECK(g4v_result_copy(&r, f, 4, NULL, 0) == G4V_ERR_ARG);
    g4v_model_free(m);

    /* g4v_preprocess_file: the image half of an encode, its own errbuf */
    char img[1024];
    snprintf(img, sizeof img, "%s/img0.png", dir);
    g4v_preprocess_options po;
    g4v_preprocess_options_init(&po);
    CHECK(po.struct_size == sizeof po && po.budget == G4V_DEFAULT_BUDGET && po.apply_exif == 1 &&
          po.pillow_version == 13);
    g4v_pixels *px = NULL;
    po.resize = G4V_RESIZE_TORCHVISION;
    po.pillow_version = 9;
    CHECK(g4v_preprocess_file(img, &po, &px, msg, sizeof msg) == G4V_ERR_ARG && px == NULL);
    CHECK_MSG(strstr(msg, "pillow_version") != NULL, "%s", msg);
    g4v_preprocess_options_init(&po);
    po.budget = 70;
    CHECK(g4v_preprocess_file("/nonexistent/x.png", &po, &px, msg, sizeof msg) == G4V_ERR_IO);
    CHECK_MSG(strstr(msg, "/nonexistent/x.png") != NULL, "%s", msg);
    CHECK_MSG(g4v_preprocess_file(img, &po, &px, msg, sizeof msg) == G4V_OK, "%s", msg);
    if (px) {
        CHECK(px->width % 48 == 0 && px->height % 48 == 0 && px->rgb && px->patches);
        CHECK(px->n_patches == (px->width / 16) * (px->height / 16) && px->n_patches / 9 <= 70);
        CHECK(!strcmp(px->format, "PNG") && px->orientation == 1);
        CHECK(px->positions[0] == 0 && px->positions[1] == 0);
    }
    g4v_pixels_free(px);
}

/* g4v_gguf_read_info_sized: an older caller's smaller g4v_gguf_info (architecture only) gets
 * nothing past it; a newer caller's larger one has its tail zeroed. */
static void test_gguf_info(void) {
    char path[1024], msg[512];
    snprintf(path, sizeof path, "%s/abi_info.gguf", dir);
    REQUIRE(small_gguf_write(path) == 0);
    struct {
        char architecture[64];
        unsigned char guard[GUARD_BYTES];
    } old;
    memset(&old, GUARD, sizeof old);
    CHECK_MSG(g4v_gguf_read_info_sized(path, (g4v_gguf_info *)&old, sizeof old.architecture, msg,
                                       sizeof msg) == G4V_OK, "%s", msg);
    CHECK(!strcmp(old.architecture, "clip") && guard_intact(old.guard));
    struct {
        g4v_gguf_info i;
        uint64_t appended[4];
        unsigned char guard[GUARD_BYTES];
    } n;
    memset(&n, GUARD, sizeof n);
    CHECK(g4v_gguf_read_info_sized(path, &n.i, offsetof(__typeof__(n), guard), msg, sizeof msg) ==
          G4V_OK);
    CHECK(n.i.vision_tensors == 2 && n.appended[0] == 0 && n.appended[3] == 0 &&
          guard_intact(n.guard));
}

/* g4v_hash_state is frozen: a program built now keeps working with a later library. */
_Static_assert(sizeof(g4v_hash_state) == 160 && _Alignof(g4v_hash_state) == 8,
               "g4v_hash_state is frozen");

/* The frozen structs (g4v.h "Versions") keep the layout of version 0.1 on LP64. */
#if UINTPTR_MAX == 0xffffffffffffffffu
_Static_assert(sizeof(g4v_result) == 80 && offsetof(g4v_result, features) == 40 &&
                   offsetof(g4v_result, seconds) == 72,
               "g4v_result is frozen");
_Static_assert(sizeof(g4v_rgb_image) == 24, "g4v_rgb_image is frozen");
_Static_assert(sizeof(g4v_video_frame) == 56 && offsetof(g4v_video_frame, first_row) == 48,
               "g4v_video_frame is frozen");
_Static_assert(sizeof(g4v_video_result) == 176 && offsetof(g4v_video_result, frames) == 64 &&
                   offsetof(g4v_video_result, seconds) == 168,
               "g4v_video_result is frozen");
#endif

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_abi FIXTURES\n");
        return 2;
    }
    dir = argv[1];
    test_init_guards();
    test_old_caller();
    test_v020_math();
    test_cache_stats();
    test_errbufs();
    test_gguf_info();
    return test_summary("test_abi");
}
