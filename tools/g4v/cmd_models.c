/* cmd_models.c - `g4v models [--json] [--all]`: the Gemma 4 models already on this machine, in
 * the Hugging Face cache, Ollama's store and LM Studio's folders (common/model_store.h),
 * each with the files g4v would use (vision checkpoint or mmproj, text GGUF, chat template), its
 * size, and whether g4v can use it or why not. Offline: it reads the stores, nothing else. The
 * stores come from model_store.c's table (ms_store_at), in its order. */
#include "cli.h"
#include "frontend.h"
#include "model_store.h"
#include "options.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct models_args {
    int json, all;
    int source; /* an ms_source, or -1: every store */
} models_args;

static const fe_opt_choice source_choices[] = {{"huggingface", MS_SRC_HF},
                                               {"hf", MS_SRC_HF},
                                               {"ollama", MS_SRC_OLLAMA},
                                               {"lmstudio", MS_SRC_LMSTUDIO},
                                               {NULL, 0}};

#define O(member) FE_FIELD(models_args, member)

static const fe_opt rows[] = {
    {.name = "json", .kind = FE_OPT_FLAG, O(json), .lo = 1,
     .help = "print one JSON object (stores, models) instead of text"},
    {.name = "all", .kind = FE_OPT_FLAG, O(all), .lo = 1,
     .help = "list every model in the stores, not only those whose name says Gemma 4"},
    {.name = "source", .kind = FE_OPT_CHOICE, O(source), .choices = source_choices,
     .arg = "huggingface|ollama|lmstudio", .help = "list one store only (default: all three)"},
};

static const fe_cmd models_cmd = {
    .name = "models",
    .usage = "models [--json] [--all] [--source huggingface|ollama|lmstudio]",
    .about =
        "Lists the Gemma 4 models already on this machine (docs/GUIDE.md \"Models already on\n"
        "disk\"), read offline from:\n"
        "  Hugging Face  $HF_HUB_CACHE, else $HF_HOME/hub, else\n"
        "                $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub\n"
        "  Ollama        $OLLAMA_MODELS, else ~/.ollama/models and\n"
        "                /usr/share/ollama/.ollama/models\n"
        "  LM Studio     ~/.lmstudio/models, ~/.cache/lm-studio/models\n"
        "For each: the vision model (checkpoint or mmproj), the text GGUF, the chat template,\n"
        "the size, and whether g4v can use it or why not. The names listed are what --model,\n"
        "--lm (a repo id, optionally :QUANT) and --ollama (a tag) accept.\n",
    .heading = "options:",
    FE_OPTS(rows),
    .epilog = "exit codes: 0 ok (also when nothing is found), 1 usage error, 5 internal error\n",
};

#undef O

static void size_text(uint64_t b, char *out, size_t cap) {
    if (b >= (1ull << 30))
        snprintf(out, cap, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(out, cap, "%.1f MiB", (double)b / (1ull << 20));
    else if (b >= (1ull << 10))
        snprintf(out, cap, "%.1f KiB", (double)b / (1ull << 10));
    else
        snprintf(out, cap, "%llu B", (unsigned long long)b);
}

static void print_text(const ms_list *l) {
    printf("stores:\n");
    for (int s = 0; s < ms_store_count(); s++) {
        char dirs[4][MS_PATH_MAX];
        int n = ms_store_dirs(ms_store_at(s), dirs, 4);
        for (int i = 0; i < n; i++) printf("  %-12s %s\n", ms_source_name(ms_store_at(s)), dirs[i]);
    }
    if (!l->count) {
        printf("\nno Gemma 4 model found in them\n");
        return;
    }
    for (int i = 0; i < l->count; i++) {
        const ms_model *m = &l->items[i];
        char sz[32];
        size_text(m->bytes, sz, sizeof sz);
        printf("\n%s %s  [%s]  %s\n", m->usable ? "ok " : "NO ", m->name,
               ms_source_name(m->source), sz);
        if (m->revision[0])
            printf("    revision  %.12s%s%s%s\n", m->revision, m->refs[0] ? " (" : "", m->refs,
                   m->refs[0] ? ")" : "");
        if (m->vision[0]) printf("    vision    %s (%s)\n", m->vision, m->vision_kind);
        if (m->text[0]) printf("    text      %s\n", m->text);
        if (m->tmpl[0]) printf("    template  %s (%s)\n", m->tmpl, m->tmpl_kind);
        if (m->why[0]) printf("    %s  %s\n", m->usable ? "note   " : "why not", m->why);
    }
}

static int add_str(cJSON *o, const char *key, const char *v) {
    return cJSON_AddStringToObject(o, key, v) != NULL;
}

/* "" as null: a part the model does not have. */
static int add_path(cJSON *o, const char *key, const char *v) {
    return (*v ? cJSON_AddStringToObject(o, key, v) : cJSON_AddNullToObject(o, key)) != NULL;
}

static int print_json(const ms_list *l) {
    cJSON *o = cJSON_CreateObject();
    cJSON *st = o ? cJSON_AddObjectToObject(o, "stores") : NULL;
    cJSON *ms = st ? cJSON_AddArrayToObject(o, "models") : NULL;
    int ok = ms != NULL;
    for (int s = 0; ok && s < ms_store_count(); s++) {
        char dirs[4][MS_PATH_MAX];
        int n = ms_store_dirs(ms_store_at(s), dirs, 4);
        cJSON *a = cJSON_AddArrayToObject(st, ms_source_name(ms_store_at(s)));
        ok = a != NULL;
        for (int i = 0; ok && i < n; i++) {
            cJSON *d = cJSON_CreateString(dirs[i]);
            ok = d && cJSON_AddItemToArray(a, d);
        }
    }
    for (int i = 0; ok && i < l->count; i++) {
        const ms_model *m = &l->items[i];
        cJSON *x = cJSON_CreateObject();
        ok = x && cJSON_AddItemToArray(ms, x);
        ok = ok && add_str(x, "source", ms_source_name(m->source)) && add_str(x, "name", m->name) &&
             add_path(x, "revision", m->revision) && add_path(x, "refs", m->refs) &&
             add_str(x, "location", m->location) && add_path(x, "vision", m->vision) &&
             add_path(x, "vision_kind", m->vision_kind) && add_path(x, "text", m->text) &&
             add_path(x, "template", m->tmpl) && add_path(x, "template_kind", m->tmpl_kind) &&
             cJSON_AddNumberToObject(x, "bytes", (double)m->bytes) &&
             cJSON_AddBoolToObject(x, "usable", m->usable) &&
             add_path(x, m->usable ? "note" : "why", m->why);
    }
    char *text = ok ? cJSON_Print(o) : NULL;
    if (text) {
        fe_utf8_sanitize(text); /* paths may hold bytes that are not UTF-8 */
        printf("%s\n", text);
    }
    int good = text != NULL;
    free(text);
    cJSON_Delete(o);
    return good ? 0 : -1;
}

int cmd_models(int argc, char **argv) {
    models_args a = {.json = 0, .all = 0, .source = -1};
    int rc = fe_opt_run(&models_cmd, argc, argv, &a);
    if (rc) return rc == FE_OPT_HELP ? G4V_EXIT_OK : G4V_EXIT_USAGE;
    ms_list l = {0};
    if (ms_list_all(&l, a.all)) {
        ms_list_free(&l);
        fprintf(stderr, "g4v models: out of memory\n");
        return G4V_EXIT_INTERNAL;
    }
    if (a.source >= 0) { /* keep the chosen store's models, in order */
        int k = 0;
        for (int i = 0; i < l.count; i++)
            if ((int)l.items[i].source == a.source) l.items[k++] = l.items[i];
        l.count = k;
    }
    if (a.json) {
        rc = print_json(&l);
    } else {
        print_text(&l);
        rc = 0;
    }
    ms_list_free(&l);
    if (rc) {
        fprintf(stderr, "g4v models: out of memory\n");
        return G4V_EXIT_INTERNAL;
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "g4v models: cannot write the output\n");
        return G4V_EXIT_OUTPUT;
    }
    return G4V_EXIT_OK;
}
