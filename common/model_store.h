/* model_store.h - Gemma 4 models where users already keep them, found offline: a name given to
 * --model, --lm or --ollama becomes the real files inside the Hugging Face hub cache, Ollama's
 * store or LM Studio's models folder, and `g4v models` lists what those stores hold. Only an
 * "hf:ORG/NAME[@REV][:QUANT]" name may touch the network, and only when the model is not on disk
 * already (hub.h); any other name not on disk is an error that says how to get it.
 *
 * What a value means (ms_resolve_model, ms_resolve_lm):
 *   - a path that exists is used as it is (the behaviour before the stores existed);
 *   - "org/name" or "org/name:QUANT" (a repo id, matched case-insensitively) is looked up in the
 *     Hugging Face cache (store_hf.c), then in LM Studio's folders (store_lmstudio.c). QUANT picks
 *     the text GGUF by its quantization tag the way llama.cpp's -hf does (default Q4_K_M);
 *   - anything else (/abs/path, ./x, dir/sub/file, or org/name whose org is a folder here) is passed on
 *     unchanged, so the loader reports a missing path in its own words, as before.
 * An Ollama tag ("gemma4:e4b", "namespace/model:tag", "host/namespace/model:tag") is resolved by
 * ms_resolve_ollama (store_ollama.c) into its model, projector and template layers.
 *
 * The stores (docs/GUIDE.md "Models already on disk"):
 *   Hugging Face  $HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
 *                 ~/.cache/huggingface/hub
 *   Ollama        $OLLAMA_MODELS, else ~/.ollama/models and /usr/share/ollama/.ollama/models
 *   LM Studio     ~/.lmstudio/models, ~/.cache/lm-studio/models
 */
#ifndef G4V_MODEL_STORE_H
#define G4V_MODEL_STORE_H

#include <stddef.h>
#include <stdint.h>

#define MS_PATH_MAX 4096

typedef enum ms_source { MS_SRC_PATH = 0, MS_SRC_HF, MS_SRC_OLLAMA, MS_SRC_LMSTUDIO } ms_source;

/* Results of the resolvers. */
enum {
    MS_OK = 0,
    MS_ERR_USAGE = 1,     /* a malformed name or option combination */
    MS_ERR_NOT_FOUND = 2, /* in no store (the message names where it looked) */
    MS_ERR_UNUSABLE = 3   /* found, but g4v cannot use it (the message says why) */
};

/* One model a store holds: what g4v would use of it, and whether it can. */
typedef struct ms_model {
    ms_source source;
    char name[512];     /* "google/gemma-4-E4B-it", "ggml-org/gemma-4-E4B-it-GGUF:Q4_K_M",
                           "gemma4:e4b", "lmstudio-community/gemma-4-E4B-it-GGUF:Q4_K_M" */
    char revision[256]; /* HF: the snapshot's commit; Ollama: the tag; else "" */
    char refs[256];     /* HF: the refs naming that commit, comma-separated ("main") */
    char location[MS_PATH_MAX]; /* the repo folder, manifest file or model folder */
    char vision[MS_PATH_MAX];   /* checkpoint directory or mmproj GGUF, or "" */
    char vision_kind[16];       /* "checkpoint", "mmproj" or "" */
    char text[MS_PATH_MAX];     /* the text GGUF, or "" */
    char tmpl[MS_PATH_MAX];     /* chat template file (Jinja, or Ollama's Go template), or "" */
    char tmpl_kind[24];         /* "jinja", "ollama-go-template", "gguf" (inside text) or "" */
    uint64_t bytes;             /* on disk: the files above (Ollama: every layer) */
    int usable;                 /* 1: g4v can use what is listed */
    char why[1024];             /* usable == 0: the reason and what to do */
} ms_model;

typedef struct ms_list {
    ms_model *items;
    int count, cap;
} ms_list;

/* The value of --model (a vision model: a checkpoint directory or an mmproj GGUF) into out.
 * revision: a branch, tag or commit (prefix) for Hugging Face, or NULL for "main". Returns MS_OK
 * or an MS_ERR_* with the message in err. */
int ms_resolve_model(const char *value, const char *revision, char *out, size_t cap, char *err,
                     size_t errcap);
/* The value of --lm (a text GGUF) into out, as ms_resolve_model. */
int ms_resolve_lm(const char *value, const char *revision, char *out, size_t cap, char *err,
                  size_t errcap);
/* An Ollama tag into m (text: the model layer, vision: the projector layer or "", tmpl: the
 * template layer). MS_OK only when m->usable; else the reason in err (and m->why). */
int ms_resolve_ollama(const char *tag, ms_model *m, char *err, size_t errcap);

/* Every Gemma 4 candidate in every store (all: every model, Gemma 4 or not) appended to l, in
 * store order (Hugging Face, Ollama, LM Studio), each with usable and why filled in. 0, or -1
 * when out of memory. */
int ms_list_all(ms_list *l, int all);
void ms_list_free(ms_list *l);
const char *ms_source_name(ms_source s); /* "path", "huggingface", "ollama", "lmstudio" */

/* The stores, in the order they are listed and searched: ms_store_at(0 .. ms_store_count() - 1)
 * (the rows of model_store.c's table; MS_SRC_PATH is none). */
int ms_store_count(void);
ms_source ms_store_at(int i);

/* The stores' folders as this environment names them (for messages and `g4v models`): up to
 * max entries into dirs (each MS_PATH_MAX bytes), existing or not. Returns the count. */
int ms_store_dirs(ms_source s, char (*dirs)[MS_PATH_MAX], int max);

/* ---- front ends ---------------------------------------------------------------------------- */

/* The paths a front end uses after resolving: *model and *lm are pointed into it, so it must
 * live as long as they are used. */
typedef struct ms_paths {
    char model[MS_PATH_MAX], lm[MS_PATH_MAX], tmpl[MS_PATH_MAX];
} ms_paths;

/* The option rows (options.h) of --revision and --ollama, the same in every command. */
#define MS_OPT_REVISION(type, member)                                                          \
    {.name = "revision", .kind = FE_OPT_STRING, FE_FIELD(type, member), .arg = "REV",          \
     .help = "with a Hugging Face repo id: the branch, tag or commit (prefix) of the cached "    \
             "snapshot (default main)"}
#define MS_OPT_OLLAMA(type, member)                                                            \
    {.name = "ollama", .kind = FE_OPT_STRING, FE_FIELD(type, member), .arg = "TAG",            \
     .help = "a model pulled with Ollama (gemma4:e4b): its model layer as --lm and its "        \
             "projector as --model, where those are not given"}

/* ms_resolve_front's flags. */
enum { MS_FRONT_LM_REQUIRED = 1 /* no --lm (nor --ollama): "--lm is required" */ };

/* What the commands do with --model, --lm, --ollama and --revision. ollama (chat and serve; NULL
 * when not given) sets *lm from the tag's model layer and *model from its projector, where they
 * were not given. Then *model is resolved (required: MS_ERR_USAGE, "--model is required" with
 * the ways to give one) and, when lm is not NULL and *lm is set, *lm; both are repointed into
 * p, and p->tmpl holds the Ollama template layer ("" if none). lm == NULL: a command without a
 * text model (encode, info). Errors are printed as "g4v CMD: ...". Returns MS_OK or an MS_ERR_*
 * (front ends: MS_ERR_USAGE is a usage error, the others a model error). */
int ms_resolve_front(const char *cmd, ms_paths *p, const char **model, const char **lm,
                     const char *ollama, const char *revision, int flags);

#endif
