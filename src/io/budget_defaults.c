/* budget_defaults.c - default soft-token budgets from config.json / processor_config.json (see
 * budget_defaults.h for the keys and their precedence). */
#include "io/budget_defaults.h"

#include "io/fsutil.h"
#include "io/json_file.h"
#include "io/processor_check.h"

#include "g4v.h"
#include <stdio.h>
#include <string.h>

#define PROCESSOR_FILE "processor_config.json"
#define MAX_TOKENS (1 << 20)

void g4v_budget_defaults_builtin(g4v_vision_config *cfg) {
    cfg->default_budget = G4V_DEFAULT_BUDGET;
    snprintf(cfg->default_budget_from, sizeof cfg->default_budget_from, "built-in default");
    cfg->default_video_budget = G4V_DEFAULT_VIDEO_BUDGET;
    cfg->default_video_frames = G4V_DEFAULT_VIDEO_FRAMES;
}

/* obj.key as an integer in [1, MAX_TOKENS] into *out; 0 when absent (or null, or obj is not an
 * object). Messages name it "file: name.key" (name: the object, "processor"/"config" for the
 * top level, as config.c does). */
static int read_count(const cJSON *obj, const char *key, const char *file, const char *name,
                      int *out, g4v_err *err) {
    *out = 0;
    if (!cJSON_IsObject(obj)) return G4V_OK;
    char what[4400];
    snprintf(what, sizeof what, "%s: %s", file, name);
    int64_t v = 0;
    int st = g4v_json_int_field(obj, key, 1, MAX_TOKENS, what, &v, err);
    if (!st) *out = (int)v;
    return st;
}

/* A sub-object of root: NULL when absent or null; not an object -> G4V_ERR_MODEL. */
static int sub_object(const cJSON *root, const char *key, const char *file, const cJSON **out,
                      g4v_err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    *out = NULL;
    if (!v || cJSON_IsNull(v)) return G4V_OK;
    if (!cJSON_IsObject(v))
        return g4v_fail(err, G4V_ERR_MODEL, "%s: %s must be an object", file, key);
    *out = v;
    return G4V_OK;
}

typedef struct budget_key {
    const cJSON *obj;
    const char *key;
    const char *path; /* the file's path, for messages */
    const char *file; /* its name, for default_budget_from */
    const char *name; /* the object: "image_processor", or "processor"/"config" (top level) */
    int top;          /* a top-level key: default_budget_from names the key alone */
} budget_key;

static int pick(const budget_key *keys, int n, g4v_vision_config *cfg, g4v_err *err) {
    for (int i = 0; i < n; i++) {
        int v = 0;
        int st = read_count(keys[i].obj, keys[i].key, keys[i].path, keys[i].name, &v, err);
        if (st) return st;
        /* every key is checked (a wrong type anywhere is reported), the first present wins */
        if (v && cfg->default_budget == 0) {
            cfg->default_budget = v;
            snprintf(cfg->default_budget_from, sizeof cfg->default_budget_from, "%s %s%s%s",
                     keys[i].file, keys[i].top ? "" : keys[i].name, keys[i].top ? "" : ".",
                     keys[i].key);
        }
    }
    return G4V_OK;
}

int g4v_budget_defaults_read(const char *dir, const cJSON *config, const char *config_path,
                             uint64_t max_bytes, g4v_vision_config *cfg, g4v_err *err) {
    g4v_budget_defaults_builtin(cfg);
    char path[4096];
    int st = g4v_path_join(path, sizeof path, dir, PROCESSOR_FILE, err);
    if (st) return st;
    cJSON *proc = NULL;
    if (g4v_is_file(path) && (st = g4v_json_load(path, max_bytes, &proc, err))) return st;
    if (proc && !cJSON_IsObject(proc)) {
        cJSON_Delete(proc);
        return g4v_fail(err, G4V_ERR_MODEL, "%s: not a JSON object", path);
    }
    const cJSON *image = NULL, *video = NULL, *vision = NULL;
    if (proc && !(st = sub_object(proc, "image_processor", path, &image, err)))
        st = sub_object(proc, "video_processor", path, &video, err);
    if (!st) st = sub_object(config, "vision_config", config_path, &vision, err);
    if (st) goto done;
    const char *vision_key =
        cfg->kind == G4V_KIND_UNIFIED ? "num_soft_tokens" : "default_output_length";
    const budget_key keys[] = {
        {image, "max_soft_tokens", path, PROCESSOR_FILE, "image_processor", 0},
        {image, "image_seq_length", path, PROCESSOR_FILE, "image_processor", 0},
        {proc, "image_seq_length", path, PROCESSOR_FILE, "processor", 1},
        {vision, vision_key, config_path, "config.json", "vision_config", 0},
        {config, "vision_soft_tokens_per_image", config_path, "config.json", "config", 1},
    };
    cfg->default_budget = 0;
    if ((st = g4v_processor_check(proc, path, cfg, err))) goto done;
    if ((st = pick(keys, (int)(sizeof keys / sizeof keys[0]), cfg, err))) goto done;
    if (!cfg->default_budget) g4v_budget_defaults_builtin(cfg);
    int v = 0;
    if ((st = read_count(video, "max_soft_tokens", path, "video_processor", &v, err)))
        goto done;
    if (v) cfg->default_video_budget = v;
    if ((st = read_count(video, "num_frames", path, "video_processor", &v, err)))
        goto done;
    if (v) cfg->default_video_frames = v;
done:
    cJSON_Delete(proc);
    return st;
}
