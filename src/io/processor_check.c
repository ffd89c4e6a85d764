/* processor_check.c - the processor's pipeline keys against libg4v's (see processor_check.h). */
#include "io/processor_check.h"

#include "io/json_file.h"

#include <math.h>
#include <stdio.h>

#define RESAMPLE_BICUBIC 3 /* PIL.Image.Resampling.BICUBIC, what Gemma 4's processors use */

static int unsupported(g4v_err *err, const char *path, const char *obj, const char *key,
                       const char *found, const char *want) {
    return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                    "%s: %s.%s is %s; libg4v implements only %s (the published Gemma 4 "
                    "pipeline, docs/PREPROCESSING.md)",
                    path, obj, key, found, want);
}

/* obj.key, an array of 3 numbers all equal to want; absent is fine. */
static int check_triple(const cJSON *obj, const char *key, double want, const char *path,
                        const char *name, g4v_err *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return G4V_OK;
    int n = cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
    if (n != 3 && !cJSON_IsNumber(v))
        return g4v_fail(err, G4V_ERR_MODEL, "%s: %s.%s must be a number or 3 numbers", path, name,
                        key);
    char found[96] = "", want_s[48];
    snprintf(want_s, sizeof want_s, "%g (every channel)", want);
    for (int i = 0; i < (n == 3 ? 3 : 1); i++) {
        const cJSON *x = n == 3 ? cJSON_GetArrayItem(v, i) : v;
        if (!cJSON_IsNumber(x))
            return g4v_fail(err, G4V_ERR_MODEL, "%s: %s.%s must hold numbers", path, name, key);
        if (x->valuedouble != want) {
            snprintf(found, sizeof found, "%g in channel %d", x->valuedouble, i);
            return unsupported(err, path, name, key, found, want_s);
        }
    }
    return G4V_OK;
}

static int check_one(const cJSON *obj, const char *name, const char *path,
                     const g4v_vision_config *cfg, g4v_err *err) {
    if (!cJSON_IsObject(obj)) return G4V_OK;
    char what[4300];
    snprintf(what, sizeof what, "%s: %s", path, name);
    int rescale = 1, resize = 1, normalize = 0, st;
    if ((st = g4v_json_bool_field(obj, "do_rescale", what, &rescale, err)) ||
        (st = g4v_json_bool_field(obj, "do_resize", what, &resize, err)) ||
        (st = g4v_json_bool_field(obj, "do_normalize", what, &normalize, err)))
        return st;
    if (!rescale) return unsupported(err, path, name, "do_rescale", "false", "true");
    if (!resize) return unsupported(err, path, name, "do_resize", "false", "true");
    double factor = 1.0 / 255.0;
    if ((st = g4v_json_double_field(obj, "rescale_factor", 0.0, 1e9, what, &factor, err)))
        return st;
    if (fabs(factor * 255.0 - 1.0) > 1e-9) {
        char found[32];
        snprintf(found, sizeof found, "%.17g", factor);
        return unsupported(err, path, name, "rescale_factor", found, "1/255");
    }
    if (normalize) { /* the video processor normalizes, by the identity */
        if ((st = check_triple(obj, "image_mean", 0.0, path, name, err)) ||
            (st = check_triple(obj, "image_std", 1.0, path, name, err)))
            return st;
    }
    int64_t resample = RESAMPLE_BICUBIC, patch = cfg->patch_size, pool = cfg->pooling_kernel_size;
    if ((st = g4v_json_int_field(obj, "resample", 0, 5, what, &resample, err)) ||
        (st = g4v_json_int_field(obj, "patch_size", 1, 1024, what, &patch, err)) ||
        (st = g4v_json_int_field(obj, "pooling_kernel_size", 1, 1024, what, &pool, err)))
        return st;
    char found[32], want[48];
    if (resample != RESAMPLE_BICUBIC) {
        snprintf(found, sizeof found, "%lld", (long long)resample);
        return unsupported(err, path, name, "resample", found, "3 (bicubic)");
    }
    if (patch != cfg->patch_size || pool != cfg->pooling_kernel_size) {
        int p = patch != cfg->patch_size;
        snprintf(found, sizeof found, "%lld", (long long)(p ? patch : pool));
        snprintf(want, sizeof want, "%d (config.json's)", p ? cfg->patch_size
                                                              : cfg->pooling_kernel_size);
        return unsupported(err, path, name, p ? "patch_size" : "pooling_kernel_size", found, want);
    }
    return G4V_OK;
}

int g4v_processor_check(const cJSON *proc, const char *path, const g4v_vision_config *cfg,
                        g4v_err *err) {
    if (!proc) return G4V_OK;
    int st = check_one(cJSON_GetObjectItemCaseSensitive(proc, "image_processor"),
                       "image_processor", path, cfg, err);
    if (!st)
        st = check_one(cJSON_GetObjectItemCaseSensitive(proc, "video_processor"),
                       "video_processor", path, cfg, err);
    return st;
}
