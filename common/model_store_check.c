/* model_store_check.c - whether a file a store holds is a Gemma 4 model g4v can use, decided
 * from its metadata only (no weight is read): config.json's model_type and the weight files it
 * needs for a checkpoint; general.architecture, the projector type and the v.* tensors for a GGUF
 * (the header read by libg4v's own GGUF reader, through g4v_gguf_read_info). A "why" says what is
 * wrong and what to do about it. */
#include "frontend.h"
#include "model_store_internal.h"

#include "g4v.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MS_MAX_JSON (16u << 20)

/* The whole of a file of at most max bytes into a malloc'ed buffer; NULL with the reason. */
static char *read_small_file(const char *path, size_t max, size_t *n, char *why, size_t cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return ms_msg(why, cap, "cannot open %s: %s", path, strerror(errno)), NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fileno(f), &st) || st.st_size < 0) {
        ms_msg(why, cap, "cannot read %s: %s", path, strerror(errno));
    } else if ((uint64_t)st.st_size > max) {
        ms_msg(why, cap, "%s is %lld bytes, over the %zu a model's JSON file may have", path,
               (long long)st.st_size, max);
    } else if (!(buf = malloc((size_t)st.st_size + 1))) {
        ms_msg(why, cap, "out of memory reading %s", path);
    } else if ((*n = fread(buf, 1, (size_t)st.st_size, f)) != (size_t)st.st_size) {
        ms_msg(why, cap, "cannot read %s: short read", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

cJSON *ms_read_json(const char *path, char *why, size_t cap) {
    size_t n = 0;
    char *buf = read_small_file(path, MS_MAX_JSON, &n, why, cap);
    if (!buf) return NULL;
    cJSON *j = fe_json_parse_text(buf, n, NULL);
    free(buf);
    if (!j) ms_msg(why, cap, "%s is not valid JSON", path);
    return j;
}

/* A file of the snapshot that is a symlink to nothing: its blob never finished. */
static int dangling(const char *dir, char *name, size_t cap) {
    char **v;
    int n, found = 0;
    if (ms_names(dir, &v, &n)) return 0;
    for (int i = 0; i < n && !found; i++) {
        char p[MS_PATH_MAX];
        struct stat st;
        if (!ms_fmt(p, sizeof p, "%s/%s", dir, v[i]) && lstat(p, &st) == 0 &&
            S_ISLNK(st.st_mode) && stat(p, &st) != 0) {
            ms_msg(name, cap, "%s", v[i]);
            found = 1;
        }
    }
    ms_names_free(v, n);
    return found;
}

/* The shards model.safetensors.index.json names: all present, else the first missing one. */
static int shards_present(const char *dir, const char *index, char *missing, size_t cap) {
    char why[512];
    cJSON *j = ms_read_json(index, why, sizeof why);
    if (!j) {
        ms_msg(missing, cap, "model.safetensors.index.json (%s)", why);
        return 0;
    }
    const cJSON *wm = cJSON_GetObjectItemCaseSensitive(j, "weight_map"), *e;
    int ok = cJSON_IsObject(wm);
    if (!ok) ms_msg(missing, cap, "the weight_map of model.safetensors.index.json");
    cJSON_ArrayForEach(e, wm) {
        char p[MS_PATH_MAX];
        if (!ok || !cJSON_IsString(e)) continue;
        if (ms_fmt(p, sizeof p, "%s/%s", dir, e->valuestring) || !ms_is_file(p)) {
            ms_msg(missing, cap, "%s", e->valuestring);
            ok = 0;
        }
    }
    cJSON_Delete(j);
    return ok;
}

int ms_check_checkpoint(const char *dir, char *why, size_t cap) {
    char p[MS_PATH_MAX], name[512];
    if (dangling(dir, name, sizeof name)) {
        ms_msg(why, cap, "incomplete download: %s/%s points to a blob that is not there; "
                           "finish the download", dir, name);
        return 0;
    }
    if (ms_fmt(p, sizeof p, "%s/config.json", dir) || !ms_is_file(p)) {
        ms_msg(why, cap, "no config.json in %s", dir);
        return 0;
    }
    cJSON *j = ms_read_json(p, why, cap);
    if (!j) return 0;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(j, "model_type");
    int ok = cJSON_IsString(mt) && !strncmp(mt->valuestring, "gemma4", 6);
    if (!ok)
        ms_msg(why, cap, "not Gemma 4: config.json model_type is %s%s%s",
               cJSON_IsString(mt) ? "\"" : "", cJSON_IsString(mt) ? mt->valuestring : "absent",
               cJSON_IsString(mt) ? "\"" : "");
    cJSON_Delete(j);
    if (!ok) return 0;
    char idx[MS_PATH_MAX], side[MS_PATH_MAX];
    if (ms_fmt(p, sizeof p, "%s/model.safetensors", dir) ||
        ms_fmt(idx, sizeof idx, "%s/model.safetensors.index.json", dir) ||
        ms_fmt(side, sizeof side, "%s/optiq_vision.safetensors", dir))
        return ms_msg(why, cap, "path too long: %s", dir), 0;
    if (ms_is_file(p) || ms_is_file(side)) return 1;
    if (ms_is_file(idx)) {
        if (shards_present(dir, idx, name, sizeof name)) return 1;
        ms_msg(why, cap, "incomplete download: %s is missing from %s; finish the download",
               name, dir);
        return 0;
    }
    ms_msg(why, cap, "no weights in %s (model.safetensors, or model.safetensors.index.json and "
                       "its shards); finish the download", dir);
    return 0;
}

static int read_facts(const char *path, g4v_gguf_info *f, char *why, size_t cap) {
    char msg[512];
    if (g4v_gguf_read_info(path, f, msg, sizeof msg)) {
        ms_msg(why, cap, "not a readable GGUF: %s", msg);
        return -1;
    }
    return 0;
}

int ms_check_mmproj(const char *path, char *why, size_t cap) {
    g4v_gguf_info f;
    if (!ms_is_file(path)) return ms_msg(why, cap, "%s is missing", path), 0;
    if (read_facts(path, &f, why, cap)) return 0;
    if (strcmp(f.architecture, "clip")) {
        ms_msg(why, cap, "%s is not an mmproj (general.architecture \"%s\", not \"clip\")",
               path, f.architecture);
        return 0;
    }
    if (strncmp(f.projector_type, "gemma4", 6)) {
        ms_msg(why, cap, "not Gemma 4: the projector %s has projector_type \"%s\"", path,
               f.projector_type);
        return 0;
    }
    return 1;
}

int ms_check_text(const char *path, int *vision_tensors, int *has_template, char *why,
                  size_t cap) {
    g4v_gguf_info f;
    if (vision_tensors) *vision_tensors = 0;
    if (has_template) *has_template = 0;
    if (!ms_is_file(path)) return ms_msg(why, cap, "%s is missing", path), 0;
    if (read_facts(path, &f, why, cap)) return 0;
    if (vision_tensors) *vision_tensors = (int)f.vision_tensors;
    if (has_template) *has_template = f.has_chat_template;
    if (strncmp(f.architecture, "gemma4", 6)) {
        ms_msg(why, cap, "not Gemma 4: %s has general.architecture \"%s\"", path,
               f.architecture);
        return 0;
    }
    return 1;
}

void ms_judge(ms_model *m, int want) {
    m->usable = 1;
    m->why[0] = 0;
    if ((want & MS_WANT_VISION) && m->vision[0]) {
        m->usable = !strcmp(m->vision_kind, "checkpoint")
                        ? ms_check_checkpoint(m->vision, m->why, sizeof m->why)
                        : ms_check_mmproj(m->vision, m->why, sizeof m->why);
        if (!m->usable) return;
    }
    if ((want & MS_WANT_TEXT) && m->text[0]) {
        int tmpl = 0;
        m->usable = ms_check_text(m->text, NULL, &tmpl, m->why, sizeof m->why);
        if (!tmpl && !strcmp(m->tmpl_kind, "gguf")) /* no tokenizer.chat_template in it */
            m->tmpl[0] = m->tmpl_kind[0] = 0;
    }
    if (m->usable && !m->vision[0] && !m->text[0]) {
        m->usable = 0;
        ms_msg(m->why, sizeof m->why, "no model files (config.json + safetensors, or GGUF)");
    }
}
