/* test_checkpoint.c - g4v_checkpoint_open against the fixtures written by io_cases.py.
 *
 * usage: test_checkpoint FIXTURE_DIR   (FIXTURE_DIR/manifest.json lists the cases)
 * Good checkpoints: every config field, the parameter count and bytes, the naming and source,
 * each struct field's tensor (dtype, shape and a crc32 of its bytes, as the generator computed
 * them), the decoded clip bounds, and, where asked, that only a bounded number of bytes of the
 * file got mapped. Bad checkpoints: the status and a message substring. Plus limits, argument
 * checks, and (when built with G4V_FAULT_INJECTION) every allocation failing in turn.
 * Runs under ASan in CI, so any out-of-bounds read on a hostile file fails here.
 */
#include "base/alloc.h"
#include "io/model_source.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "test_util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const lin_names[G4V_LIN_COUNT] = {
    "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
    "mlp.gate_proj",    "mlp.up_proj",      "mlp.down_proj"};

/* zlib's crc32 (reflected, polynomial 0xEDB88320), as Python's zlib.crc32. */
static uint32_t crc32_of(const void *data, size_t n) {
    static uint32_t table[256];
    if (!table[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    const unsigned char *p = data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++)
        c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static cJSON *load_json(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cJSON *j = NULL;
    if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
        buf[n] = '\0';
        j = cJSON_Parse(buf);
    }
    free(buf);
    fclose(f);
    return j;
}

static double num(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const char *str(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* One struct field against expect.tensors[name]. */
static void check_tensor(const char *cs, const cJSON *tensors, const char *name,
                         const g4v_tensor *t) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(tensors, name);
    CHECK_MSG(e != NULL, "%s: %s expected", cs, name);
    if (!e) return;
    CHECK_MSG(t->data != NULL, "%s: %s has no data", cs, name);
    if (!t->data) return;
    CHECK_MSG(!strcmp(g4v_dtype_name(t->dtype), str(e, "dtype")), "%s: %s dtype %s vs %s", cs, name,
              g4v_dtype_name(t->dtype), str(e, "dtype"));
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    int n = cJSON_GetArraySize(shape);
    int scalar_as_1 = n == 0 && t->ndim == 1 && t->shape[0] == 1;
    CHECK_MSG(t->ndim == n || scalar_as_1, "%s: %s rank %d vs %d", cs, name, t->ndim, n);
    for (int i = 0; i < n && i < t->ndim; i++)
        CHECK_MSG(t->shape[i] == (int64_t)cJSON_GetArrayItem(shape, i)->valuedouble,
                  "%s: %s dim %d", cs, name, i);
    CHECK_MSG(crc32_of(t->data, t->nbytes) == (uint32_t)num(e, "crc32"), "%s: %s bytes differ", cs,
              name);
}

typedef struct visit_state {
    const cJSON *tensors;
    int count, unknown;
} visit_state;

static void visit(void *user, const char *name, const g4v_tensor *t) {
    visit_state *s = user;
    s->count++;
    if (!cJSON_GetObjectItemCaseSensitive(s->tensors, name) || !t->data) s->unknown++;
}

/* Bytes of path mapped in this process, from /proc/self/maps. */
static unsigned long long mapped_bytes_of(const char *path) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[8192];
    unsigned long long total = 0;
    char *real = realpath(path, NULL);
    while (f && real && fgets(line, sizeof line, f)) {
        unsigned long long lo, hi;
        char *file = strchr(line, '/');
        if (!file || sscanf(line, "%llx-%llx", &lo, &hi) != 2) continue;
        file[strcspn(file, "\n")] = '\0';
        if (!strcmp(file, real)) total += hi - lo;
    }
    free(real);
    if (f) fclose(f);
    return total;
}

static void check_good(const cJSON *c) {
    const char *cs = str(c, "name"), *dir = str(c, "dir");
    cJSON *exp = load_json(str(c, "expect"));
    REQUIRE(exp != NULL);
    g4v_err err;
    g4v_checkpoint *ck = NULL;
    int st = g4v_checkpoint_open(dir, NULL, &ck, &err);
    CHECK_MSG(st == G4V_OK, "%s: %s", cs, err.msg);
    if (st) {
        cJSON_Delete(exp);
        return;
    }
    const cJSON *ec = cJSON_GetObjectItemCaseSensitive(exp, "cfg");
    const g4v_vision_config *v = &ck->cfg;
    CHECK_MSG(!strcmp(v->variant, str(ec, "variant")), "%s: variant %s", cs, v->variant);
    const struct {
        const char *key;
        double got;
    } f[] = {{"hidden_size", v->hidden_size},
             {"intermediate_size", v->intermediate_size},
             {"num_layers", v->num_layers},
             {"num_heads", v->num_heads},
             {"num_kv_heads", v->num_kv_heads},
             {"head_dim", v->head_dim},
             {"patch_size", v->patch_size},
             {"pooling_kernel_size", v->pooling_kernel_size},
             {"position_embedding_size", v->position_embedding_size},
             {"default_output_length", v->default_output_length},
             {"text_hidden_size", v->text_hidden_size},
             {"rope_theta", v->rope_theta},
             {"rms_norm_eps", v->rms_norm_eps},
             {"image_token_id", v->image_token_id},
             {"boi_token_id", v->boi_token_id},
             {"eoi_token_id", v->eoi_token_id},
             {"video_token_id", v->video_token_id}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        CHECK_MSG(f[i].got == num(ec, f[i].key), "%s: %s = %g, expected %g", cs, f[i].key, f[i].got,
                  num(ec, f[i].key));
    CHECK_MSG(v->use_clipped_linears ==
                  cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ec, "use_clipped_linears")),
              "%s: use_clipped_linears", cs);
    CHECK_MSG(v->standardize == cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ec, "standardize")),
              "%s: standardize", cs);
    CHECK_MSG((double)ck->param_count == num(exp, "param_count"), "%s: param_count %lld", cs,
              (long long)ck->param_count);
    CHECK_MSG((double)ck->weight_bytes == num(exp, "weight_bytes"), "%s: weight_bytes %zu", cs,
              ck->weight_bytes);
    CHECK_MSG(!strcmp(ck->naming, str(exp, "naming")), "%s: naming %s", cs, ck->naming);
    CHECK_MSG(strstr(ck->source, str(exp, "source")) != NULL, "%s: source '%s'", cs, ck->source);

    /* every struct field holds the tensor of its name */
    const cJSON *T = cJSON_GetObjectItemCaseSensitive(exp, "tensors");
    check_tensor(cs, T, "vision_tower.patch_embedder.input_proj.weight", &ck->input_proj);
    check_tensor(cs, T, "vision_tower.patch_embedder.position_embedding_table",
                 &ck->position_table);
    check_tensor(cs, T, "embed_vision.embedding_projection.weight", &ck->embed_proj);
    if (v->standardize) {
        check_tensor(cs, T, "vision_tower.std_bias", &ck->std_bias);
        check_tensor(cs, T, "vision_tower.std_scale", &ck->std_scale);
    } else {
        CHECK_MSG(!ck->std_bias.data && !ck->std_scale.data, "%s: std tensors set", cs);
    }
    const cJSON *clips = cJSON_GetObjectItemCaseSensitive(exp, "clips");
    char name[160];
    for (int i = 0; i < v->num_layers; i++) {
        const g4v_layer_weights *L = &ck->layers[i];
        const struct {
            const char *n;
            const g4v_tensor *t;
        } norms[] = {{"input_layernorm", &L->input_layernorm},
                     {"post_attention_layernorm", &L->post_attention_layernorm},
                     {"pre_feedforward_layernorm", &L->pre_feedforward_layernorm},
                     {"post_feedforward_layernorm", &L->post_feedforward_layernorm},
                     {"self_attn.q_norm", &L->q_norm},
                     {"self_attn.k_norm", &L->k_norm}};
        for (size_t k = 0; k < 6; k++) {
            snprintf(name, sizeof name, "vision_tower.encoder.layers.%d.%s.weight", i, norms[k].n);
            check_tensor(cs, T, name, norms[k].t);
        }
        for (int j = 0; j < G4V_LIN_COUNT; j++) {
            snprintf(name, sizeof name, "vision_tower.encoder.layers.%d.%s.linear.weight", i,
                     lin_names[j]);
            check_tensor(cs, T, name, &L->lin[j]);
            const g4v_clip *cl = &L->clip[j];
            float got[4] = {cl->in_min, cl->in_max, cl->out_min, cl->out_max};
            for (int k = 0; k < 4; k++) {
                double want =
                    cJSON_IsArray(clips)
                        ? cJSON_GetArrayItem(cJSON_GetArrayItem(cJSON_GetArrayItem(clips, i), j), k)
                              ->valuedouble
                        : (k % 2 ? INFINITY : -INFINITY);
                CHECK_MSG((double)got[k] == want, "%s: layer %d %s clip %d = %g, expected %g", cs,
                          i, lin_names[j], k, got[k], want);
            }
        }
    }
    visit_state vs = {T, 0, 0};
    g4v_checkpoint_foreach(ck, visit, &vs);
    CHECK_MSG(vs.count == cJSON_GetArraySize(T) && vs.unknown == 0,
              "%s: foreach visited %d (%d unknown), expected %d", cs, vs.count, vs.unknown,
              cJSON_GetArraySize(T));

    const cJSON *mm = cJSON_GetObjectItemCaseSensitive(c, "max_mapped_bytes");
    if (cJSON_IsNumber(mm)) {
        char path[4096];
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        unsigned long long got = mapped_bytes_of(path);
        CHECK_MSG(got > 0 && got <= (unsigned long long)mm->valuedouble,
                  "%s: %llu bytes of %s mapped, expected at most %.0f", cs, got, path,
                  mm->valuedouble);
    }
    g4v_checkpoint_close(ck);
    cJSON_Delete(exp);
}

static void check_bad(const cJSON *c) {
    const char *cs = str(c, "name");
    g4v_err err;
    static g4v_checkpoint sentinel;
    g4v_checkpoint *ck = &sentinel; /* must be reset to NULL */
    int st = g4v_checkpoint_open(str(c, "dir"), NULL, &ck, &err);
    CHECK_MSG(!strcmp(g4v_status_name(st), str(c, "status")), "%s: status %s, expected %s (%s)", cs,
              g4v_status_name(st), str(c, "status"), err.msg);
    CHECK_MSG(strstr(err.msg, str(c, "substring")) != NULL, "%s: \"%s\" lacks \"%s\"", cs, err.msg,
              str(c, "substring"));
    CHECK_MSG(ck == NULL, "%s: out not reset", cs);
    if (!st) g4v_checkpoint_close(ck);
}

/* ---- mmproj GGUF files (gguf_cases.py) ---- */

typedef struct value_cmp {
    const g4v_checkpoint *other;
    const char *cs;
    int visited;
} value_cmp;

typedef struct finder {
    const char *name;
    const g4v_tensor *t;
} finder;

static void find_fn(void *user, const char *name, const g4v_tensor *t) {
    finder *f = user;
    if (!strcmp(f->name, name)) f->t = t;
}

/* Every tensor the GGUF gave equals, value by value, the one the safetensors checkpoint gave
 * under the same canonical name (the permutations undone, Q8_0 aside). */
static void cmp_fn(void *user, const char *name, const g4v_tensor *t) {
    value_cmp *v = user;
    finder f = {name, NULL};
    g4v_checkpoint_foreach(v->other, find_fn, &f);
    v->visited++;
    CHECK_MSG(f.t != NULL, "%s: %s not in the safetensors checkpoint", v->cs, name);
    if (!f.t) return;
    size_t n = t->nbytes / g4v_dtype_size(t->dtype), m = f.t->nbytes / g4v_dtype_size(f.t->dtype);
    CHECK_MSG(n == m, "%s: %s has %zu values, safetensors %zu", v->cs, name, n, m);
    size_t bad = 0;
    for (size_t i = 0; i < n && i < m; i++)
        bad += g4v_tensor_get(t, i) != g4v_tensor_get(f.t, i);
    CHECK_MSG(bad == 0, "%s: %s: %zu values differ from the safetensors checkpoint", v->cs, name,
              bad);
}

static void check_gguf_good(const cJSON *c) {
    const char *cs = str(c, "name");
    g4v_err err;
    g4v_checkpoint *ck = NULL;
    int st = g4v_checkpoint_open(str(c, "path"), NULL, &ck, &err);
    CHECK_MSG(st == G4V_OK, "%s: open: %s", cs, err.msg);
    if (st) return;
    const g4v_vision_config *cfg = &ck->cfg;
    CHECK_MSG(!strcmp(g4v_model_kind_name(cfg->kind), str(c, "kind")), "%s: kind", cs);
    CHECK_MSG(cfg->num_layers == (int)num(c, "layers"), "%s: layers %d", cs, cfg->num_layers);
    CHECK_MSG(cfg->use_clipped_linears == (int)num(c, "clipped"), "%s: clipped", cs);
    CHECK_MSG(cfg->standardize == (int)num(c, "standardize"), "%s: standardize", cs);
    CHECK_MSG(!strcmp(ck->naming, "gguf"), "%s: naming %s", cs, ck->naming);
    CHECK_MSG(strstr(ck->source, "(GGUF v3 mmproj, gemma4") != NULL, "%s: source %s", cs,
              ck->source);
    CHECK_MSG(cfg->image_token_id == 258880 && cfg->boi_token_id == 255999 &&
                  cfg->eoi_token_id == 258882 && cfg->video_token_id == 258884,
              "%s: token ids", cs);
    CHECK_MSG(cfg->rms_norm_eps == 1e-6, "%s: rms_norm_eps %.17g", cs, cfg->rms_norm_eps);
    const g4v_tensor *patch = cfg->kind == G4V_KIND_UNIFIED ? &ck->unified.dense_w : &ck->input_proj;
    CHECK_MSG(!strcmp(g4v_dtype_name(ck->embed_proj.dtype), str(c, "proj_dtype")),
              "%s: projection dtype %s", cs, g4v_dtype_name(ck->embed_proj.dtype));
    CHECK_MSG(!strcmp(g4v_dtype_name(patch->dtype), str(c, "patch_dtype")),
              "%s: patch embedding dtype %s", cs, g4v_dtype_name(patch->dtype));
    CHECK_MSG(patch->owned == 1, "%s: the permuted patch embedding is an owned copy", cs);
    const cJSON *same = cJSON_GetObjectItemCaseSensitive(c, "same_values_as");
    if (cJSON_IsString(same)) {
        g4v_checkpoint *st_ck = NULL;
        CHECK_MSG(g4v_checkpoint_open(same->valuestring, NULL, &st_ck, &err) == G4V_OK,
                  "%s: open %s: %s", cs, same->valuestring, err.msg);
        if (st_ck) {
            value_cmp v = {st_ck, cs, 0};
            g4v_checkpoint_foreach(ck, cmp_fn, &v);
            CHECK_MSG(v.visited > 0 && ck->param_count == st_ck->param_count,
                      "%s: %d tensors, %lld parameters (safetensors %lld)", cs, v.visited,
                      (long long)ck->param_count, (long long)st_ck->param_count);
            g4v_checkpoint_close(st_ck);
        }
    }
    g4v_checkpoint_close(ck);
}

static void check_gguf_limits(const char *fx) {
    char path[4096];
    snprintf(path, sizeof path, "%s/gguf/tiny_q8_0.gguf", fx);
    g4v_checkpoint_limits lim;
    g4v_err err;
    g4v_checkpoint *ck;
    g4v_checkpoint_limits_default(&lim);
    lim.max_header_bytes = 200;
    CHECK(g4v_checkpoint_open(path, &lim, &ck, &err) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(err.msg, "above the limit of 200 bytes (max_header_bytes)");
    g4v_checkpoint_limits_default(&lim);
    lim.max_tensor_count = 10;
    CHECK(g4v_checkpoint_open(path, &lim, &ck, &err) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(err.msg, "(max_tensor_count)");
    g4v_checkpoint_limits_default(&lim);
    lim.read_weights = 1; /* read, not mapped: the same load */
    CHECK(g4v_checkpoint_open(path, &lim, &ck, &err) == G4V_OK);
    if (ck) g4v_checkpoint_close(ck);
}

static void check_limits(const char *fx) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tiny_base", fx);
    g4v_checkpoint_limits lim;
    g4v_err err;
    g4v_checkpoint *ck;

    g4v_checkpoint_limits_default(&lim);
    CHECK(lim.max_header_bytes == 100000000u && lim.max_config_bytes == 16000000u);
    lim.max_header_bytes = 1000;
    CHECK(g4v_checkpoint_open(dir, &lim, &ck, &err) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(err.msg, "above the limit of 1000 bytes");

    g4v_checkpoint_limits_default(&lim);
    lim.max_config_bytes = 100;
    CHECK(g4v_checkpoint_open(dir, &lim, &ck, &err) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(err.msg, "config.json: file is");

    g4v_checkpoint_limits_default(&lim);
    lim.max_tensor_count = 10;
    CHECK(g4v_checkpoint_open(dir, &lim, &ck, &err) == G4V_ERR_LIMIT);
    CHECK_CONTAINS(err.msg, "header entries, above the limit of 10");

    CHECK(g4v_checkpoint_open(dir, NULL, NULL, &err) == G4V_ERR_ARG);
    CHECK(g4v_checkpoint_open(NULL, NULL, &ck, &err) == G4V_ERR_ARG && ck == NULL);
    CHECK(g4v_checkpoint_open("", NULL, &ck, NULL) == G4V_ERR_ARG);
    g4v_checkpoint_close(NULL);
}

static void check_variants(void) {
    CHECK(!strcmp(g4v_config_variant(768, 1536), "e2b"));
    CHECK(!strcmp(g4v_config_variant(768, 2560), "e4b"));
    CHECK(!strcmp(g4v_config_variant(1152, 2816), "26b-a4b"));
    CHECK(!strcmp(g4v_config_variant(1152, 5376), "31b"));
    CHECK(!strcmp(g4v_config_variant(768, 5376), "custom"));
    CHECK(!strcmp(g4v_config_variant(64, 96), "custom"));
}

/* g4v_st_open + g4v_st_entry_parse of tensor "t" on a file made of the 8-byte length, hdr and
 * data_len zero bytes; hdr_len overrides the length field when not 0. Returns the first failing
 * status (or G4V_OK) and its message in msg. */
static int st_status(const char *hdr, uint64_t hdr_len, uint64_t data_len, char *msg, size_t cap) {
    char path[] = "/tmp/g4v_st_range_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    size_t hn = strlen(hdr);
    uint64_t field = hdr_len ? hdr_len : hn;
    uint8_t len8[8], zeros[64] = {0};
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)(field >> (8 * i));
    int ok = write(fd, len8, 8) == 8 && write(fd, hdr, hn) == (ssize_t)hn &&
             write(fd, zeros, (size_t)data_len) == (ssize_t)data_len;
    close(fd);
    int st = -1;
    g4v_st_file f;
    g4v_err err;
    err.msg[0] = '\0';
    g4v_checkpoint_limits lim;
    g4v_checkpoint_limits_default(&lim);
    if (ok && (st = g4v_st_open(path, &lim, &f, &err)) == G4V_OK) {
        g4v_st_entry e;
        const cJSON *item = cJSON_GetObjectItemCaseSensitive(f.header, "t");
        st = item ? g4v_st_entry_parse(&f, item, "t", &e, &err) : -1;
        g4v_st_close(&f);
    }
    snprintf(msg, cap, "%s", err.msg);
    unlink(path);
    return st;
}

/* A file holding one F32 tensor whose data_offsets are [begin, end) in a data section of
 * data_len bytes (with one tensor nothing can overlap, so the range check alone decides; the
 * offsets_outside fixture also trips the overlap check). */
static int single_tensor_status(uint64_t begin, uint64_t end, uint64_t data_len, char *msg,
                                size_t cap) {
    char hdr[256];
    snprintf(hdr, sizeof hdr,
             "{\"t\": {\"dtype\": \"F32\", \"shape\": [%llu], \"data_offsets\": [%llu, %llu]}}",
             (unsigned long long)((end - begin) / 4), (unsigned long long)begin,
             (unsigned long long)end);
    return st_status(hdr, 0, data_len, msg, cap);
}

static void check_single_tensor_range(void) {
    char msg[512];
    CHECK(single_tensor_status(0, 12, 12, msg, sizeof msg) == G4V_OK);
    CHECK(single_tensor_status(4, 12, 12, msg, sizeof msg) == G4V_OK); /* ends at the last byte */
    int st = single_tensor_status(0, 16, 12, msg, sizeof msg);         /* 4 bytes past the end */
    CHECK_MSG(st == G4V_ERR_MODEL, "status %d: %s", st, msg);
    CHECK_CONTAINS(msg, "lie outside the data section");
    st = single_tensor_status(16, 16, 12, msg, sizeof msg); /* empty, but starts past the end */
    CHECK_MSG(st == G4V_ERR_MODEL, "status %d: %s", st, msg);
}

/* Malformed entries and headers, one defect each (the safetensors format: dtype a string, shape
 * an array of at most 8 dims in our reader, a JSON header of at least "{}"). */
static void check_entry_defects(void) {
    static const struct {
        const char *hdr;
        uint64_t hdr_len;
        const char *substring;
    } cases[] = {
        {"{\"t\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 0, "missing or non-string dtype"},
        {"{\"t\": {\"dtype\": 7, \"shape\": [1], \"data_offsets\": [0, 4]}}", 0,
         "missing or non-string dtype"},
        {"{\"t\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 0,
         "missing or non-array shape"},
        {"{\"t\": {\"dtype\": \"F32\", \"shape\": 1, \"data_offsets\": [0, 4]}}", 0,
         "missing or non-array shape"},
        {"{\"t\": {\"dtype\": \"F32\", \"shape\": [1,1,1,1,1,1,1,1,1], \"data_offsets\": [0, 4]}}",
         0, "rank above 8"},
        {"{", 1, "too small"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char msg[512];
        int st = st_status(cases[i].hdr, cases[i].hdr_len, 4, msg, sizeof msg);
        CHECK_MSG(st == G4V_ERR_MODEL, "case %zu: status %d: %s", i, st, msg);
        CHECK_CONTAINS(msg, cases[i].substring);
    }
}

/* config.json that is a directory: refused as I/O before anything is read. */
static void check_config_not_a_file(void) {
    char dir[] = "/tmp/g4v_cfgdir_XXXXXX", sub[64];
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(sub, sizeof sub, "%s/config.json", dir);
    REQUIRE(mkdir(sub, 0755) == 0);
    g4v_checkpoint *ck = NULL;
    g4v_err err;
    int st = g4v_checkpoint_open(dir, NULL, &ck, &err);
    CHECK_MSG(st == G4V_ERR_IO && !ck, "status %d: %s", st, err.msg);
    CHECK_CONTAINS(err.msg, "not a regular file");
    rmdir(sub);
    rmdir(dir);
}

/* Every allocation of an open failing in turn: NOMEM each time (no crash, no leak under ASan),
 * then success. Only meaningful when the library counts allocations. */
static void check_alloc_failures(const char *fx, const char *name) {
#ifdef G4V_FAULT_INJECTION
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", fx, name);
    int ok = 0;
    for (long n = 0; n < 10000 && !ok; n++) {
        g4v_err err;
        g4v_checkpoint *ck;
        g4v_alloc_fail_after(n);
        int st = g4v_checkpoint_open(dir, NULL, &ck, &err);
        g4v_alloc_fail_after(-1);
        if (st == G4V_OK) {
            g4v_checkpoint_close(ck);
            ok = 1;
        } else {
            CHECK_MSG(st == G4V_ERR_NOMEM, "%s: allocation %ld failing gave %s: %s", name, n,
                      g4v_status_name(st), err.msg);
        }
    }
    CHECK_MSG(ok, "%s: never succeeded", name);
#else
    (void)fx;
    (void)name;
#endif
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_checkpoint FIXTURE_DIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", argv[1]);
    cJSON *m = load_json(path);
    if (!m) {
        fprintf(stderr, "%s: cannot read (run io_cases.py %s first)\n", path, argv[1]);
        return 2;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "good")) check_good(c);
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "bad")) check_bad(c);
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(m, "gguf_good")) check_gguf_good(c);
    check_gguf_limits(argv[1]);
    cJSON_Delete(m);
    check_limits(argv[1]);
    check_variants();
    check_single_tensor_range();
    check_entry_defects();
    check_config_not_a_file();
    check_alloc_failures(argv[1], "tiny_base");
    check_alloc_failures(argv[1], "tiny_shards3_mlx_f16");
    check_alloc_failures(argv[1], "tiny_sidecar_hf_bf16");
    check_alloc_failures(argv[1], "gguf/tiny_bf16.gguf");   /* narrowed patch embedding */
    check_alloc_failures(argv[1], "gguf/tiny_q8_0.gguf");   /* Q8_0 widened */
    check_alloc_failures(argv[1], "gguf/unified_f16.gguf"); /* 12B permutations */
    check_alloc_failures(argv[1], "gguf/one_mmproj");       /* found in a directory */
    return test_summary("test_checkpoint");
}
