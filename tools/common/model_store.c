/* model_store.c - the resolvers the front ends call (model_store.h): a path that exists wins;
 * a repo id is looked up in the Hugging Face cache, then in LM Studio's folders; an Ollama tag in
 * Ollama's store. Every failure names what was looked at and what to do. */
#include "model_store_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char *ms_source_name(ms_source s) {
    switch (s) {
    case MS_SRC_HF:
        return "huggingface";
    case MS_SRC_OLLAMA:
        return "ollama";
    case MS_SRC_LMSTUDIO:
        return "lmstudio";
    default:
        return "path";
    }
}

int ms_store_dirs(ms_source s, char (*dirs)[MS_PATH_MAX], int max) {
    switch (s) {
    case MS_SRC_HF:
        return ms_hf_dirs(dirs, max);
    case MS_SRC_OLLAMA:
        return ms_ollama_dirs(dirs, max);
    case MS_SRC_LMSTUDIO:
        return ms_lms_dirs(dirs, max);
    default:
        return 0;
    }
}

int ms_list_all(ms_list *l, int all) {
    return ms_hf_list(l, all) || ms_ollama_list(l, all) || ms_lms_list(l, all) ? -1 : 0;
}

/* A repo id in the stores: the Hugging Face cache first, then LM Studio. A value that is no repo
 * id (or names a folder that exists: ./google/...) is a path: MS_NOT_A_NAME. */
#define MS_NOT_A_NAME 100
static int find_named(const char *value, const char *revision, int want, ms_model *m, char *err,
                      size_t ecap) {
    char org[256], name[256], quant[128], hf[MS_PATH_MAX + 256], lms[2 * MS_PATH_MAX + 256];
    struct stat st;
    if (!ms_parse_repo_id(value, org, sizeof org, name, sizeof name, quant, sizeof quant) ||
        value[0] == '.' || stat(org, &st) == 0)
        return MS_NOT_A_NAME; /* a path: the loader's own error says what is wrong */
    int rc = ms_hf_find(org, name, quant, revision, want, m, hf, sizeof hf, err, ecap);
    if (rc != MS_ERR_NOT_FOUND) return rc;
    rc = ms_lms_find(org, name, quant, want, m, lms, sizeof lms, err, ecap);
    if (rc != MS_ERR_NOT_FOUND) return rc;
    ms_msg(err, ecap, "%s: no such file or directory, and no model of that name in %s or in LM "
                        "Studio's folders (%s). Download it first (e.g. `hf download %s/%s`), "
                        "give a path, or run `g4v models` to see the models on this machine",
           value, hf, lms, org, name);
    return MS_ERR_NOT_FOUND;
}

static const char *where(const ms_model *m) {
    return m->source == MS_SRC_HF ? "Hugging Face cache" : "LM Studio";
}

static int resolve(const char *value, const char *revision, int want, char *out, size_t cap,
                   char *err, size_t ecap) {
    struct stat st;
    if (!value || !*value) {
        ms_msg(err, ecap, "an empty model name");
        return MS_ERR_USAGE;
    }
    if (stat(value, &st) == 0) /* as before the stores: the path itself */
        return ms_fmt(out, cap, "%s", value) ? (ms_msg(err, ecap, "path too long"),
                                                MS_ERR_USAGE)
                                             : MS_OK;
    ms_model m;
    int rc = find_named(value, revision, want, &m, err, ecap);
    if (rc == MS_NOT_A_NAME) /* not a name: the path as given, as before the stores */
        return ms_fmt(out, cap, "%s", value) ? MS_ERR_USAGE : MS_OK;
    if (rc) return rc;
    const char *path = want == MS_WANT_VISION ? m.vision : m.text;
    if (!path[0] && want == MS_WANT_VISION) {
        ms_msg(err, ecap, "%s (%s, %s): no vision model there (no config.json, no mmproj GGUF); "
                            "give --model a checkpoint or an mmproj", value, where(&m),
               m.location);
        return MS_ERR_UNUSABLE;
    }
    if (!path[0]) {
        ms_msg(err, ecap, "%s (%s, %s): no text GGUF there%s; --lm needs a Gemma 4 text GGUF, "
                            "e.g. from a -GGUF repo", value, where(&m), m.location,
               !strcmp(m.vision_kind, "checkpoint") ? " (a safetensors checkpoint: the vision "
                                                        "model for --model)" : "");
        return MS_ERR_UNUSABLE;
    }
    if (!m.usable) {
        ms_msg(err, ecap, "%s (%s): %s", value, where(&m), m.why);
        return MS_ERR_UNUSABLE;
    }
    return ms_fmt(out, cap, "%s", path) ? MS_ERR_USAGE : MS_OK;
}

int ms_resolve_model(const char *value, const char *revision, char *out, size_t cap, char *err,
                     size_t errcap) {
    return resolve(value, revision, MS_WANT_VISION, out, cap, err, errcap);
}

int ms_resolve_lm(const char *value, const char *revision, char *out, size_t cap, char *err,
                  size_t errcap) {
    return resolve(value, revision, MS_WANT_TEXT, out, cap, err, errcap);
}

int ms_resolve_front(const char *cmd, ms_paths *p, const char **model, const char **lm,
                     const char *ollama, const char *revision, int flags) {
    char err[3 * MS_PATH_MAX], tmp[MS_PATH_MAX];
    int rc;
    p->tmpl[0] = 0;
    if (ollama && lm) {
        ms_model m;
        if ((rc = ms_resolve_ollama(ollama, &m, err, sizeof err))) {
            fprintf(stderr, "g4v %s: %s\n", cmd, err);
            return rc;
        }
        if (!*lm) {
            ms_msg(p->lm, sizeof p->lm, "%s", m.text);
            *lm = p->lm;
        }
        if (!*model && !m.vision[0]) {
            fprintf(stderr, "g4v %s: ollama %s: %s\n", cmd, m.name, m.why);
            return MS_ERR_UNUSABLE;
        }
        if (!*model) {
            ms_msg(p->model, sizeof p->model, "%s", m.vision);
            *model = p->model;
        }
        ms_msg(p->tmpl, sizeof p->tmpl, "%s", m.tmpl);
    }
    if (!*model) {
        /* the words of options.c's "--model DIR is required (see --help)", and the ways */
        fprintf(stderr, "g4v %s: --model DIR is required (see --help): a checkpoint directory, "
                        "an mmproj .gguf or a Hugging Face repo id (google/gemma-4-E4B-it)%s; "
                        "`g4v models` lists the models on this machine\n", cmd,
                lm ? ", or --ollama TAG" : "");
        return MS_ERR_USAGE;
    }
    if ((rc = ms_resolve_model(*model, revision, tmp, sizeof tmp, err, sizeof err))) {
        fprintf(stderr, "g4v %s: --model %s\n", cmd, err);
        return rc;
    }
    ms_msg(p->model, sizeof p->model, "%s", tmp);
    *model = p->model;
    if (lm && !*lm && (flags & MS_FRONT_LM_REQUIRED)) {
        fprintf(stderr, "g4v %s: --lm FILE is required (see --help): a Gemma 4 text GGUF, a GGUF "
                        "repo id (ggml-org/gemma-4-E4B-it-GGUF:Q4_K_M), or --ollama TAG\n", cmd);
        return MS_ERR_USAGE;
    }
    if (lm && *lm) {
        if ((rc = ms_resolve_lm(*lm, revision, tmp, sizeof tmp, err, sizeof err))) {
            fprintf(stderr, "g4v %s: --lm %s\n", cmd, err);
            return rc;
        }
        ms_msg(p->lm, sizeof p->lm, "%s", tmp);
        *lm = p->lm;
    }
    return MS_OK;
}
