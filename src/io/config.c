/* config.c - config.json -> g4v_vision_config (see config.h). */
#include "io/config.h"

#include "io/json_file.h"

#include <stdio.h>
#include <string.h>

const char *g4v_model_kind_name(g4v_model_kind kind) {
    return kind == G4V_KIND_UNIFIED ? "unified" : "tower";
}

const char *g4v_config_variant(int D, int T) {
    if (D == 768 && T == 1536) return "e2b";
    if (D == 768 && T == 2560) return "e4b";
    if (D == 1152 && T == 2816) return "26b-a4b";
    if (D == 1152 && T == 5376) return "31b";
    return "custom";
}

typedef struct int_key {
    const char *key;
    int64_t lo, hi, def;
    int *dst;
} int_key;

static int read_ints(const cJSON *obj, const char *what, const int_key *keys, size_t n,
                     g4v_err *err) {
    for (size_t i = 0; i < n; i++) {
        int64_t v = keys[i].def;
        int st = g4v_json_int_field(obj, keys[i].key, keys[i].lo, keys[i].hi, what, &v, err);
        if (st) return st;
        *keys[i].dst = (int)v;
    }
    return G4V_OK;
}

static int check_string(const cJSON *obj, const char *key, const char *what,
                        const char *const *allowed, int status, g4v_err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return G4V_OK;
    if (!cJSON_IsString(v))
        return g4v_fail(err, G4V_ERR_MODEL, "%s.%s must be a string", what, key);
    for (const char *const *a = allowed; *a; a++)
        if (!strcmp(v->valuestring, *a)) return G4V_OK;
    char shown[64];
    snprintf(shown, sizeof shown, "%s", v->valuestring);
    return g4v_fail(err, status, "%s.%s is '%s'; supported: %s%s%s", what, key, shown, allowed[0],
                    allowed[1] ? ", " : "", allowed[1] ? allowed[1] : "");
}

/* torch.nn.LayerNorm's default: HF builds the unified embedder's three LayerNorms without an eps
 * argument and no config key sets it (docs/NUMERICS.md §9.2). */
#define UNIFIED_LAYER_NORM_EPS 1e-5

/* The unified model's vision_config (HF Gemma4UnifiedVisionConfig, docs/NUMERICS.md §9.1). */
static int parse_unified(const cJSON *vc, const char *what, g4v_vision_config *cfg, g4v_err *err) {
    int st;
    int model_patch = 0, proj_dims = 0;
    const int64_t dim = 65536;
    const int_key keys[] = {
        {"mm_embed_dim", 1, dim, 3840, &cfg->hidden_size},
        {"mm_posemb_size", 1, 1 << 20, 1120, &cfg->position_embedding_size},
        {"patch_size", 1, 256, 16, &cfg->patch_size},
        {"pooling_kernel_size", 1, 64, 3, &cfg->pooling_kernel_size},
        {"model_patch_size", 0, 1 << 14, 0, &model_patch},
        {"output_proj_dims", 0, dim, 0, &proj_dims},
        {"num_soft_tokens", 1, 1 << 20, 280, &cfg->default_output_length},
    };
    if ((st = read_ints(vc, what, keys, sizeof keys / sizeof keys[0], err))) return st;
    int side = cfg->patch_size * cfg->pooling_kernel_size;
    if (model_patch && model_patch != side)
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: model_patch_size %d is not patch_size x pooling_kernel_size = %d",
                        what, model_patch, side);
    if (proj_dims && proj_dims != cfg->hidden_size)
        return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                        "%s: output_proj_dims %d differs from mm_embed_dim %d (the projection "
                        "reads the embedder's output directly)",
                        what, proj_dims, cfg->hidden_size);
    cfg->kind = G4V_KIND_UNIFIED;
    cfg->rms_norm_eps = 1e-6;
    cfg->layer_norm_eps = UNIFIED_LAYER_NORM_EPS;
    return g4v_json_double_field(vc, "rms_norm_eps", 0.0, 1.0, what, &cfg->rms_norm_eps, err);
}

/* Unified when vision_config says gemma4_unified_vision, or says nothing and the top-level
 * model_type is gemma4_unified. */
static int is_unified(const cJSON *root, const cJSON *vc) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(vc, "model_type");
    if (cJSON_IsString(v)) return !strcmp(v->valuestring, "gemma4_unified_vision");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    return cJSON_IsString(t) && !strcmp(t->valuestring, "gemma4_unified");
}

static int parse_vision(const cJSON *vc, const char *path, g4v_vision_config *cfg, g4v_err *err) {
    char what[4200];
    snprintf(what, sizeof what, "%s: vision_config", path);
    static const char *const model_types[] = {"gemma4_vision", "gemma4_unified_vision", NULL};
    static const char *const acts[] = {"gelu_pytorch_tanh", "gelu_tanh", "gelu_new", NULL};
    static const char *const ropes[] = {"default", "axial", NULL};
    int st = check_string(vc, "model_type", what, model_types, G4V_ERR_UNSUPPORTED, err);
    if (!st) st = check_string(vc, "hidden_activation", what, acts, G4V_ERR_UNSUPPORTED, err);
    if (st) return st;
    const int64_t dim = 65536;
    const int_key keys[] = {
        {"hidden_size", 1, dim, 768, &cfg->hidden_size},
        {"intermediate_size", 1, dim, 3072, &cfg->intermediate_size},
        {"num_hidden_layers", 1, 1024, 16, &cfg->num_layers},
        {"num_attention_heads", 1, 4096, 12, &cfg->num_heads},
        {"num_key_value_heads", 1, 4096, 12, &cfg->num_kv_heads},
        {"head_dim", 1, dim, 64, &cfg->head_dim},
        {"patch_size", 1, 256, 16, &cfg->patch_size},
        {"pooling_kernel_size", 1, 64, 3, &cfg->pooling_kernel_size},
        {"position_embedding_size", 1, 1 << 20, 10240, &cfg->position_embedding_size},
        {"default_output_length", 1, 1 << 20, 280, &cfg->default_output_length},
    };
    if ((st = read_ints(vc, what, keys, sizeof keys / sizeof keys[0], err))) return st;
    if (cfg->num_heads % cfg->num_kv_heads)
        return g4v_fail(
            err, G4V_ERR_MODEL,
            "%s: num_attention_heads (%d) is not a multiple of num_key_value_heads (%d)", what,
            cfg->num_heads, cfg->num_kv_heads);
    if ((int64_t)cfg->num_heads * cfg->head_dim > dim)
        return g4v_fail(err, G4V_ERR_MODEL, "%s: num_attention_heads x head_dim above %lld", what,
                        (long long)dim);
    cfg->rms_norm_eps = 1e-6;
    cfg->rope_theta = 100.0;
    if ((st = g4v_json_double_field(vc, "rms_norm_eps", 0.0, 1.0, what, &cfg->rms_norm_eps, err)))
        return st;
    /* Older configs keep rope_theta at the top of vision_config; newer ones in rope_parameters. */
    if ((st = g4v_json_double_field(vc, "rope_theta", 1e-3, 1e12, what, &cfg->rope_theta, err)))
        return st;
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(vc, "rope_parameters");
    if (rp && !cJSON_IsNull(rp)) {
        char rwhat[4300];
        snprintf(rwhat, sizeof rwhat, "%s.rope_parameters", what);
        if (!cJSON_IsObject(rp)) return g4v_fail(err, G4V_ERR_MODEL, "%s must be an object", rwhat);
        if ((st = check_string(rp, "rope_type", rwhat, ropes, G4V_ERR_UNSUPPORTED, err))) return st;
        if ((st =
                 g4v_json_double_field(rp, "rope_theta", 1e-3, 1e12, rwhat, &cfg->rope_theta, err)))
            return st;
    }
    cfg->use_clipped_linears = 0;
    cfg->standardize = 0;
    if ((st = g4v_json_bool_field(vc, "use_clipped_linears", what, &cfg->use_clipped_linears, err)))
        return st;
    return g4v_json_bool_field(vc, "standardize", what, &cfg->standardize, err);
}

int g4v_config_parse(const cJSON *root, const char *path, g4v_vision_config *cfg, g4v_err *err) {
    memset(cfg, 0, sizeof *cfg);
    if (!cJSON_IsObject(root)) return g4v_fail(err, G4V_ERR_MODEL, "%s: not a JSON object", path);
    const cJSON *vc = cJSON_GetObjectItemCaseSensitive(root, "vision_config");
    if (!cJSON_IsObject(vc))
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: no vision_config object (not a Gemma 4 multimodal checkpoint?)", path);
    int st;
    if (is_unified(root, vc)) {
        char what[4200];
        snprintf(what, sizeof what, "%s: vision_config", path);
        st = parse_unified(vc, what, cfg, err);
    } else
        st = parse_vision(vc, path, cfg, err);
    if (st) return st;

    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(root, "text_config");
    int64_t T = -1;
    if (cJSON_IsObject(tc)) {
        char what[4200];
        snprintf(what, sizeof what, "%s: text_config", path);
        if ((st = g4v_json_int_field(tc, "hidden_size", 1, 1 << 17, what, &T, err))) return st;
    }
    if (T < 0)
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: text_config.hidden_size is missing (needed for the width of "
                        "embed_vision.embedding_projection)",
                        path);
    cfg->text_hidden_size = (int)T;

    /* docs/NUMERICS.md §5.1 defaults; config.json wins when it has them. */
    int64_t ids[4] = {258880, 255999, 258882, 258884};
    const char *names[4] = {"image_token_id", "boi_token_id", "eoi_token_id", "video_token_id"};
    char what[4200];
    snprintf(what, sizeof what, "%s: config", path);
    for (int i = 0; i < 4; i++)
        if ((st = g4v_json_int_field(root, names[i], 0, INT32_MAX, what, &ids[i], err))) return st;
    cfg->image_token_id = (int32_t)ids[0];
    cfg->boi_token_id = (int32_t)ids[1];
    cfg->eoi_token_id = (int32_t)ids[2];
    cfg->video_token_id = (int32_t)ids[3];

    if (cfg->kind == G4V_KIND_UNIFIED)
        snprintf(cfg->variant, sizeof cfg->variant, "%s",
                 cfg->hidden_size == 3840 && cfg->text_hidden_size == 3840 ? "12b" : "custom");
    else
        snprintf(cfg->variant, sizeof cfg->variant, "%s",
                 g4v_config_variant(cfg->hidden_size, cfg->text_hidden_size));
    return G4V_OK;
}
