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
#include "chat_session.h"
#include "math_option.h"

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
    const char *math_opt; /* the option that set o.math (NULL: none) */
} chat_args;

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: g4v chat --lm LM.gguf --model VISION [--image FILE]... [--video FILE]...\n"
        "                [-p TEXT] [options]\n"
        "\n"
        "Answers questions about images and videos with a Gemma 4 language model run by\n"
        "llama.cpp's libllama; the images are encoded by g4v and their soft tokens fed to the\n"
        "model exactly as llama.cpp's libmtmd feeds its own (docs/CHAT.md).\n"
        "\n"
        "  --lm FILE       the Gemma 4 text model, a GGUF (e.g. gemma-4-E4B-it-Q4_K_M.gguf)\n"
        "  --model VISION  the vision model: a checkpoint directory or a llama.cpp mmproj .gguf;\n"
        "                  its soft-token width must be the text model's hidden size\n"
        "  --image FILE    an image for the first message (repeatable; in order, before the text)\n"
        "  --video FILE    a video for the first message (repeatable)\n"
        "  -p, --prompt TEXT  the message; answer it and exit. Without -p: a conversation read\n"
        "                  from stdin, one message per line (the KV cache keeps every turn):\n"
        "                    /image PATH   attach an image to the next message\n"
        "                    /video PATH   attach a video to the next message\n"
        "                    /quit         end (so does end of input)\n"
        "  --system TEXT   a system prompt\n"
        "  --json          print a JSON object per answer (text, tokens, timings, media with\n"
        "                  their soft-token counts and feature-cache hits) instead of streaming\n"
        "  --temp T        sampling temperature (default 1.0; 0 = greedy)\n"
        "  --top-k K       (default 64; 0 = off)\n"
        "  --top-p P       (default 0.95; 1 = off)\n"
        "  --seed N        sampling seed (default: from the clock)\n"
        "  --max-tokens N  answer length cap (default 1024; 0 = until the end of the turn)\n"
        "  --ctx N         context size in tokens (default 8192)\n"
        "  --threads N     threads for both models (default: one per CPU)\n"
        "  --tokens N      soft-token budget per image, one of " CLI_BUDGETS " (default %d)\n"
        "  --video-tokens N  budget per video frame (default %d)\n"
        "  --frames N      frames sampled per video (default %d)\n"
        "  --math MODE     the encoder's math mode: fast (default: bf16 GEMM inputs, ~3e-3\n"
        "                  rel. error), precise (f32 GEMM inputs, ~1e-6), int8 (int8 linear\n"
        "                  layers, faster, ~2e-2) or int8-blocks (int8 with per-32-block\n"
        "                  scales, docs/NUMERICS.md §12.4)\n"
        "  --precise, --int8, --int8=blocks  the same as --math precise, int8, int8-blocks\n"
        "  --cache DIR     feature cache kept across runs (default: a private one for this run;\n"
        "                  a repeated image is always read from the cache, not re-encoded)\n"
        "  --verbose       show llama.cpp's log\n",
        G4V_DEFAULT_BUDGET, G4V_DEFAULT_VIDEO_BUDGET, G4V_DEFAULT_VIDEO_FRAMES);
}

static int add_media(chat_args *a, const char *path, int is_video) {
    if (a->n_media == a->cap_media) {
        int cap = a->cap_media ? 2 * a->cap_media : 8;
        chat_media *v = realloc(a->media, (size_t)cap * sizeof *v);
        if (!v) return -1;
        a->media = v;
        a->cap_media = cap;
    }
    a->media[a->n_media] = (chat_media){.path = path, .is_video = is_video};
    a->n_media++;
    return 0;
}

static int parse_int(const char *opt, const char *v, long lo, long hi, int *out) {
    long long x;
    if (fe_parse_int(v, lo, hi, &x)) {
        fprintf(stderr, "g4v chat: %s wants an integer in [%ld, %ld], not '%s'\n", opt, lo, hi, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int parse_float(const char *opt, const char *v, double lo, double hi, float *out) {
    double x;
    if (fe_parse_double(v, lo, hi, &x)) {
        fprintf(stderr, "g4v chat: %s wants a number in [%g, %g], not '%s'\n", opt, lo, hi, v);
        return -1;
    }
    *out = (float)x;
    return 0;
}

static int parse_args(int argc, char **argv, chat_args *a) {
    chat_options_init(&a->o);
    a->o.seed = (uint32_t)time(NULL) ^ (uint32_t)getpid();
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int k;
#define NEED()                                                                                \
    do {                                                                                      \
        if (!v) {                                                                             \
            fprintf(stderr, "g4v chat: %s needs a value\n", s);                               \
            return -1;                                                                        \
        }                                                                                     \
        i++;                                                                                  \
    } while (0)
        if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(s, "--lm")) {
            NEED();
            a->o.lm_path = v;
        } else if (!strcmp(s, "--model")) {
            NEED();
            a->o.vision_path = v;
        } else if (!strcmp(s, "--image") || !strcmp(s, "--video")) {
            NEED();
            if (add_media(a, v, s[2] == 'v')) return -1;
        } else if (!strcmp(s, "-p") || !strcmp(s, "--prompt")) {
            NEED();
            a->prompt = v;
        } else if (!strcmp(s, "--system")) {
            NEED();
            a->o.system = v;
        } else if (!strcmp(s, "--json")) {
            a->json = 1;
        } else if (fe_math_alias(s) || !strcmp(s, "--math")) {
            char msg[256];
            const char *name = fe_math_alias(s);
            if (!name) {
                NEED();
                name = v;
            }
            if (fe_math_option(s, name, &a->o.math, &a->math_opt, msg, sizeof msg)) {
                fprintf(stderr, "g4v chat: %s\n", msg);
                return -1;
            }
        } else if (!strcmp(s, "--verbose")) {
            a->o.verbose = 1;
        } else if (!strcmp(s, "--temp")) {
            NEED();
            if (parse_float(s, v, 0, 100, &a->o.temp)) return -1;
        } else if (!strcmp(s, "--top-p")) {
            NEED();
            if (parse_float(s, v, 0, 1, &a->o.top_p)) return -1;
        } else if (!strcmp(s, "--top-k")) {
            NEED();
            if (parse_int(s, v, 0, 1 << 30, &a->o.top_k)) return -1;
        } else if (!strcmp(s, "--seed")) {
            NEED();
            long long x;
            if (v[0] == '-' || fe_parse_int(v, 0, 0xFFFFFFFEll, &x)) {
                fprintf(stderr, "g4v chat: --seed wants an integer in [0, 4294967294]\n");
                return -1;
            }
            a->o.seed = (uint32_t)x;
        } else if (!strcmp(s, "--max-tokens")) {
            NEED();
            if (parse_int(s, v, 0, 1 << 30, &a->o.max_tokens)) return -1;
        } else if (!strcmp(s, "--ctx")) {
            NEED();
            if (parse_int(s, v, 16, 1 << 24, &a->o.n_ctx)) return -1;
        } else if (!strcmp(s, "--threads")) {
            NEED();
            if (parse_int(s, v, 1, 1024, &a->o.threads)) return -1;
        } else if (!strcmp(s, "--tokens") || !strcmp(s, "--video-tokens")) {
            NEED();
            if (parse_int(s, v, 1, 1 << 20, &k)) return -1;
            char msg[160];
            if (g4v_budget_check(k, msg, sizeof msg)) {
                fprintf(stderr, "g4v chat: %s: %s\n", s, msg);
                return -1;
            }
            if (s[2] == 't') a->o.budget = k;
            else a->o.video_budget = k;
        } else if (!strcmp(s, "--frames")) {
            NEED();
            if (parse_int(s, v, 1, 1024, &a->o.video_frames)) return -1;
        } else if (!strcmp(s, "--cache")) {
            NEED();
            a->o.cache_dir = v;
        } else {
            fprintf(stderr, "g4v chat: unknown option '%s' (g4v chat --help)\n", s);
            return -1;
        }
#undef NEED
    }
    if (!a->o.lm_path || !a->o.vision_path) {
        fprintf(stderr, "g4v chat: --lm and --model are required (g4v chat --help)\n");
        return -1;
    }
    return 0;
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

static int emit_stdout(const char *piece, size_t len, void *user) {
    (void)user;
    fwrite(piece, 1, len, stdout);
    fflush(stdout);
    return 0;
}

/* JSON must be UTF-8: a token may end inside a character, or be a stray byte. */
static char *utf8_copy(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    g4v_utf8_sanitize(d);
    return d;
}

static void print_json(const chat_session *s, const chat_args *a, const chat_media *media,
                       const chat_turn_result *r, int rc, const char *err) {
    chat_session_info in;
    chat_session_get_info(s, &in);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ok", rc == CHAT_OK);
    if (rc != CHAT_OK) cJSON_AddStringToObject(o, "error", err);
    char *t = utf8_copy(r->text ? r->text : "", r->text ? r->text_len : 0);
    cJSON_AddStringToObject(o, "text", t ? t : "");
    free(t);
    if (r->stop) cJSON_AddStringToObject(o, "stop", r->stop);
    cJSON *tk = cJSON_AddObjectToObject(o, "tokens");
    cJSON_AddNumberToObject(tk, "prompt", r->n_prompt_pos);
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
        cJSON_AddStringToObject(x, "type", m->is_video ? "video" : "image");
        cJSON_AddNumberToObject(x, "tokens", m->n_rows);
        if (m->is_video) cJSON_AddNumberToObject(x, "frames", m->n_frames);
        int sz[2] = {m->width, m->height};
        cJSON_AddItemToObject(x, "target_size", cJSON_CreateIntArray(sz, 2));
        cJSON_AddBoolToObject(x, "cache_hit", m->cache_hit);
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
    cJSON *sa = cJSON_AddObjectToObject(o, "sampling");
    cJSON_AddNumberToObject(sa, "temp", a->o.temp);
    cJSON_AddNumberToObject(sa, "top_k", a->o.top_k);
    cJSON_AddNumberToObject(sa, "top_p", a->o.top_p);
    cJSON_AddNumberToObject(sa, "seed", a->o.seed);
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
    int rc = chat_session_turn(s, media, n_media, text, a->json ? NULL : emit_stdout, NULL, &r,
                               err, sizeof err);
    if (a->json) {
        print_json(s, a, media, &r, rc, err);
    } else {
        if (r.text) fputc('\n', stdout);
        fflush(stdout);
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
        if (!strncmp(l, "/image ", 7) || !strncmp(l, "/video ", 7)) {
            char *p = trim_line(l + 7);
            char **pv = realloc(paths, (size_t)(n_paths + 1) * sizeof *pv);
            char *dup = strdup(p);
            if (!pv || !dup || add_media(a, dup, l[1] == 'v')) {
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

int cmd_chat(int argc, char **argv) {
    chat_args a;
    memset(&a, 0, sizeof a);
    int p = parse_args(argc, argv, &a);
    if (p) {
        free(a.media);
        return p > 0 ? G4V_EXIT_OK : G4V_EXIT_USAGE;
    }
    g4v_video_quiet_ffmpeg();
    chat_session *s;
    char err[1024];
    int rc = chat_session_open(&a.o, &s, err, sizeof err);
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
