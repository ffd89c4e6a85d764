/* test_encode_batch.c - g4v_encode_batch (include/g4v.h) against the single calls it stands for:
 * every entry (file, bytes, RGB with and without a resize, its own budget / EXIF / resize / bf16)
 * has the features, fields, status and message of g4v_encode_file / _memory / _rgb on it alone,
 * bit for bit; bad entries fail alone; the cache is looked up and filled per entry; passes split
 * at 8192 patch rows change nothing; a caller's larger item struct is walked by its size.
 * Usage: test_encode_batch FIXTURES (tests/api/make_fixtures.py output). */
#include "g4v.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static g4v_ctx *ctx;

static unsigned char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

/* What the single call gives for an entry: status, message, result, a copy of its features. */
typedef struct alone {
    g4v_status st;
    char msg[1024];
    g4v_result r;
    float *feat;
    uint16_t *bf16;
    int hit;
} alone;

static void encode_alone(const g4v_batch_item *it, alone *a) {
    memset(a, 0, sizeof *a);
    if (it->path)
        a->st = g4v_encode_file(ctx, it->path, it->opts, &a->r);
    else if (it->bytes)
        a->st = g4v_encode_memory(ctx, it->bytes, it->size, it->opts, &a->r);
    else
        a->st = g4v_encode_rgb(ctx, it->rgb, it->width, it->height, it->stride, it->opts, &a->r);
    snprintf(a->msg, sizeof a->msg, "%s", g4v_ctx_error(ctx));
    a->hit = g4v_ctx_cache_hit(ctx);
    if (a->st) return;
    size_t n = (size_t)a->r.n_tokens * a->r.dim;
    a->feat = malloc(n * sizeof(float));
    memcpy(a->feat, a->r.features, n * sizeof(float));
    if (a->r.features_bf16) {
        a->bf16 = malloc(n * sizeof(uint16_t));
        memcpy(a->bf16, a->r.features_bf16, n * sizeof(uint16_t));
    }
}

/* Entry i of the batch equals its single call (messages too: a batch entry has none of its own). */
static void check_entry(int i, const g4v_batch_item *it, const alone *a, int want_hit) {
    CHECK_MSG(it->status == a->st, "entry %d: status %d, alone %d", i, it->status, a->st);
    CHECK_MSG(!strcmp(it->error, a->st ? a->msg : ""), "entry %d: message \"%s\", alone \"%s\"",
              i, it->error, a->msg);
    if (a->st) {
        CHECK_MSG(it->result.features == NULL && it->result.n_tokens == 0,
                  "entry %d: a failed entry's result is zeroed", i);
        return;
    }
    const g4v_result *r = &it->result, *s = &a->r;
    CHECK_MSG(r->n_tokens == s->n_tokens && r->dim == s->dim && r->grid_w == s->grid_w &&
                  r->grid_h == s->grid_h && r->src_width == s->src_width &&
                  r->src_height == s->src_height && r->width == s->width &&
                  r->height == s->height && r->budget == s->budget &&
                  r->boi_token_id == s->boi_token_id && r->image_token_id == s->image_token_id &&
                  r->eoi_token_id == s->eoi_token_id,
              "entry %d: the result's fields differ from the single call's", i);
    size_t n = (size_t)r->n_tokens * r->dim;
    CHECK_MSG(!memcmp(r->features, a->feat, n * sizeof(float)),
              "entry %d: features differ from the single call's", i);
    CHECK_MSG((r->features_bf16 != NULL) == (a->bf16 != NULL) &&
                  (!a->bf16 || !memcmp(r->features_bf16, a->bf16, n * sizeof(uint16_t))),
              "entry %d: bf16 copy differs", i);
    CHECK_MSG(it->cache_hit == want_hit, "entry %d: cache_hit %d, want %d", i, it->cache_hit,
              want_hit);
    CHECK(r->seconds > 0);
}

static void free_alone(alone *a, int n) {
    for (int i = 0; i < n; i++) {
        free(a[i].feat);
        free(a[i].bf16);
    }
}

enum { NE = 10 };

/* Ten entries of every kind, three of them bad. */
typedef struct fixture {
    char path0[1024], path_rot[1024], missing[1024];
    unsigned char *png;
    size_t png_size;
    uint8_t *px, *px_exact;
    g4v_encode_options o70, o140bf, otv, onoexif;
    g4v_batch_item it[NE];
} fixture;

static void fixture_init(fixture *f) {
    memset(f, 0, sizeof *f);
    snprintf(f->path0, sizeof f->path0, "%s/img0.png", dir);
    snprintf(f->path_rot, sizeof f->path_rot, "%s/rot6.jpg", dir); /* EXIF orientation 6 */
    snprintf(f->missing, sizeof f->missing, "%s/no-such-image.png", dir);
    char p1[1024];
    snprintf(p1, sizeof p1, "%s/img1.png", dir);
    f->png = slurp(p1, &f->png_size);
    REQUIRE(f->png != NULL);
    g4v_encode_options_init(&f->o70);
    f->o70.budget = 70;
    f->o140bf = f->o70;
    f->o140bf.budget = 140;
    f->o140bf.bf16 = 1;
    f->otv = f->o70;
    f->otv.resize = G4V_RESIZE_TORCHVISION;
    f->onoexif = f->o70;
    f->onoexif.apply_exif = 0;
    /* 150x100 pixels (resized to the target) and 480x336, 70's target for 3:2... whatever the
     * plan says: ask the library, then pad the stride */
    f->px = malloc(150 * 100 * 3);
    for (int k = 0; k < 150 * 100 * 3; k++) f->px[k] = (uint8_t)(k * 7 >> 2);
    g4v_result probe;
    REQUIRE(g4v_encode_rgb(ctx, f->px, 150, 100, 450, &f->o70, &probe) == G4V_OK);
    int tw = probe.width, th = probe.height;
    size_t stride = (size_t)tw * 3 + 5;
    f->px_exact = malloc((size_t)th * stride);
    for (size_t k = 0; k < (size_t)th * stride; k++) f->px_exact[k] = (uint8_t)(k * 13 >> 3);
    g4v_batch_item *it = f->it;
    it[0] = (g4v_batch_item){.path = f->path0};
    it[1] = (g4v_batch_item){.bytes = f->png, .size = f->png_size, .opts = &f->o140bf};
    it[2] = (g4v_batch_item){.rgb = f->px, .width = 150, .height = 100, .stride = 450,
                             .opts = &f->otv};
    it[3] = (g4v_batch_item){.bytes = "not an image at all", .size = 19}; /* bad */
    it[4] = (g4v_batch_item){.path = f->missing};                            /* bad */
    it[5] = (g4v_batch_item){.rgb = f->px_exact, .width = tw, .height = th, .stride = stride,
                             .opts = &f->o70};
    it[6] = (g4v_batch_item){.path = f->path_rot, .opts = &f->onoexif};
    it[7] = (g4v_batch_item){.path = f->path_rot, .bytes = f->png, .size = 1}; /* bad: two */
    it[8] = (g4v_batch_item){.path = f->path_rot};
    it[9] = (g4v_batch_item){.bytes = f->png, .size = f->png_size, .opts = &f->o70};
}

static void fixture_free(fixture *f) {
    free(f->png);
    free(f->px);
    free(f->px_exact);
}

static void test_entries_as_alone(void) {
    fixture f;
    fixture_init(&f);
    alone a[NE];
    for (int i = 0; i < NE; i++) encode_alone(&f.it[i], &a[i]);
    /* the message an entry with two inputs gets (no single call takes two) */
    snprintf(a[7].msg, sizeof a[7].msg, "a batch entry gives exactly one of path, bytes and rgb "
                                        "(found 2)");
    a[7].st = G4V_ERR_ARG;
    CHECK(a[3].st == G4V_ERR_IMAGE || a[3].st == G4V_ERR_UNSUPPORTED);
    CHECK(a[4].st == G4V_ERR_IO);
    CHECK(a[6].r.src_width == 160 && a[8].r.src_width == 90); /* EXIF on its own entry only */
    g4v_status st = g4v_encode_batch(ctx, f.it, NE);
    CHECK(st == a[3].st);
    CHECK_CONTAINS(g4v_ctx_error(ctx), "batch: 3 of 10 entries failed; entry 3: memory buffer");
    for (int i = 0; i < NE; i++) check_entry(i, &f.it[i], &a[i], 0);
    /* features one after another in entry order, the failed ones taking no room */
    const float *next = f.it[0].result.features;
    for (int i = 0; i < NE; i++) {
        if (f.it[i].status) continue;
        CHECK_MSG(f.it[i].result.features == next, "entry %d is not where the last one ended", i);
        next += (size_t)f.it[i].result.n_tokens * f.it[i].result.dim;
    }
    /* all good: G4V_OK, no message */
    g4v_batch_item good[3] = {f.it[0], f.it[2], f.it[9]};
    CHECK(g4v_encode_batch(ctx, good, 3) == G4V_OK && !strcmp(g4v_ctx_error(ctx), ""));
    check_entry(0, &good[0], &a[0], 0);
    check_entry(1, &good[1], &a[2], 0);
    check_entry(2, &good[2], &a[9], 0);
    CHECK(g4v_ctx_cache_hit(ctx) == 0);
    free_alone(a, NE);
    fixture_free(&f);
}

/* With a cache: the first batch stores what it encodes, the second is all hits (and equal); a
 * batch mixing hits and misses places both. */
static void test_cache(void) {
    char cdir[] = "/tmp/g4v-batch-cache-XXXXXX";
    REQUIRE(mkdtemp(cdir) != NULL);
    g4v_cache *cache = NULL;
    char msg[512];
    REQUIRE(g4v_cache_open(cdir, NULL, &cache, msg, sizeof msg) == G4V_OK);
    fixture f;
    fixture_init(&f);
    alone a[NE];
    for (int i = 0; i < NE; i++) encode_alone(&f.it[i], &a[i]); /* no cache yet */
    snprintf(a[7].msg, sizeof a[7].msg, "a batch entry gives exactly one of path, bytes and rgb "
                                        "(found 2)");
    a[7].st = G4V_ERR_ARG;
    REQUIRE(g4v_ctx_set_cache(ctx, cache) == G4V_OK);
    g4v_batch_item half[NE];
    memcpy(half, f.it, sizeof half);
    g4v_encode_batch(ctx, half, 5); /* entries 0..4 now stored (the good ones) */
    for (int i = 0; i < 5; i++) check_entry(i, &half[i], &a[i], 0);
    g4v_encode_batch(ctx, f.it, NE);
    for (int i = 0; i < NE; i++) check_entry(i, &f.it[i], &a[i], i < 5);
    g4v_encode_batch(ctx, f.it, NE);
    for (int i = 0; i < NE; i++) check_entry(i, &f.it[i], &a[i], 1);
    CHECK(g4v_ctx_cache_hit(ctx) == 0); /* three entries failed: not every one a hit */
    g4v_batch_item good[2] = {f.it[1], f.it[5]};
    CHECK(g4v_encode_batch(ctx, good, 2) == G4V_OK && g4v_ctx_cache_hit(ctx) == 1);
    g4v_cache_stats cs;
    REQUIRE(g4v_cache_get_stats(cache, &cs, NULL, 0) == G4V_OK);
    CHECK_MSG(cs.stores == 7 && cs.corrupt == 0, "stores %llu (want the 7 good entries once)",
              (unsigned long long)cs.stores);
    g4v_ctx_set_cache(ctx, NULL);
    g4v_cache_close(cache);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", cdir);
    CHECK(system(cmd) == 0);
    free_alone(a, NE);
    fixture_free(&f);
}

/* 36 images at 70 tokens need three passes of at most 8192 patch rows (up to 630 rows each with the
 * fixture's 16-pixel patches and 3x3 pooling): still each one's single encode. */
static void test_passes(void) {
    enum { NP = 36 };
    g4v_encode_options o;
    g4v_encode_options_init(&o);
    o.budget = 70;
    g4v_batch_item it[NP];
    alone a[NP];
    uint8_t *px[NP];
    int rows = 0;
    for (int i = 0; i < NP; i++) {
        int w = 100 + 7 * i, h = 90 + 3 * i;
        px[i] = malloc((size_t)w * h * 3);
        for (int k = 0; k < w * h * 3; k++) px[i][k] = (uint8_t)((k + i * 31) * (5 + i) >> 3);
        it[i] = (g4v_batch_item){.rgb = px[i], .width = w, .height = h, .stride = (size_t)w * 3,
                                 .opts = &o};
        encode_alone(&it[i], &a[i]);
        rows += a[i].r.n_tokens * 9;
    }
    CHECK_MSG(rows > 2 * 8192, "the images hold %d patch rows: too few for three passes", rows);
    CHECK(g4v_encode_batch(ctx, it, NP) == G4V_OK);
    for (int i = 0; i < NP; i++) check_entry(i, &it[i], &a[i], 0);
    free_alone(a, NP);
    for (int i = 0; i < NP; i++) free(px[i]);
}

/* Arguments; and a caller whose item struct is larger (a later header) is walked by its size. */
static void test_args_and_sizes(void) {
    fixture f;
    fixture_init(&f);
    CHECK(g4v_encode_batch(NULL, f.it, 1) == G4V_ERR_ARG);
    CHECK(g4v_encode_batch(ctx, NULL, 1) == G4V_ERR_ARG);
    CHECK(g4v_encode_batch(ctx, f.it, 0) == G4V_ERR_ARG);
    CHECK_CONTAINS(g4v_ctx_error(ctx), "n must be at least 1");
    CHECK(g4v_encode_batch_sized(ctx, f.it, 1, sizeof(g4v_batch_item) - 8) == G4V_ERR_ARG);
    CHECK_CONTAINS(g4v_ctx_error(ctx), "item_size");
    typedef struct later_item {
        g4v_batch_item item;
        uint64_t appended[3]; /* fields a later header would add: left alone */
    } later_item;
    later_item li[2];
    memset(li, 0, sizeof li);
    li[0].item = f.it[9];
    li[1].item = f.it[2];
    li[0].appended[1] = li[1].appended[2] = 0x1234567890abcdefull;
    alone a[2];
    encode_alone(&li[0].item, &a[0]);
    encode_alone(&li[1].item, &a[1]);
    CHECK(g4v_encode_batch_sized(ctx, &li[0].item, 2, sizeof(later_item)) == G4V_OK);
    check_entry(0, &li[0].item, &a[0], 0);
    check_entry(1, &li[1].item, &a[1], 0);
    CHECK(li[0].appended[1] == 0x1234567890abcdefull && li[1].appended[2] == 0x1234567890abcdefull
          && li[0].appended[0] == 0);
    /* a bad options struct fails its entry with the single call's message */
    g4v_encode_options bad = f.o70;
    bad.budget = 300;
    g4v_batch_item one[2] = {f.it[0], f.it[0]};
    one[1].opts = &bad;
    CHECK(g4v_encode_batch(ctx, one, 2) == G4V_ERR_ARG && one[0].status == G4V_OK &&
          one[1].status == G4V_ERR_ARG);
    CHECK_CONTAINS(one[1].error, "unsupported token budget 300");
    free_alone(a, 2);
    fixture_free(&f);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_encode_batch FIXTURES\n");
        return 2;
    }
    dir = argv[1];
    char path[1024], msg[512];
    snprintf(path, sizeof path, "%s/tiny", dir);
    g4v_model *model = NULL;
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
    test_entries_as_alone();
    test_cache();
    test_passes();
    test_args_and_sizes();
    g4v_ctx_free(ctx);
    g4v_model_free(model);
    return test_summary("test_encode_batch");
}
