/* fuzz_config.c - the input is a config.json.
 *
 * In memory: g4v_json_parse + g4v_config_parse, and for an accepted config the wanted-tensor list
 * built from it (g4v_wanted_build: sorted, unique names that g4v_wanted_find finds again, with
 * and without "model."). Then on disk: the input as config.json beside the committed micro
 * model.safetensors (fuzz/data/micro) through g4v_checkpoint_open, so a config that disagrees
 * with the weights must be refused cleanly. Accepted values are checked against the documented
 * ranges (config.h, docs/LIMITS.md).
 */
#include "fuzz_common.h"

#include "base/alloc.h"
#include "io/config.h"
#include "io/json_file.h"
#include "io/model_source.h"
#include "io/names.h"

#include <stdio.h>
#include <string.h>

static void check_config(const g4v_vision_config *c) {
    FZ_ASSERT(c->hidden_size >= 1 && c->hidden_size <= 65536 && c->intermediate_size >= 1 &&
                  c->intermediate_size <= 65536 && c->head_dim >= 1 && c->head_dim <= 65536,
              "dimensions out of range: D %d I %d d %d", c->hidden_size, c->intermediate_size,
              c->head_dim);
    FZ_ASSERT(c->num_layers >= 1 && c->num_layers <= 1024, "layers %d", c->num_layers);
    FZ_ASSERT(c->num_heads >= 1 && c->num_kv_heads >= 1 && c->num_heads % c->num_kv_heads == 0,
              "heads %d / %d", c->num_heads, c->num_kv_heads);
    FZ_ASSERT((long long)c->num_heads * c->head_dim <= 65536, "H x d too large");
    FZ_ASSERT(c->patch_size >= 1 && c->pooling_kernel_size >= 1 &&
                  c->position_embedding_size >= 1 && c->text_hidden_size >= 1,
              "non-positive size");
    FZ_ASSERT(c->rms_norm_eps >= 0 && c->rms_norm_eps <= 1 && c->rope_theta > 0,
              "eps %g theta %g", c->rms_norm_eps, c->rope_theta);
    FZ_ASSERT(memchr(c->variant, '\0', sizeof c->variant) != NULL, "variant unterminated");
}

static void check_wanted(const g4v_vision_config *cfg) {
    g4v_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    ck.cfg = *cfg;
    ck.layers = g4v_calloc((size_t)cfg->num_layers, sizeof *ck.layers);
    g4v_tensor *clips = g4v_calloc((size_t)cfg->num_layers * G4V_LIN_COUNT * 4, sizeof *clips);
    FZ_ASSERT(ck.layers && clips, "out of memory");
    g4v_wanted *w = NULL;
    size_t n = 0;
    g4v_err err;
    int st = g4v_wanted_build(cfg, &ck, clips, &w, &n, &err);
    if (st) {
        fz_check_failure(st, &err, "g4v_wanted_build");
    } else {
        for (size_t i = 0; i < n; i++) {
            FZ_ASSERT(memchr(w[i].name, '\0', sizeof w[i].name), "name %zu unterminated", i);
            FZ_ASSERT(i == 0 || strcmp(w[i - 1].name, w[i].name) < 0, "names not sorted/unique: "
                      "%s, %s", w[i - 1].name, w[i].name);
            FZ_ASSERT(w[i].dst != NULL, "%s: no destination", w[i].name);
            int prefixed = -1;
            FZ_ASSERT(g4v_wanted_find(w, n, w[i].name, &prefixed) == &w[i] && prefixed == 0,
                      "%s not found", w[i].name);
            char pre[G4V_NAME_MAX + 8];
            snprintf(pre, sizeof pre, "model.%s", w[i].name);
            FZ_ASSERT(g4v_wanted_find(w, n, pre, &prefixed) == &w[i] && prefixed == 1,
                      "%s not found", pre);
        }
    }
    g4v_free(w);
    g4v_free(clips);
    g4v_free(ck.layers);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[512];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s", fz_workdir());
        fz_copy_data("micro", "model.safetensors", dir);
    }
    g4v_err err;
    cJSON *root = g4v_json_parse((const char *)data, size, "config.json", &err);
    if (!root) {
        fz_check_failure(err.status, &err, "g4v_json_parse");
    } else {
        g4v_vision_config cfg;
        int st = g4v_config_parse(root, "config.json", &cfg, &err);
        if (st) {
            fz_check_failure(st, &err, "g4v_config_parse");
        } else {
            check_config(&cfg);
            check_wanted(&cfg);
        }
        cJSON_Delete(root);
    }

    fz_write(dir, "config.json", data, size);
    g4v_checkpoint *ck = NULL;
    int st = g4v_checkpoint_open(dir, NULL, &ck, &err);
    if (st) {
        fz_check_failure(st, &err, "g4v_checkpoint_open");
        FZ_ASSERT(ck == NULL, "failed open returned a checkpoint");
    } else {
        check_config(&ck->cfg);
        g4v_checkpoint_close(ck);
    }
    return 0;
}
