/* cmd_chat.c - `g4v chat`: ask a Gemma 4 text model (llama.cpp's libllama) about images and
 * videos encoded by libg4v (docs/CHAT.md). Built with libllama only (cmake/Llama.cmake); without
 * it the subcommand says how to get it. */
#include "cli.h"

#include <stdio.h>

#ifndef G4V_HAVE_LLAMA

int cmd_chat(int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr, "g4v chat: this g4v was built without llama.cpp's libllama.\n"
                    "  scripts/build-llama.sh builds the pinned release into ~/.cache/g4v-llama;\n"
                    "  then reconfigure (cmake -S . -B build) or pass -DG4V_LLAMA_DIR=PREFIX.\n");
    return G4V_EXIT_USAGE;
}

#else

#include "frontend.h"
#include "llama_cpu.h"
#include "math_option.h"
#include "model_store.h"
#include "options.h"
#include "chat_grammar.h"
#include "chat_session.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct chat_args {
    chat_options o;
    chat_media *media;
    int n_media, cap_media;
    const char *prompt;
    int json;
    int version;
    int print_prompt;
    const char *math_opt; /* the option that set o.math (NULL: none) */
    const char *ollama, *revision; /* --ollama TAG, --revision REV (model_store.h) */
    const char *json_schema, *grammar; /* --json-schema FILE, --grammar FILE */
} chat_args;

static int add_media(chat_args *a, const char *path, fe_medium medium) {
    if (a->n_media == a->cap_media) {
        int cap = a->cap_media ? 2 * a->cap_media : 8;
        chat_media *v = realloc(a->media, (size_t)cap * sizeof *v);
        if (!v) return -1;
        a->media = v;
        a->cap_media = cap;
    }
    a->media[a->n_media] = (chat_media){.path = path, .medium = medium};
    a->n_media++;
    return 0;
}

/* --image FILE, --video FILE: the row's .lo is the fe_medium; kept in the order given. */
static int media_option(const fe_opt *row, const char *value, void *target, char *err,
                        size_t cap) {
    if (add_media(target, value, (fe_medium)row->lo)) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    return 0;
}

#define O(member) FE_FIELD(chat_args, member)

static const fe_opt rows[] = {
    {.name = "lm", .kind = FE_OPT_STRING, O(o.lm_path), .arg = "FILE",
     .help = "the Gemma 4 text model, a GGUF (e.g. gemma-4-E4B-it-Q4_K_M.gguf), or a GGUF repo "
             "in the Hugging Face cache or LM Studio (ggml-org/gemma-4-E4B-it-GGUF:Q4_K_M) "
             "(required, unless --ollama gives it)"},
    {.name = "model", .kind = FE_OPT_STRING, O(o.vision_path), .arg = "VISION",
     .help = "the vision model: a checkpoint directory or a llama.cpp mmproj .gguf, or a repo id "
             "in the Hugging Face cache (`g4v models` lists them); its soft-token width must be "
             "the text model's hidden size (required, unless --ollama gives it)"},
    MS_OPT_OLLAMA(chat_args, ollama),
    MS_OPT_REVISION(chat_args, revision),
    {.name = "image", .kind = FE_OPT_CALLBACK, .fn = media_option,
     .lo = FE_MEDIUM_IMAGE, .arg = "FILE",
     .help = "an image for the first message (repeatable; in order, before the text)"},
    {.name = "video", .kind = FE_OPT_CALLBACK, .fn = media_option,
     .lo = FE_MEDIUM_VIDEO, .arg = "FILE",
     .help = "a video for the first message (repeatable)"},
    {.name = "prompt", .shortopt = 'p', .kind = FE_OPT_STRING, O(prompt), .arg = "TEXT",
     .help = "the message; answer it and exit. Without -p: a conversation read from stdin, one "
             "message per line (the KV cache keeps every turn):\n"
             "  /image PATH   attach an image to the next message\n"
             "  /video PATH   attach a video to the next message\n"
             "  /quit         end (so does end of input)"},
    {.name = "system", .kind = FE_OPT_STRING, O(o.params.system), .arg = "TEXT",
     .help = "a system prompt"},
    {.name = "think", .kind = FE_OPT_FLAG, O(o.params.think), .lo = 1,
     .help = "thinking on (the template's enable_thinking): the model thinks before it answers; "
             "the thought goes to stderr (with --json: the \"reasoning\" field) and is left out "
             "of later turns, as the template does"},
    {.name = "chat-template", .kind = FE_OPT_STRING, O(o.chat_template), .arg = "FILE",
     .help = "a Jinja chat template instead of the model's own (the text GGUF's "
             "tokenizer.chat_template, else chat_template.jinja beside a checkpoint "
             "directory); 'builtin': g4v's own Gemma 4 format"},
    {.name = "json-schema", .kind = FE_OPT_STRING, O(json_schema), .arg = "FILE",
     .help = "every answer is JSON valid under this JSON Schema (the OpenAI structured-output "
             "subset, docs/CHAT_API.md), enforced while sampling"},
    {.name = "grammar", .kind = FE_OPT_STRING, O(grammar), .arg = "FILE",
     .help = "every answer matches this GBNF grammar (llama.cpp's format, root rule \"root\")"},
    {.name = "print-prompt", .kind = FE_OPT_FLAG, O(print_prompt), .lo = 1,
     .help = "show each turn's whole prompt as the model gets it: its text (special tokens "
             "written out, each soft token as <|image|> or <|video|>) and token ids, on stderr "
             "(with --json: the \"prompt\" field)"},
    {.name = "json", .kind = FE_OPT_FLAG, O(json), .lo = 1,
     .help = "print a JSON object per answer (text, tokens, timings, media with their soft-token "
             "counts and feature-cache hits) instead of streaming"},
    {.name = "temp", .kind = FE_OPT_REAL, O(o.params.temp), .dlo = 0, .dhi = 100, .arg = "T",
     .help = "sampling temperature (default 1.0; 0 = greedy)"},
    {.name = "top-k", .kind = FE_OPT_INT, O(o.params.top_k), .lo = 0, .hi = 1 << 30,
     .arg = "K", .help = "(default 64; 0 = off)"},
    {.name = "top-p", .kind = FE_OPT_REAL, O(o.params.top_p), .dlo = 0, .dhi = 1, .arg = "P",
     .help = "(default 0.95; 1 = off)"},
    {.name = "seed", .kind = FE_OPT_UINT, O(o.params.seed), .lo = 0, .hi = 0xFFFFFFFEll,
     .arg = "N", .help = "sampling seed (default: from the clock)"},
    {.name = "max-tokens", .kind = FE_OPT_INT, O(o.params.max_tokens), .lo = 0, .hi = 1 << 30,
     .arg = "N", .help = "answer length cap (default 1024; 0 = until the end of the turn)"},
    {.name = "ctx", .kind = FE_OPT_INT, O(o.n_ctx), .lo = 16, .hi = 1 << 24, .arg = "N",
     .help = "context size in tokens (default 8192)"},
    FE_OPT_THREADS(chat_args, o.threads, 1, "threads for both models (default: one per CPU)"),
    FE_OPT_TOKENS(chat_args, o.budget,
                  "soft-token budget per image, one of " CLI_BUDGETS " (default "
                  FE_STR(G4V_DEFAULT_BUDGET) ")"),
    {.name = "video-tokens", .kind = FE_OPT_INT, O(o.video_budget), .lo = 1,
     .hi = FE_OPT_TOKENS_MAX,
     .check = fe_opt_check_budget, .arg = "N",
     .help = "budget per video frame (default " FE_STR(G4V_DEFAULT_VIDEO_BUDGET) ")"},
    {.name = "frames", .kind = FE_OPT_INT, O(o.video_frames), .lo = 1, .hi = 1024, .arg = "N",
     .help = "frames sampled per video (default " FE_STR(G4V_DEFAULT_VIDEO_FRAMES) ")"},
    FE_OPT_MATH_ROWS(chat_args, o.math, math_opt),
    {.name = "cache", .kind = FE_OPT_STRING, O(o.cache_dir), .arg = "DIR",
     .help = "feature cache kept across runs (default: a private one for this run; a repeated "
             "image is always read from the cache, not re-encoded)"},
    {.name = "verbose", .kind = FE_OPT_FLAG, O(o.verbose), .lo = 1,
     .help = "show llama.cpp's log"},
    {.name = "version", .kind = FE_OPT_FLAG, O(version), .lo = 1,
     .help = "print g4v's version and the CPU backend llama.cpp runs the text model on (its "
             "instruction-set level and features; with --json as JSON), then exit"},
};

static const fe_cmd chat_cmd = {
    .name = "chat",
    .usage = "chat --lm LM.gguf --model VISION [--image FILE]... [--video FILE]...\n"
             "                [-p TEXT] [options]\n"
             "       g4v chat --version [--json]",
    .about = "Answers questions about images and videos with a Gemma 4 language model run by\n"
             "llama.cpp's libllama; the images are encoded by g4v and their soft tokens fed to the\n"
             "model exactly as llama.cpp's libmtmd feeds its own (docs/CHAT.md).\n",
    FE_OPTS(rows),
    .epilog = "exit codes: 0 ok, 1 usage error, 2 input error (an image or video that cannot be\n"
              "encoded, a prompt over the context), 3 model error, 5 internal error\n",
};

#undef O

/* 0 go on, 1 help printed, -1 usage error (message printed). */
static int parse_args(int argc, char **argv, chat_args *a) {
    chat_options_init(&a->o);
    a->o.params.seed = (uint32_t)time(NULL) ^ (uint32_t)getpid();
    int rc = fe_opt_run(&chat_cmd, argc, argv, a);
    return rc == FE_OPT_HELP ? 1 : rc ? -1 : 0;
}

static int exit_for(int rc) {
    switch (rc) {
    case CHAT_OK:
        return G4V_EXIT_OK;
    case CHAT_ERR_USAGE:
        return G4V_EXIT_USAGE;
    case CHAT_ERR_INPUT:
        return G4V_EXIT_INPUT;
    case CHAT_ERR_MODEL:
        return G4V_EXIT_MODEL;
    default:
        return G4V_EXIT_INTERNAL;
    }
}

/* The answer to stdout, its thought to stderr (framed, so that a reader sees where it ends). */
typedef struct stream_state {
    int in_thought;
} stream_state;

static int emit_stdout(const char *piece, size_t len, chat_emit_kind kind, void *user) {
    stream_state *st = user;
    int thought = kind == CHAT_EMIT_THOUGHT; /* a tool call: the answer, as the model wrote it */
    if (thought && !st->in_thought) fputs("[thinking]\n", stderr);
    if (!thought && st->in_thought) fputs("\n[/thinking]\n", stderr);
    st->in_thought = thought;
    fwrite(piece, 1, len, thought ? stderr : stdout);
    fflush(thought ? stderr : stdout);
    return 0;
}

/* The prompt the model was given: {"text", "ids"} (NULL out of memory). */
static cJSON *prompt_json(const chat_session *s) {
    char *text;
    int32_t *ids;
    int n;
    if (chat_session_prompt(s, &text, &ids, &n)) return NULL;
    cJSON *o = cJSON_CreateObject();
    char *t = fe_utf8_copy(text, strlen(text));
    int *iv = malloc((size_t)(n ? n : 1) * sizeof *iv);
    if (iv)
        for (int i = 0; i < n; i++) iv[i] = ids[i];
    if (o && t && iv) {
        cJSON_AddStringToObject(o, "text", t);
        cJSON_AddItemToObject(o, "ids", cJSON_CreateIntArray(iv, n));
    } else {
        cJSON_Delete(o);
        o = NULL;
    }
    free(iv);
    free(t);
    free(text);
    free(ids);
    return o;
}

static void print_json(const chat_session *s, const chat_args *a, const chat_media *media,
                       const chat_turn_result *r, int rc, const char *err, cJSON *prompt) {
    chat_session_info in;
    chat_session_get_info(s, &in);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", rc == CHAT_OK);
    if (rc != CHAT_OK) cJSON_AddStringToObject(o, "error", err);
    char *t = fe_utf8_copy(r->text ? r->text : "", r->text ? r->text_len : 0);
    cJSON_AddStringToObject(o, "text", t ? t : "");
    free(t);
    if (r->reasoning) {
        t = fe_utf8_copy(r->reasoning, r->reasoning_len);
        cJSON_AddStringToObject(o, "reasoning", t ? t : "");
        free(t);
    }
    if (prompt) cJSON_AddItemToObject(o, "prompt", prompt); /* taken */
    if (r->stop) cJSON_AddStringToObject(o, "stop", r->stop);
    cJSON *tk = cJSON_AddObjectToObject(o, "tokens");
    cJSON_AddNumberToObject(tk, "prompt", r->n_prompt_pos);
    cJSON_AddNumberToObject(tk, "cached", r->n_cached); /* earlier turns, not decoded again */
    cJSON_AddNumberToObject(tk, "prompt_text", r->n_prompt_text);
    cJSON_AddNumberToObject(tk, "image_rows", r->n_prompt_rows);
    cJSON_AddNumberToObject(tk, "generated", r->n_generated);
    cJSON_AddNumberToObject(tk, "context_used", r->n_past);
    cJSON_AddNumberToObject(tk, "context", in.n_ctx);
    cJSON *tm = cJSON_AddObjectToObject(o, "timings");
    cJSON_AddNumberToObject(tm, "encode_s", r->encode_s);
    cJSON_AddNumberToObject(tm, "prefill_s", r->prefill_s);
    cJSON_AddNumberToObject(tm, "first_token_s", r->ttft_s);
    cJSON_AddNumberToObject(tm, "generate_s", r->generate_s);
    cJSON_AddNumberToObject(tm, "tokens_per_s",
                            r->generate_s > 0 ? r->n_generated / r->generate_s : 0);
    cJSON *ma = cJSON_AddArrayToObject(o, "media");
    for (int i = 0; i < r->n_media; i++) {
        const chat_media_stat *m = &r->media[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddStringToObject(x, "path", media[i].path);
        cJSON_AddStringToObject(x, "type", fe_medium_name(m->medium));
        cJSON_AddNumberToObject(x, "tokens", m->n_rows);
        if (m->medium == FE_MEDIUM_VIDEO)
            cJSON_AddNumberToObject(x, "frames", m->n_frames);
        int sz[2] = {m->width, m->height};
        cJSON_AddItemToObject(x, "target_size", cJSON_CreateIntArray(sz, 2));
        cJSON_AddBoolToObject(x, "cache_hit", m->cache_hit);
        cJSON_AddBoolToObject(x, "reused", m->reused);
        cJSON_AddNumberToObject(x, "seconds", m->seconds);
        cJSON_AddItemToArray(ma, x);
    }
    cJSON *ca = cJSON_AddObjectToObject(o, "cache");
    cJSON_AddNumberToObject(ca, "hits", (double)in.cache_hits);
    cJSON_AddNumberToObject(ca, "misses", (double)in.cache_misses);
    cJSON *mo = cJSON_AddObjectToObject(o, "model");
    cJSON_AddStringToObject(mo, "lm", a->o.lm_path);
    cJSON_AddStringToObject(mo, "vision", a->o.vision_path);
    cJSON_AddStringToObject(mo, "vision_kind", in.vision_kind);
    cJSON_AddNumberToObject(mo, "n_embd", in.n_embd);
    cJSON_AddNumberToObject(mo, "n_layer", in.n_layer);
    cJSON_AddBoolToObject(mo, "image_attention_bidirectional", in.non_causal);
    cJSON_AddStringToObject(mo, "template", in.builtin_template ? "gemma4" : "model");
    cJSON_AddStringToObject(mo, "template_origin", in.template_origin);
    cJSON_AddBoolToObject(mo, "thinking", a->o.params.think);
    cJSON *sa = cJSON_AddObjectToObject(o, "sampling");
    cJSON_AddNumberToObject(sa, "temp", a->o.params.temp);
    cJSON_AddNumberToObject(sa, "top_k", a->o.params.top_k);
    cJSON_AddNumberToObject(sa, "top_p", a->o.params.top_p);
    cJSON_AddNumberToObject(sa, "seed", a->o.params.seed);
    cJSON_AddNumberToObject(sa, "threads", in.threads);
    char *js = cJSON_PrintUnformatted(o);
    if (js) puts(js);
    fflush(stdout);
    free(js);
    cJSON_Delete(o);
}

static int one_turn(chat_session *s, const chat_args *a, const chat_media *media, int n_media,
                    const char *text) {
    chat_turn_result r;
    char err[1024] = "";
    stream_state st = {0};
    int rc = chat_session_prefill(s, media, n_media, text, &r, err, sizeof err);
    cJSON *pj = !rc && a->print_prompt && a->json ? prompt_json(s) : NULL; /* before the answer */
    if (!rc && a->print_prompt && !a->json) { /* before the answer: shown even if it fails */
        char *pt;
        int32_t *ids;
        int n;
        if (!chat_session_prompt(s, &pt, &ids, &n)) {
            fprintf(stderr, "g4v chat: prompt (%d positions):\n%s\ng4v chat: ids:", n, pt);
            for (int i = 0; i < n; i++) fprintf(stderr, " %d", (int)ids[i]);
            fputc('\n', stderr);
            free(pt);
            free(ids);
        }
    }
    if (!rc)
        rc = chat_session_generate(s, a->json ? NULL : emit_stdout, &st, &r, err, sizeof err);
    if (a->json) {
        print_json(s, a, media, &r, rc, err, pj);
    } else {
        if (st.in_thought) fputs("\n[/thinking]\n", stderr);
        if (r.text) fputc('\n', stdout);
        fflush(stdout);
        if (!rc && a->o.verbose)
            fprintf(stderr, "g4v chat: %d prompt positions decoded, %d held from earlier turns\n",
                    r.n_prompt_pos, r.n_cached);
    }
    if (rc) fprintf(stderr, "g4v chat: %s\n", err);
    chat_turn_result_free(&r);
    return rc;
}

static char *trim_line(char *s) {
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
        s[--n] = 0;
    while (*s == ' ' || *s == '\t') s++;
    return s;
}

static int interactive(chat_session *s, chat_args *a) {
    int tty = isatty(0) && isatty(1) && !a->json;
    if (tty)
        fprintf(stderr, "g4v chat: a conversation; /image PATH or /video PATH attach to the "
                        "next message, /quit ends\n");
    char *line = NULL;
    size_t cap = 0;
    int last = CHAT_OK;
    /* paths attached with /image and /video live as long as the session (a later message may
     * refer to them by position in the JSON report) */
    char **paths = NULL;
    int n_paths = 0;
    for (;;) {
        if (tty) {
            fprintf(stdout, "> ");
            fflush(stdout);
        }
        ssize_t n = getline(&line, &cap, stdin);
        if (n < 0) break;
        char *l = trim_line(line);
        if (!*l) continue;
        if (!strcmp(l, "/quit") || !strcmp(l, "/exit")) break;
        const char *sp = l[0] == '/' ? strchr(l, ' ') : NULL; /* "/<medium> PATH" */
        int medium = sp ? fe_medium_from_name(l + 1, (size_t)(sp - l - 1)) : -1;
        if (medium >= 0) {
            char *p = trim_line((char *)sp + 1);
            char **pv = realloc(paths, (size_t)(n_paths + 1) * sizeof *pv);
            char *dup = strdup(p);
            if (!pv || !dup || add_media(a, dup, (fe_medium)medium)) {
                free(dup);
                if (pv) paths = pv;
                fprintf(stderr, "g4v chat: out of memory\n");
                break;
            }
            paths = pv;
            paths[n_paths++] = dup;
            continue;
        }
        if (l[0] == '/' && strncmp(l, "//", 2)) {
            fprintf(stderr, "g4v chat: unknown command '%s' (/image PATH, /video PATH, /quit; "
                            "start a message with // to send a leading /)\n", l);
            continue;
        }
        if (!strncmp(l, "//", 2)) l++;
        last = one_turn(s, a, a->media, a->n_media, l);
        a->n_media = 0; /* attachments go with one message, sent or refused */
        if (last == CHAT_ERR_INTERNAL) break;
    }
    free(line);
    for (int i = 0; i < n_paths; i++) free(paths[i]);
    free(paths);
    return last;
}

/* g4v chat --version [--json]: the CPU backend is loaded as a chat would load it. Exit 3 when
 * there is none. */
static int print_version(int json) {
    char line[1600], path[1024];
    int rc = cli_llama_cpu_line(line, sizeof line);
    if (json) {
        cJSON *o = cJSON_CreateObject(), *b = cli_llama_cpu_json();
        char *text = NULL;
        if (o && b && cJSON_AddStringToObject(o, "version", g4v_version())) {
            cJSON_AddItemToObject(o, "llama_cpu_backend", b);
            b = NULL;
            text = cJSON_Print(o);
        }
        if (text) {
            fe_utf8_sanitize(text); /* the library path may hold bytes that are not UTF-8 */
            printf("%s\n", text);
        }
        cJSON_Delete(o);
        cJSON_Delete(b);
        if (!text) {
            fprintf(stderr, "g4v chat: out of memory\n");
            return G4V_EXIT_INTERNAL;
        }
        cJSON_free(text);
    } else {
        cli_llama_cpu_path(path, sizeof path);
        printf("g4v %s\nllama.cpp CPU backend: %s\n", g4v_version(), line);
        if (path[0]) printf("  from %s\n", path);
    }
    return rc ? G4V_EXIT_MODEL : G4V_EXIT_OK;
}

/* Only --version and --json: no model is needed, so the required options are not asked for. */
static int only_version(int argc, char **argv, int *json) {
    int version = 0;
    *json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--version"))
            version = 1;
        else if (!strcmp(argv[i], "--json"))
            *json = 1;
        else
            return 0;
    }
    return version;
}

/* A text file whole (malloc'ed, at most 4 MiB), or NULL with the reason printed. */
static char *read_text(const char *opt, const char *path) {
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    size_t n = 0, cap = 4 << 20;
    if (f && (b = malloc(cap + 1))) n = fread(b, 1, cap + 1, f);
    if (!f || !b || ferror(f) || n > cap) {
        fprintf(stderr, "g4v chat: %s %s: %s\n", opt, path,
                !f ? strerror(errno) : !b ? "out of memory" : n > cap ? "larger than 4 MiB"
                                                                     : "read error");
        free(b);
        b = NULL;
    } else {
        b[n] = 0;
    }
    if (f) fclose(f);
    return b;
}

/* --json-schema FILE or --grammar FILE into a.o.params.grammar (*owned: free it). 0, or an exit
 * code. */
static int answer_grammar(chat_args *a, char **owned) {
    *owned = NULL;
    if (a->json_schema && a->grammar) {
        fprintf(stderr, "g4v chat: --json-schema and --grammar: give one (both constrain the "
                        "answer)\n");
        return G4V_EXIT_USAGE;
    }
    if (!a->json_schema && !a->grammar) return G4V_EXIT_OK;
    char *text = read_text(a->json_schema ? "--json-schema" : "--grammar",
                           a->json_schema ? a->json_schema : a->grammar);
    if (!text) return G4V_EXIT_USAGE;
    if (a->grammar) {
        a->o.params.grammar = *owned = text;
        return G4V_EXIT_OK;
    }
    char err[600];
    int rc = chat_schema_grammar(text, strlen(text), owned, err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "g4v chat: --json-schema %s: %s\n", a->json_schema, err);
        return G4V_EXIT_USAGE;
    }
    a->o.params.grammar = *owned;
    return G4V_EXIT_OK;
}

int cmd_chat(int argc, char **argv) {
    chat_args a;
    memset(&a, 0, sizeof a);
    int json;
    if (only_version(argc, argv, &json)) return print_version(json);
    int p = parse_args(argc, argv, &a);
    if (p) {
        free(a.media);
        return p > 0 ? G4V_EXIT_OK : G4V_EXIT_USAGE;
    }
    if (a.version) {
        free(a.media);
        return print_version(a.json);
    }
    ms_paths where; /* a.o.vision_path and a.o.lm_path may point into it */
    int rc = ms_resolve_front("chat", &where, &a.o.vision_path, &a.o.lm_path, a.ollama,
                              a.revision, MS_FRONT_LM_REQUIRED);
    if (rc) {
        free(a.media);
        return rc == MS_ERR_USAGE ? G4V_EXIT_USAGE : G4V_EXIT_MODEL;
    }
    char *grammar;
    rc = answer_grammar(&a, &grammar);
    if (rc) {
        free(a.media);
        return rc;
    }
    g4v_video_quiet_ffmpeg();
    chat_session *s;
    char err[1024];
    rc = chat_session_open(&a.o, &s, err, sizeof err);
    free(grammar); /* the session made its sampler of it */
    if (rc) {
        fprintf(stderr, "g4v chat: %s\n", err);
        free(a.media);
        return exit_for(rc);
    }
    if (a.prompt) {
        rc = one_turn(s, &a, a.media, a.n_media, a.prompt);
    } else {
        rc = interactive(s, &a);
    }
    chat_session_close(s);
    free(a.media);
    return exit_for(rc);
}

#endif
