/* info_json.c - the parts of g4v info --json and GET /v1/info that are one object in both
 * (frontend.h): "amx" and "sharpness", from g4v_model_info. */
#include "frontend.h"

#include <cjson/cJSON.h>
#include <stdio.h>

int fe_info_amx_json(struct cJSON *parent, const g4v_model_info *m) {
    cJSON *amx = cJSON_AddObjectToObject(parent, "amx");
    return amx && cJSON_AddBoolToObject(amx, "usable", m->amx_usable) &&
           cJSON_AddStringToObject(amx, "reason", m->amx) &&
           cJSON_AddStringToObject(amx, "self_test", m->amx_self_test);
}

int fe_info_sharpness_json(struct cJSON *parent, const g4v_model_info *m) {
    cJSON *s = cJSON_AddObjectToObject(parent, "sharpness");
    int ok = s && cJSON_AddNumberToObject(s, "threshold", m->sharp_threshold) &&
             cJSON_AddNumberToObject(s, "sharp_layers", m->n_sharp) &&
             cJSON_AddNumberToObject(s, "precise_layers", m->n_precise);
    cJSON *layers = ok ? cJSON_AddArrayToObject(s, "layers") : NULL;
    ok = layers != NULL;
    for (int i = 0; ok && i < m->n_layers_listed; i++) {
        cJSON *l = cJSON_CreateObject();
        ok = l && cJSON_AddNumberToObject(l, "layer", i) &&
             cJSON_AddNumberToObject(l, "sharpness", (double)m->layer_sharpness[i]) &&
             cJSON_AddBoolToObject(l, "sharp", m->layer_sharpness[i] > m->sharp_threshold) &&
             cJSON_AddBoolToObject(l, "runs_precise", m->layer_precise[i]);
        if (l && !cJSON_AddItemToArray(layers, l)) {
            cJSON_Delete(l);
            ok = 0;
        }
    }
    return ok;
}

void fe_info_sharpness_line(const g4v_model_info *m, char *buf, size_t cap) {
    if (!cap) return;
    size_t n = (size_t)snprintf(buf, cap, "%d of %d layers sharp (logit std > %.1f), %d run as "
                                          "PRECISE",
                                m->n_sharp, m->num_layers, m->sharp_threshold, m->n_precise);
    const char *sep = ": ";
    for (int i = 0; i < m->n_layers_listed && n < cap; i++) {
        if (!m->layer_precise[i] || m->math == G4V_MATH_PRECISE) continue;
        n += (size_t)snprintf(buf + n, cap - n, "%s%d", sep, i);
        sep = ",";
    }
}
