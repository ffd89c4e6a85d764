/* test_video_api.c - the public video API on a real (generated) checkpoint and video:
 * file == memory, bf16 rows, frame records, prompt text and ids (with truncation), the limits
 * plumbed from g4v_model_options (each named in its message), argument errors, sniffing, and the
 * feature cache (one entry per frame: a repeat is read back whole, an overlap in part), and a
 * frame encoded alone giving the rows it has among others.
 * Usage: test_video_api MODEL_DIR VIDEO (test_video_pyav.py makes both and runs it). */
#include "base/dtype.h"
#include "test_util.h"

#include "g4v.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len);
    if (b && fread(b, 1, (size_t)len, f) != (size_t)len) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return b;
}

static g4v_ctx *open_ctx(const char *dir, const g4v_model_options *mo, g4v_model **m, int *st) {
    char msg[512];
    g4v_ctx *ctx = NULL;
    *st = g4v_model_load(dir, mo, m, msg, sizeof msg);
    if (*st) return NULL;
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = 1;
    if (g4v_ctx_create(*m, &co, &ctx, msg, sizeof msg)) return NULL;
    return ctx;
}

/* A model with one limit changed must refuse the video with G4V_ERR_LIMIT naming the field. */
static void expect_limit(const char *dir, const char *video, const g4v_model_options *mo,
                         const char *field) {
    g4v_model *m = NULL;
    int st;
    g4v_ctx *ctx = open_ctx(dir, mo, &m, &st);
    REQUIRE(ctx);
    g4v_video_result r;
    st = g4v_encode_video_file(ctx, video, NULL, &r);
    CHECK_MSG(st == G4V_ERR_LIMIT && strstr(g4v_ctx_error(ctx), field) && r.features == NULL &&
                  r.n_frames == 0,
              "%s: %s %s", field, g4v_status_name(st), g4v_ctx_error(ctx));
    g4v_ctx_free(ctx);
    g4v_model_free(m);
}

static void run(const char *dir, const char *video) {
    size_t n;
    unsigned char *bytes = slurp(video, &n);
    REQUIRE(bytes);
    CHECK(g4v_video_sniff(bytes, n) == 1);
    CHECK(g4v_video_sniff("\x89PNG\r\n\x1a\n\0\0\0\0", 12) == 0);
    CHECK(g4v_video_sniff(NULL, 0) == 0);

    g4v_model_options mo;
    g4v_model_options_init(&mo);
    CHECK(mo.max_video_frames == 216000 && mo.max_video_seconds == 3600.0);
    g4v_model *m = NULL;
    int st;
    g4v_ctx *ctx = open_ctx(dir, &mo, &m, &st);
    CHECK_MSG(ctx, "cannot load %s: %s", dir, g4v_status_name(st));
    if (!ctx) return;
    g4v_model_info info;
    CHECK(g4v_model_get_info(m, &info, NULL, 0) == G4V_OK && info.max_video_frames == 216000 &&
          info.max_video_seconds == 3600.0);

    /* file and memory agree; the result is fully described */
    g4v_video_options vo;
    g4v_video_options_init(&vo);
    vo.num_frames = 5;
    vo.bf16 = 1;
    g4v_video_result a, b;
    CHECK(g4v_encode_video_file(ctx, video, &vo, &a) == G4V_OK);
    size_t rows = (size_t)a.n_tokens, T = (size_t)a.dim;
    float *fa = malloc(rows * T * sizeof(float));
    uint16_t *ba = malloc(rows * T * sizeof(uint16_t));
    REQUIRE(fa && ba && a.features && a.features_bf16);
    memcpy(fa, a.features, rows * T * sizeof(float));
    memcpy(ba, a.features_bf16, rows * T * sizeof(uint16_t));
    CHECK(a.n_frames == 5 && a.budget == 70 && a.video_token_id == 258884 &&
          a.boi_token_id == 255999 && a.eoi_token_id == 258882 && a.total_frames > 5 && a.fps > 0 &&
          a.seconds > 0);
    int per = a.frames[0].n_tokens;
    CHECK(per == (a.width / 48) * (a.height / 48) && (size_t)per * 5 == rows);
    for (int i = 0; i < a.n_frames; i++) {
        const g4v_video_frame *f = &a.frames[i];
        CHECK(f->first_row == (size_t)i * (size_t)per && f->n_tokens == per);
        CHECK(f->index == (int64_t)i * a.total_frames / 5);
        CHECK(f->timestamp == (double)f->index / a.fps);
    }
    int bf_ok = 1;
    for (size_t i = 0; i < rows * T; i++)
        bf_ok &= ba[i] == g4v_f32_to_bf16(fa[i]);
    CHECK(bf_ok);
    vo.bf16 = 0;
    CHECK(g4v_encode_video_memory(ctx, bytes, n, &vo, &b) == G4V_OK);
    CHECK(b.n_tokens == a.n_tokens && b.features_bf16 == NULL &&
          !memcmp(b.features, fa, rows * T * sizeof(float)));
    /* a frame's rows do not depend on the pass it ran in: frame 0 alone (a pass of one) gives
     * the rows it had among five */
    vo.num_frames = 1;
    g4v_video_result one;
    CHECK(g4v_encode_video_memory(ctx, bytes, n, &vo, &one) == G4V_OK && one.n_frames == 1 &&
          one.n_tokens == per && !memcmp(one.features, fa, (size_t)per * T * sizeof(float)));
    vo.num_frames = 5;
    CHECK(g4v_encode_video_memory(ctx, bytes, n, &vo, &b) == G4V_OK && b.n_tokens == a.n_tokens &&
          !memcmp(b.features, fa, rows * T * sizeof(float)));

    /* prompt ids: per frame and all frames */
    size_t need = g4v_video_prompt_tokens(&b, -1, NULL, 0);
    CHECK(need == (size_t)5 * (size_t)(per + 2));
    int32_t *ids = malloc(need * sizeof *ids);
    REQUIRE(ids);
    CHECK(g4v_video_prompt_tokens(&b, -1, ids, need) == need);
    CHECK(ids[0] == 255999 && ids[1] == 258884 && ids[per] == 258884 && ids[per + 1] == 258882 &&
          ids[per + 2] == 255999 && ids[need - 1] == 258882);
    CHECK(g4v_video_prompt_tokens(&b, 4, ids, 3) == (size_t)per + 2 && ids[0] == 255999 &&
          ids[1] == 258884 && ids[2] == 258884);
    CHECK(g4v_video_prompt_tokens(&b, 5, ids, need) == 0 &&
          g4v_video_prompt_tokens(&b, -2, ids, need) == 0 &&
          g4v_video_prompt_tokens(NULL, -1, ids, need) == 0);

    /* prompt text: the length like snprintf, truncation keeps a prefix */
    size_t len = g4v_video_prompt_text(&b, NULL, 0);
    CHECK(len == 5 * (5 + 1 + 8 + (size_t)per * 9 + 8) + 4);
    char *text = malloc(len + 1), small[12];
    REQUIRE(text);
    CHECK(g4v_video_prompt_text(&b, text, len + 1) == len && strlen(text) == len);
    CHECK(!strncmp(text, "00:00 <|image><|video|>", 23) && strstr(text, "<image|> 00:0") &&
          !strcmp(text + len - 8, "<image|>"));
    CHECK(g4v_video_prompt_text(&b, small, sizeof small) == len && !strncmp(small, text, 11) &&
          small[11] == '\0');

    /* the feature cache: 5 frames stored, the same 5 read back bit-identical; 10 frames of the
     * same video share the 5 (index i*total/5 == 2i*total/10) and encode only the other 5, and
     * agree with a fresh encode */
    {
        char cdir[] = "/tmp/g4v-video-cache-XXXXXX";
        REQUIRE(mkdtemp(cdir));
        char msg[256];
        g4v_cache *cache = NULL;
        REQUIRE(g4v_cache_open(cdir, NULL, &cache, msg, sizeof msg) == G4V_OK);
        g4v_video_options co;
        g4v_video_options_init(&co);
        co.num_frames = 10;
        g4v_video_result c10;
        CHECK(g4v_encode_video_memory(ctx, bytes, n, &co, &c10) == G4V_OK && c10.n_frames == 10);
        size_t n10 = (size_t)c10.n_tokens * T;
        float *fresh10 = malloc(n10 * sizeof(float));
        REQUIRE(fresh10);
        memcpy(fresh10, c10.features, n10 * sizeof(float));
        CHECK(g4v_ctx_set_cache(ctx, cache) == G4V_OK);
        co.num_frames = 5;
        g4v_cache_stats cs;
        CHECK(g4v_encode_video_memory(ctx, bytes, n, &co, &c10) == G4V_OK && !g4v_ctx_cache_hit(ctx));
        g4v_cache_get_stats(cache, &cs, NULL, 0);
        CHECK_MSG(cs.misses == 5 && cs.stores == 5 && cs.hits == 0, "misses %llu stores %llu",
                  (unsigned long long)cs.misses, (unsigned long long)cs.stores);
        CHECK(g4v_encode_video_file(ctx, video, &co, &c10) == G4V_OK && g4v_ctx_cache_hit(ctx) &&
              !memcmp(c10.features, fa, rows * T * sizeof(float)));
        g4v_cache_get_stats(cache, &cs, NULL, 0);
        CHECK(cs.hits == 5 && cs.misses == 5);
        co.num_frames = 10;
        CHECK(g4v_encode_video_memory(ctx, bytes, n, &co, &c10) == G4V_OK && !g4v_ctx_cache_hit(ctx) &&
              (size_t)c10.n_tokens * T == n10 && !memcmp(c10.features, fresh10, n10 * sizeof(float)));
        g4v_cache_get_stats(cache, &cs, NULL, 0);
        CHECK_MSG(cs.hits == 10 && cs.misses == 10 && cs.stores == 10, "hits %llu misses %llu",
                  (unsigned long long)cs.hits, (unsigned long long)cs.misses);
        g4v_ctx_set_cache(ctx, NULL);
        g4v_cache_close(cache);
        free(fresh10);
        char rm[320];
        snprintf(rm, sizeof rm, "rm -rf '%s'", cdir);
        CHECK(system(rm) == 0);
    }

    /* argument errors leave a zeroed result and a message */
    vo.budget = 71;
    CHECK(g4v_encode_video_memory(ctx, bytes, n, &vo, &b) == G4V_ERR_ARG && b.features == NULL &&
          strstr(g4v_ctx_error(ctx), "71"));
    vo.budget = 140;
    vo.num_frames = 1025;
    CHECK(g4v_encode_video_memory(ctx, bytes, n, &vo, &b) == G4V_ERR_ARG &&
          strstr(g4v_ctx_error(ctx), "num_frames"));
    vo.num_frames = 2;
    CHECK(g4v_encode_video_memory(ctx, bytes, n, &vo, &b) == G4V_OK && b.budget == 140 &&
          b.n_frames == 2);
    CHECK(g4v_encode_video_memory(ctx, NULL, 10, NULL, &b) == G4V_ERR_ARG);
    CHECK(g4v_encode_video_memory(ctx, bytes, n, NULL, NULL) == G4V_ERR_ARG);
    CHECK(g4v_encode_video_memory(NULL, bytes, n, NULL, &b) == G4V_ERR_ARG);
    CHECK(g4v_encode_video_file(ctx, "/nonexistent/x.mp4", NULL, &b) == G4V_ERR_IO);
    CHECK(g4v_encode_video_memory(ctx, bytes, n / 3, NULL, &b) != G4V_OK &&
          strstr(g4v_ctx_error(ctx), "memory buffer"));
    g4v_ctx_free(ctx);
    g4v_model_free(m);

    /* limits from the model options */
    g4v_model_options lo = mo;
    lo.max_video_frames = 3;
    expect_limit(dir, video, &lo, "max_video_frames");
    lo = mo;
    lo.max_video_seconds = 0.5;
    expect_limit(dir, video, &lo, "max_video_seconds");
    lo = mo;
    lo.max_file_bytes = 100;
    expect_limit(dir, video, &lo, "max_file_bytes");
    lo = mo;
    lo.max_dimension = 20;
    expect_limit(dir, video, &lo, "max_dimension");
    lo = mo;
    lo.max_video_seconds = -1;
    char msg[256];
    g4v_model *bad = NULL;
    CHECK(g4v_model_load(dir, &lo, &bad, msg, sizeof msg) == G4V_ERR_ARG && !bad &&
          strstr(msg, "max_video_seconds"));

    free(ids);
    free(text);
    free(fa);
    free(ba);
    free(bytes);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_video_api MODEL_DIR VIDEO\n");
        return 2;
    }
    run(argv[1], argv[2]);
    return test_summary("test_video_api");
}
