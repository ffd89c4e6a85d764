/* model_store.c - the resolvers the front ends call (model_store.h): a path that exists wins;
 * a repo id is looked up in the Hugging Face cache, then in LM Studio's folders; an Ollama tag in
 * Ollama's store. The stores are the rows of one table (stores[] below; each row's code is its
 * store_*.c). Every failure names what was looked at and what to do. */
#include "hub.h"
#include "model_store_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The stores, one row each, in the order they are listed and searched. A new store is a row:
 * its folders, its listing and, when users name its models by repo id, its lookup. */
typedef struct ms_store {
    ms_source source;
    const char *name;  /* ms_source_name */
    const char *title; /* in messages */
    int (*dirs)(char (*dirs)[MS_PATH_MAX], int max);
    int (*list)(ms_list *l, int all);
    /* A repo id (org/name[:quant]) in this store, as ms_hf_find; NULL for a store whose models
     * have other names (Ollama's tags: ms_resolve_ollama). */
    int (*find)(const char *org, const char *name, const char *quant, const char *revision,
                int want, ms_model *m, char *looked, size_t lcap, char *err, size_t ecap);
    const char *looked_pre, *looked_post; /* around a failed find's "looked" text in messages */
} ms_store;

static const ms_store stores[] = {
    {MS_SRC_HF, "huggingface", "Hugging Face cache", ms_hf_dirs, ms_hf_list, ms_hf_find, "", ""},
    {MS_SRC_OLLAMA, "ollama", "Ollama", ms_ollama_dirs, ms_ollama_list, NULL, NULL, NULL},
    {MS_SRC_LMSTUDIO, "lmstudio", "LM Studio", ms_lms_dirs, ms_lms_list, ms_lms_find,
     "LM Studio's folders (", ")"},
};
#define N_STORES (int)(sizeof stores / sizeof stores[0])

static const ms_store *store_of(ms_source s) {
    for (int i = 0; i < N_STORES; i++)
        if (stores[i].source == s) return &stores[i];
    return NULL;
}

const char *ms_source_name(ms_source s) {
    const ms_store *st = store_of(s);
    return st ? st->name : "path";
}

int ms_store_count(void) { return N_STORES; }

ms_source ms_store_at(int i) { return i >= 0 && i < N_STORES ? stores[i].source : MS_SRC_PATH; }

int ms_store_dirs(ms_source s, char (*dirs)[MS_PATH_MAX], int max) {
    const ms_store *st = store_of(s);
    return st ? st->dirs(dirs, max) : 0;
}

int ms_list_all(ms_list *l, int all) {
    for (int i = 0; i < N_STORES; i++)
        if (stores[i].list(l, all)) return -1;
    return 0;
}

/* A repo id in the stores that have such names, in table order. A value that is no repo id (or
 * names a folder that exists: ./google/...) is a path: MS_NOT_A_NAME. */
#define MS_NOT_A_NAME 100
static int find_named(const char *value, const char *revision, int want, ms_model *m, char *err,
                      size_t ecap) {
    char org[256], name[256], quant[128], looked[2 * MS_PATH_MAX + 256], places[4 * MS_PATH_MAX];
    struct stat st;
    if (!ms_parse_repo_id(value, org, sizeof org, name, sizeof name, quant, sizeof quant) ||
        value[0] == '.' || stat(org, &st) == 0)
        return MS_NOT_A_NAME; /* a path: the loader's own error says what is wrong */
    size_t o = 0;
    places[0] = 0;
    for (int i = 0; i < N_STORES; i++) {
        if (!stores[i].find) continue;
        int rc = stores[i].find(org, name, quant, revision, want, m, looked, sizeof looked, err,
                                ecap);
        if (rc != MS_ERR_NOT_FOUND) return rc;
        if (o < sizeof places)
            o += (size_t)ms_msg(places + o, sizeof places - o, "%s%s%s%s", o ? " or in " : "",
                                stores[i].looked_pre, looked, stores[i].looked_post);
    }
    ms_msg(err, ecap, "%s: no such file or directory, and no model of that name in %s. Fetch "
                        "it from the Hub with `--model hf:%s/%s` or `g4v pull %s/%s`, give a "
                        "path, or run `g4v models` to see the models on this machine",
           value, places, org, name, org, name);
    return MS_ERR_NOT_FOUND;
}

static const char *where(const ms_model *m) {
    const ms_store *st = store_of(m->source);
    return st ? st->title : "path";
}

/* hf:ORG/NAME[@REV][:QUANT]: what is on disk first (the Hugging Face cache, then g4v's
 * vision-only copies), the Hub only when neither has it (hub.h; never with HF_HUB_OFFLINE). The
 * vision model is pulled vision-only, a text GGUF whole (of QUANT, default Q4_K_M). */
static int resolve(const char *value, const char *revision, int want, char *out, size_t cap,
                   char *err, size_t ecap);

static int resolve_hub(const char *value, const char *revision, int want, char *out, size_t cap,
                       char *err, size_t ecap) {
    char repo[300], rev[300], quant[128], name[700], herr[4096];
    int p = hub_parse_name(value, repo, sizeof repo, rev, sizeof rev, quant, sizeof quant, herr,
                           sizeof herr);
    if (p < 0) return ms_msg(err, ecap, "%s", herr), MS_ERR_USAGE;
    if (strchr(value, '@') && revision && *revision && strcmp(revision, rev)) {
        ms_msg(err, ecap, "%s: a revision both in the name and in --revision", value);
        return MS_ERR_USAGE;
    }
    if (!strchr(value, '@') && revision && *revision) ms_msg(rev, sizeof rev, "%s", revision);
    if (want == MS_WANT_VISION && quant[0]) {
        ms_msg(err, ecap, "%s: a :QUANT names a text GGUF (for --lm); --model takes hf:ORG/NAME",
               value);
        return MS_ERR_USAGE;
    }
    if (want == MS_WANT_TEXT && !quant[0]) ms_msg(quant, sizeof quant, "Q4_K_M");
    ms_msg(name, sizeof name, "%s%s%s", repo, quant[0] ? ":" : "", quant);
    char tmp[MS_PATH_MAX], e2[3 * MS_PATH_MAX];
    /* on disk already: the Hugging Face cache (whole), then the vision-only copy */
    if (resolve(name, rev, want, tmp, sizeof tmp, e2, sizeof e2) == MS_OK)
        return ms_fmt(out, cap, "%s", tmp) ? MS_ERR_USAGE : MS_OK;
    if (want == MS_WANT_VISION && hub_find_vision(repo, rev, tmp, sizeof tmp, NULL))
        return ms_fmt(out, cap, "%s", tmp) ? MS_ERR_USAGE : MS_OK;
    if (hub_offline()) {
        ms_msg(err, ecap, "%s: not on disk, and HF_HUB_OFFLINE is set (unset it to fetch it, or "
                            "run `g4v pull %s` where there is a network)", value, repo);
        return MS_ERR_NOT_FOUND;
    }
    hub_opts o = {.repo = repo, .revision = rev,
                  .mode = want == MS_WANT_VISION ? HUB_AUTO : HUB_WHOLE,
                  .quant = want == MS_WANT_TEXT ? quant : NULL};
    hub_result r;
    fprintf(stderr, "g4v: fetching %s from the Hub (%s)\n", value,
            want == MS_WANT_VISION ? "the vision tower" : "the GGUF");
    int rc = hub_pull(&o, &r, herr, sizeof herr);
    if (rc) {
        ms_msg(err, ecap, "%s", herr);
        return rc == HUB_ERR_USAGE ? MS_ERR_USAGE : MS_ERR_NOT_FOUND;
    }
    if (r.vision_only) return ms_fmt(out, cap, "%s", r.path) ? MS_ERR_USAGE : MS_OK;
    /* whole into the Hugging Face cache: found there now, by the store's own rules */
    return resolve(name, r.commit, want, out, cap, err, ecap);
}

static int resolve(const char *value, const char *revision, int want, char *out, size_t cap,
                   char *err, size_t ecap) {
    struct stat st;
    if (!value || !*value) {
        ms_msg(err, ecap, "an empty model name");
        return MS_ERR_USAGE;
    }
    if (!strncmp(value, "hf:", 3) && stat(value, &st) != 0)
        return resolve_hub(value, revision, want, out, cap, err, ecap);
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
