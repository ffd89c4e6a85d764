/* store_ollama.c - Ollama's model store, read as ollama's server/images.go and manifest code lay
 * it out: ROOT/manifests/{host}/{namespace}/{model}/{tag} is a JSON manifest (schemaVersion 2,
 * OCI-like) whose layers[] each have a mediaType, a digest "sha256:<64 hex>" and a size; the
 * layer's bytes are ROOT/blobs/sha256-<hex>. The layers g4v reads:
 *   application/vnd.ollama.image.model      the GGUF of the model (g4v chat's --lm)
 *   application/vnd.ollama.image.projector  the vision projector, a llama.cpp mmproj GGUF
 *   application/vnd.ollama.image.template   the chat template: a Go text/template, not Jinja, so
 *                                           it is only reported (chat uses the GGUF's template)
 * (params, license, system and others are counted in the size only). ROOT is $OLLAMA_MODELS,
 * else ~/.ollama/models and the Linux service's /usr/share/ollama/.ollama/models. A name is
 * [host/][namespace/]model[:tag], default registry.ollama.ai, library, latest.
 * Ollama's own newer Gemma 4 GGUFs hold the vision tower inside the model file in ollama's native
 * layout, with no projector layer: llama.cpp and g4v read neither, so such a tag is unusable. */
#include "model_store_internal.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_HOST "registry.ollama.ai"
#define DEFAULT_NS "library"
#define MT "application/vnd.ollama.image."

int ms_ollama_dirs(char (*dirs)[MS_PATH_MAX], int max) {
    const char *e = getenv("OLLAMA_MODELS"), *home = getenv("HOME");
    int n = 0;
    if (e && *e) return max > 0 && !ms_fmt(dirs[0], MS_PATH_MAX, "%s", e) ? 1 : 0;
    if (home && *home && n < max && !ms_fmt(dirs[n], MS_PATH_MAX, "%s/.ollama/models", home)) n++;
    if (n < max && !ms_fmt(dirs[n], MS_PATH_MAX, "/usr/share/ollama/.ollama/models")) n++;
    return n;
}

static int name_part(const char *s) {
    if (!*s || !strcmp(s, ".") || !strcmp(s, "..")) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._-:", *s)) return 0;
    return 1;
}

/* "gemma4:e4b" -> registry.ollama.ai, library, gemma4, e4b. 0, or -1 for a malformed name. */
static int parse_name(const char *in, char part[4][256]) {
    char s[1024];
    if (ms_fmt(s, sizeof s, "%s", in)) return -1;
    char *slash = strrchr(s, '/'), *colon = strrchr(s, ':');
    ms_msg(part[3], 256, "%s", colon && colon > (slash ? slash : s) ? colon + 1 : "latest");
    if (colon && colon > (slash ? slash : s)) *colon = 0;
    char *seg[4];
    int n = 0;
    for (char *t = strtok(s, "/"); t && n < 4; t = strtok(NULL, "/")) seg[n++] = t;
    if (n < 1 || n > 3 || strtok(NULL, "/")) return -1;
    ms_msg(part[0], 256, "%s", n == 3 ? seg[0] : DEFAULT_HOST);
    ms_msg(part[1], 256, "%s", n >= 2 ? seg[n - 2] : DEFAULT_NS);
    ms_msg(part[2], 256, "%s", seg[n - 1]);
    for (int i = 0; i < 4; i++)
        if (!name_part(part[i]) || (i != 0 && strchr(part[i], ':'))) return -1;
    return 0;
}

/* How ollama prints a name: "gemma4:e4b", "user/model:tag", "host/ns/model:tag". */
static void display_name(const char *host, const char *ns, const char *model, const char *tag,
                         char *out, size_t cap) {
    if (strcasecmp(host, DEFAULT_HOST))
        ms_msg(out, cap, "%s/%s/%s:%s", host, ns, model, tag);
    else if (strcasecmp(ns, DEFAULT_NS))
        ms_msg(out, cap, "%s/%s:%s", ns, model, tag);
    else
        ms_msg(out, cap, "%s:%s", model, tag);
}

/* One layer's blob: its path into out; 0, or -1 with the reason in why. */
static int layer_blob(const char *root, const cJSON *layer, const char *kind, char *out,
                      size_t cap, uint64_t *size, char *why, size_t wcap) {
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(layer, "digest");
    const cJSON *sz = cJSON_GetObjectItemCaseSensitive(layer, "size");
    const char *hex = cJSON_IsString(d) && !strncmp(d->valuestring, "sha256:", 7)
                          ? d->valuestring + 7 : NULL;
    int ok = hex && strlen(hex) == 64;
    for (int i = 0; ok && i < 64; i++) ok = isxdigit((unsigned char)hex[i]) != 0;
    if (!ok) {
        ms_msg(why, wcap, "the %s layer's digest %s is not sha256:<64 hex digits> (a damaged "
                            "manifest)", kind, cJSON_IsString(d) ? d->valuestring : "(absent)");
        return -1;
    }
    *size = cJSON_IsNumber(sz) && sz->valuedouble >= 0 ? (uint64_t)sz->valuedouble : 0;
    if (ms_fmt(out, cap, "%s/blobs/sha256-%s", root, hex) || !ms_is_file(out)) {
        ms_msg(why, wcap, "the %s layer's blob %s is missing (the pull did not finish)", kind,
               out);
        return -1;
    }
    if (cJSON_IsNumber(sz) && ms_file_size(out) != *size) {
        ms_msg(why, wcap, "the %s layer's blob %s has %llu bytes, the manifest says %llu (the "
                            "pull did not finish)", kind, out,
               (unsigned long long)ms_file_size(out), (unsigned long long)*size);
        return -1;
    }
    return 0;
}

/* m from the manifest at path; usable judged for chat: a text model, and the vision model from
 * the projector when the tag has one. */
static void fill(ms_model *m, const char *root, const char *path, const char *name,
                 const char *tag) {
    char why[1024] = "";
    m->source = MS_SRC_OLLAMA;
    ms_msg(m->name, sizeof m->name, "%s", name);
    ms_msg(m->revision, sizeof m->revision, "%s", tag);
    ms_msg(m->location, sizeof m->location, "%s", path);
    cJSON *j = ms_read_json(path, why, sizeof why);
    const cJSON *layers = j ? cJSON_GetObjectItemCaseSensitive(j, "layers") : NULL, *ly;
    if (j && !cJSON_IsArray(layers)) {
        ms_msg(why, sizeof why, "%s has no layers[]", path);
        layers = NULL;
    }
    cJSON_ArrayForEach(ly, layers) {
        const cJSON *mt = cJSON_GetObjectItemCaseSensitive(ly, "mediaType");
        const char *t = cJSON_IsString(mt) && !strncmp(mt->valuestring, MT, strlen(MT))
                            ? mt->valuestring + strlen(MT) : "";
        char *dst = !strcmp(t, "model") && !m->text[0]       ? m->text
                    : !strcmp(t, "projector") && !m->vision[0] ? m->vision
                    : !strcmp(t, "template") && !m->tmpl[0]    ? m->tmpl
                                                               : NULL;
        char blob[MS_PATH_MAX], later[1024];
        uint64_t size = 0;
        if (layer_blob(root, ly, *t ? t : "unknown", blob, sizeof blob, &size,
                       why[0] ? later : why, why[0] ? sizeof later : sizeof why))
            continue; /* the first problem is the one reported */
        m->bytes += size;
        if (dst) ms_msg(dst, MS_PATH_MAX, "%s", blob);
    }
    cJSON_Delete(j);
    if (m->vision[0]) ms_msg(m->vision_kind, sizeof m->vision_kind, "mmproj");
    if (m->tmpl[0]) ms_msg(m->tmpl_kind, sizeof m->tmpl_kind, "ollama-go-template");
    m->usable = 0;
    if (why[0]) {
        ms_msg(m->why, sizeof m->why, "%s; run `ollama pull %s` again", why, name);
        return;
    }
    if (!m->text[0]) {
        ms_msg(m->why, sizeof m->why, "the manifest %s has no model layer", path);
        return;
    }
    int vt = 0;
    if (!ms_check_text(m->text, &vt, NULL, m->why, sizeof m->why)) return;
    if (m->vision[0]) {
        m->usable = ms_check_mmproj(m->vision, m->why, sizeof m->why);
        return;
    }
    if (vt) {
        ms_msg(m->why, sizeof m->why,
               "ollama-native layout: the vision tower is inside the model file (%d v.* "
               "tensors, ollama's own layout) and there is no projector layer; llama.cpp and "
               "g4v read neither. Use a Gemma 4 GGUF with its mmproj (e.g. from Hugging Face "
               "or LM Studio) instead", vt);
        return;
    }
    m->usable = 1;
    ms_msg(m->why, sizeof m->why, "text only: no projector layer, so chat needs --model with a "
                                    "vision model");
}

int ms_resolve_ollama(const char *tag, ms_model *m, char *err, size_t ecap) {
    char part[4][256], dirs[2][MS_PATH_MAX], name[1200], looked[3 * MS_PATH_MAX] = "";
    memset(m, 0, sizeof *m);
    if (parse_name(tag, part)) {
        ms_msg(err, ecap, "'%s' is not an Ollama model name ([host/][namespace/]model[:tag])",
               tag);
        return MS_ERR_USAGE;
    }
    display_name(part[0], part[1], part[2], part[3], name, sizeof name);
    int nd = ms_ollama_dirs(dirs, 2);
    size_t o = 0;
    for (int d = 0; d < nd; d++) {
        char p[MS_PATH_MAX], q[MS_PATH_MAX];
        int found = ms_fmt(p, sizeof p, "%s/manifests", dirs[d]) == 0;
        for (int i = 0; found && i < 4; i++) {
            found = ms_find_ci(p, part[i], q, sizeof q);
            ms_msg(p, sizeof p, "%s", q);
        }
        if (found && ms_is_file(p)) {
            fill(m, dirs[d], p, name, part[3]);
            if (m->usable) return MS_OK; /* perhaps text only: m->vision empty */
            ms_msg(err, ecap, "ollama %s (%s): %s", name, p, m->why);
            return MS_ERR_UNUSABLE;
        }
        if (o < sizeof looked)
            o += (size_t)ms_msg(looked + o, sizeof looked - o, "%s%s/manifests/%s/%s/%s/%s",
                                o ? ", " : "", dirs[d], part[0], part[1], part[2], part[3]);
    }
    ms_msg(err, ecap, "ollama %s: not in Ollama's store (looked for %s). Pull it with `ollama "
                        "pull %s`, set OLLAMA_MODELS to the store, or run `g4v models` to see "
                        "what is there", name, o ? looked : "no store: HOME and OLLAMA_MODELS "
                        "unset", name);
    return MS_ERR_NOT_FOUND;
}

int ms_ollama_list(ms_list *l, int all) {
    char dirs[2][MS_PATH_MAX];
    int nd = ms_ollama_dirs(dirs, 2), rc = 0;
    for (int d = 0; d < nd && !rc; d++) {
        char base[MS_PATH_MAX];
        char **hv;
        int nh;
        if (ms_fmt(base, sizeof base, "%s/manifests", dirs[d]) || ms_names(base, &hv, &nh))
            continue;
        for (int h = 0; h < nh && !rc; h++) {
            char hp[MS_PATH_MAX];
            char **nv;
            int nn;
            if (ms_fmt(hp, sizeof hp, "%s/%s", base, hv[h]) || ms_names(hp, &nv, &nn)) continue;
            for (int s = 0; s < nn && !rc; s++) {
                char np[MS_PATH_MAX];
                char **mv;
                int nm;
                if (ms_fmt(np, sizeof np, "%s/%s", hp, nv[s]) || ms_names(np, &mv, &nm)) continue;
                for (int k = 0; k < nm && !rc; k++) {
                    char mp[MS_PATH_MAX];
                    char **tv;
                    int nt;
                    if ((!all && !ms_name_is_gemma4(mv[k])) ||
                        ms_fmt(mp, sizeof mp, "%s/%s", np, mv[k]) || ms_names(mp, &tv, &nt))
                        continue;
                    for (int t = 0; t < nt && !rc; t++) {
                        ms_model m;
                        char tp[MS_PATH_MAX], name[1200];
                        memset(&m, 0, sizeof m);
                        if (ms_fmt(tp, sizeof tp, "%s/%s", mp, tv[t]) || !ms_is_file(tp)) continue;
                        display_name(hv[h], nv[s], mv[k], tv[t], name, sizeof name);
                        fill(&m, dirs[d], tp, name, tv[t]);
                        rc = ms_list_push(l, &m);
                    }
                    ms_names_free(tv, nt);
                }
                ms_names_free(mv, nm);
            }
            ms_names_free(nv, nn);
        }
        ms_names_free(hv, nh);
    }
    return rc;
}
