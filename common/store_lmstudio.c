/* store_lmstudio.c - LM Studio's models folder: ~/.lmstudio/models/{publisher}/{repo}/NAME.gguf
 * (older installs: ~/.cache/lm-studio/models), the mmproj GGUF beside the text GGUFs. A model is
 * named "publisher/repo" as on the hub, ":QUANT" picking the text GGUF. */
#include "model_store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ms_lms_dirs(char (*dirs)[MS_PATH_MAX], int max) {
    const char *home = getenv("HOME");
    static const char *sub[] = {".lmstudio/models", ".cache/lm-studio/models"};
    int n = 0;
    for (size_t i = 0; home && *home && i < sizeof sub / sizeof sub[0] && n < max; i++)
        if (!ms_fmt(dirs[n], MS_PATH_MAX, "%s/%s", home, sub[i])) n++;
    return n;
}

static int fill(ms_model *m, const char *folder, const char *id, const char *quant, char *err,
                size_t ecap) {
    m->source = MS_SRC_LMSTUDIO;
    ms_msg(m->location, sizeof m->location, "%s", folder);
    if (ms_gguf_folder_pick(folder, quant, m->text, sizeof m->text, m->vision, sizeof m->vision,
                            err, ecap))
        return -1;
    if (m->vision[0]) ms_msg(m->vision_kind, sizeof m->vision_kind, "mmproj");
    ms_msg(m->name, sizeof m->name, "%s", id);
    if (m->text[0]) {
        char q[128];
        ms_quant_of(strrchr(m->text, '/') + 1, q, sizeof q);
        size_t l = strlen(m->name);
        ms_msg(m->name + l, sizeof m->name - l, ":%s", q);
        ms_msg(m->tmpl, sizeof m->tmpl, "%s", m->text);
        ms_msg(m->tmpl_kind, sizeof m->tmpl_kind, "gguf");
    }
    m->bytes = ms_file_size(m->text) + ms_file_size(m->vision);
    return 0;
}

int ms_lms_find(const char *org, const char *name, const char *quant, const char *revision,
                int want, ms_model *m, char *looked, size_t lcap, char *err, size_t ecap) {
    (void)revision;
    char dirs[2][MS_PATH_MAX];
    int nd = ms_lms_dirs(dirs, 2);
    size_t o = 0;
    memset(m, 0, sizeof *m);
    looked[0] = 0;
    for (int i = 0; i < nd; i++) {
        char pub[MS_PATH_MAX], folder[MS_PATH_MAX], id[1024];
        if (ms_find_ci(dirs[i], org, pub, sizeof pub) && ms_is_dir(pub) &&
            ms_find_ci(pub, name, folder, sizeof folder) && ms_is_dir(folder)) {
            const char *p = strrchr(pub, '/') + 1, *r = strrchr(folder, '/') + 1;
            ms_msg(id, sizeof id, "%s/%s", p, r);
            char why[1024];
            if (fill(m, folder, id, quant, why, sizeof why)) {
                ms_msg(err, ecap, "%s: %s", id, why);
                return MS_ERR_UNUSABLE;
            }
            ms_judge(m, want);
            return MS_OK;
        }
        if (o < lcap) o += (size_t)ms_msg(looked + o, lcap - o, "%s%s", o ? ", " : "", dirs[i]);
    }
    if (o < lcap) ms_msg(looked + o, lcap - o, "%s (no %s/%s)", o ? "" : "HOME not set", org,
                         name);
    return MS_ERR_NOT_FOUND;
}

int ms_lms_list(ms_list *l, int all) {
    char dirs[2][MS_PATH_MAX];
    int nd = ms_lms_dirs(dirs, 2), rc = 0;
    for (int d = 0; d < nd && !rc; d++) {
        char **pv;
        int np;
        if (ms_names(dirs[d], &pv, &np)) continue;
        for (int p = 0; p < np && !rc; p++) {
            char pub[MS_PATH_MAX];
            char **rv;
            int nr;
            if (ms_fmt(pub, sizeof pub, "%s/%s", dirs[d], pv[p]) || ms_names(pub, &rv, &nr))
                continue;
            for (int r = 0; r < nr && !rc; r++) {
                char folder[MS_PATH_MAX], id[1024], err[512];
                char **tv;
                int nt = 0;
                ms_msg(id, sizeof id, "%s/%s", pv[p], rv[r]);
                if ((!all && !ms_name_is_gemma4(id)) ||
                    ms_fmt(folder, sizeof folder, "%s/%s", pub, rv[r]) || !ms_is_dir(folder))
                    continue;
                ms_gguf_folder_texts(folder, &tv, &nt);
                for (int t = 0; t < (nt ? nt : 1) && !rc; t++) {
                    ms_model m;
                    char q[128] = "";
                    memset(&m, 0, sizeof m);
                    if (nt) ms_quant_of(tv[t], q, sizeof q);
                    if (fill(&m, folder, id, q, err, sizeof err)) continue;
                    ms_judge(&m, MS_WANT_ANY);
                    rc = ms_list_push(l, &m);
                }
                ms_names_free(tv, nt);
            }
            ms_names_free(rv, nr);
        }
        ms_names_free(pv, np);
    }
    return rc;
}
