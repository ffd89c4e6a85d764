/* cmd_encode.c - `g4v encode`: images -> Gemma 4 soft tokens; encoding uses the public API only.
 *
 *   g4v encode --model DIR IMAGE... [--tokens N] [--no-exif] [--resize pillow|torchvision]
 *              [--math fast|precise|int8|int8-blocks] [--threads N]
 *              [--json] [--quiet] [--bf16] [--cache DIR [--cache-max-bytes N]] -o OUT
 *
 * IMAGE: a file (JPEG/PNG/WebP/GIF/BMP by content, or a raw uint8 [H, W, 3] .npy taken as decoded
 * RGB), a directory (its image files, sorted) or @LIST (one path per line). Outputs:
 *   one image, OUT.npy           float32 [N, T] (--bf16: uint16 bf16 bits)
 *   OUT.safetensors              one tensor per image (named after the file), metadata per tensor
 *   otherwise OUT is a directory one OUT/<image name>.npy per image (created if needed)
 * stdout: per image the prompt span and its ids (two lines; with several images preceded by
 * "# FILE"), or with --json one JSON object per line (JSON Lines). stderr: a progress bar with
 * ETA when it is a terminal and several images are given; error messages.
 * With several images a bad image is reported and skipped; the exit code is then 2.
 */
#include "cli.h"
#include "frontend.h"
#include "g4v.h"
#include "inputs.h"
#include "math_option.h"
#include "medium.h"
#include "model_store.h"
#include "npy.h"
#include "options.h"
#include "out_safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum { OUT_NPY, OUT_DIR, OUT_SAFETENSORS } out_kind;

typedef struct {
    const char *model, *out, *cache;
    const char *revision; /* --revision: of a Hugging Face repo id given as --model */
    unsigned long long cache_max_bytes;
    fe_opt_list args; /* the IMAGE arguments as given; expanded into in */
    input_list in;
    int tokens, no_exif, threads, json, quiet, bf16, resize;
    g4v_math_mode math;   /* --math, or its aliases --precise, --int8, --int8=blocks */
    const char *math_opt; /* the option that set it (NULL: none) */
    out_kind kind;
    int tokens_set, video, frames; /* video input: --tokens given, --video, --frames N */
    int full_span; /* print the whole span even on a terminal (--full-span) */
} encode_args;

/* On a terminal the span is summarised ("<|image> + 256 x <|image|> + <image|>"): the whole text
 * is 70 to 1120 tokens of noise there. Piped or redirected (scripts), it is printed in full. */
static int span_summary(const encode_args *a) { return !a->full_span && isatty(1); }

#define O(member) FE_FIELD(encode_args, member)

static const fe_opt rows[] = {
    {.name = "model", .kind = FE_OPT_STRING, .flags = FE_OPT_REQUIRED, O(model), .arg = "DIR",
     .help = "checkpoint directory as downloaded (config.json + safetensors), or a llama.cpp "
             "mmproj .gguf file, or a Hugging Face repo id in the local cache "
             "(google/gemma-4-E4B-it; `g4v models` lists them)"},
    MS_OPT_REVISION(encode_args, revision),
    {.kind = FE_OPT_LIST, .flags = FE_OPT_POSITIONAL | FE_OPT_REQUIRED, O(args), .arg = "IMAGE...",
     .help = "JPEG/PNG/WebP/GIF/BMP files (format by content), raw uint8 [H, W, 3] .npy files, "
             "directories (their image files, sorted), or @LIST (a text file with one path per "
             "line)"},
    {.shortopt = 'o', .kind = FE_OPT_STRING, .flags = FE_OPT_REQUIRED, O(out), .arg = "OUT",
     .help = "OUT.npy         one image: float32 [N, T]\n"
             "OUT.safetensors one F32 tensor per image, named after the file, with\n"
             "                metadata <name>.tokens/.grid/.budget/.source/...\n"
             "OUT (other)     a directory: OUT/<image name>.npy per image"},
    FE_OPT_TOKENS(encode_args, tokens,
                  "soft-token budget, one of " CLI_BUDGETS " (default: the model's, from its "
                  "processor_config.json or config.json, else " FE_STR(G4V_DEFAULT_BUDGET) "; "
                  "videos: per frame, default " FE_STR(G4V_DEFAULT_VIDEO_BUDGET) ")"),
    {.name = "no-exif", .kind = FE_OPT_FLAG, O(no_exif), .lo = 1,
     .help = "ignore EXIF orientation (default: apply it, as transformers does)"},
    FE_OPT_RESIZE(encode_args, resize,
                  "which transformers image processor's resize to reproduce: pillow (default; "
                  "Gemma4ImageProcessorPil, Pillow's BICUBIC) or torchvision "
                  "(Gemma4ImageProcessor, transformers' default when torchvision is installed, "
                  "and the 12B's only processor: torch's antialiased bicubic); images and video "
                  "frames"),
    FE_OPT_MATH_ROWS(encode_args, math, math_opt),
    FE_OPT_THREADS(encode_args, threads, 0, "worker threads (default: one per CPU)"),
    {.name = "bf16", .kind = FE_OPT_FLAG, O(bf16), .lo = 1,
     .help = "store bf16 (.npy: uint16 bit patterns; .safetensors: BF16)"},
    {.name = "cache", .kind = FE_OPT_STRING, O(cache), .arg = "DIR",
     .help = "feature cache: an image already encoded with the same model, budget, EXIF choice "
             "and mode is read from DIR instead (identical bytes); new results are stored there. "
             "Safe to share between processes"},
    {.name = "cache-max-bytes", .kind = FE_OPT_UINT, O(cache_max_bytes), .lo = 1,
     .hi = LLONG_MAX, .arg = "N",
     .help = "bound on the cache's size; least recently used entries are removed above it "
             "(default 1073741824)"},
    {.name = "json", .kind = FE_OPT_FLAG, O(json), .lo = 1,
     .help = "print one JSON object per image (JSON Lines) instead of the spans: file, ok, "
             "original_size [w,h], target_size [w,h], grid [w,h], tokens, budget, seconds, "
             "output, prompt ids (boi, image, eoi), cache (\"hit\", \"miss\" or \"off\"); or "
             "error"},
    {.name = "quiet", .shortopt = 'q', .kind = FE_OPT_FLAG, O(quiet), .lo = 1,
     .help = "print nothing on stdout and no progress bar"},
    {.name = "full-span", .kind = FE_OPT_FLAG, O(full_span), .lo = 1,
     .help = "print the whole prompt span on a terminal too"},
    {.kind = FE_OPT_TEXT,
     .help = "\nVideo (MP4/MOV, MKV/WebM, AVI, ... found by content, or any input with --video):\n"},
    {.name = "video", .kind = FE_OPT_FLAG, O(video), .lo = 1,
     .help = "take every input as a video"},
    {.name = "frames", .kind = FE_OPT_INT, O(frames), .lo = 1, .hi = 1024, .arg = "N",
     .help = "frames sampled evenly by index (default " FE_STR(G4V_DEFAULT_VIDEO_FRAMES) "; all "
             "if the video has fewer)"},
    {.kind = FE_OPT_TEXT,
     .help = "  A video's output is all its frames' rows, frame after frame ([sum of N, T]); its\n"
             "  budget is --tokens N per frame (default: the model's "
             "video_processor.max_soft_tokens,\n"
             "  else " FE_STR(G4V_DEFAULT_VIDEO_BUDGET) "; any of the budgets above). stdout gives "
             "the\n"
             "  prompt text that replaces its <|video|>: per frame \"MM:SS <|image>\" + N x "
             "<|video|> +\n"
             "  <image|>, joined by spaces, and \"ids: BOI VIDEOxN EOI\" per frame; --json adds\n"
             "  frames [{index, timestamp, mmss, tokens}], fps, total_frames, prompt_text. "
             "Videos are\n"
             "  not cached.\n\n"},
};

static const fe_cmd encode_cmd = {
    .name = "encode",
    .usage = "encode --model DIR IMAGE... [options] -o OUT",
    .about = "Encodes images into Gemma 4 soft tokens: N rows of T floats per image, the language\n"
             "model's input embeddings for the image-token positions (splice them in unscaled).\n",
    FE_OPTS(rows),
    .epilog =
        "stdout (default): per image the prompt span <|image> <|image|> x N <image|> and a line\n"
        "\"ids: BOI IMAGExN EOI\" with the config's token ids; with several images each pair is\n"
        "preceded by \"# FILE\". On a terminal the span is summarised as\n"
        "\"<|image> + N x <|image|> + <image|>\" (--full-span: the whole text); piped or\n"
        "redirected it is printed in full. A progress bar with ETA goes to stderr when it is a\n"
        "terminal.\n"
        "\n"
        "exit codes: 0 ok, 1 usage, 2 input (an image missing/corrupt/unsupported; with several\n"
        "images the others are still written), 3 model, 4 output (cannot write), 5 internal\n",
};

#undef O

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcasecmp(s + a - b, suffix);
}

/* 0 ok, -1 usage error (message printed), -2 help printed. */
static int parse_args(int argc, char **argv, encode_args *a) {
    int rc = fe_opt_run(&encode_cmd, argc, argv, a);
    if (rc) return rc == FE_OPT_HELP ? -2 : -1;
    for (int i = 0; i < a->args.count; i++)
        if (inputs_add(&a->in, a->args.items[i])) return -1;
    if (!a->in.count) {
        fprintf(stderr, "g4v encode: no IMAGE to encode (see --help)\n");
        return -1;
    }
    a->tokens_set = a->tokens != 0; /* else 0: the model's default budget */
    if (a->cache_max_bytes && !a->cache) {
        fprintf(stderr, "g4v encode: --cache-max-bytes needs --cache DIR\n");
        return -1;
    }
    struct stat st;
    if (ends_with(a->out, ".safetensors")) {
        a->kind = OUT_SAFETENSORS;
    } else if (ends_with(a->out, ".npy") && !(stat(a->out, &st) == 0 && S_ISDIR(st.st_mode))) {
        if (a->in.count > 1) {
            fprintf(stderr,
                    "g4v encode: -o %s: %d images need a directory or a .safetensors "
                    "file, not one .npy\n",
                    a->out, a->in.count);
            return -1;
        }
        a->kind = OUT_NPY;
    } else {
        a->kind = OUT_DIR;
    }
    return 0;
}

/* The output must be creatable before we spend time on the model. 0 or an exit code. */
static int prepare_output(const encode_args *a) {
    if (a->kind == OUT_DIR) {
        if (mkdir(a->out, 0777) && errno != EEXIST) {
            fprintf(stderr, "g4v encode: cannot create directory %s: %s\n", a->out,
                    strerror(errno));
            return G4V_EXIT_OUTPUT;
        }
        struct stat st;
        if (stat(a->out, &st) || !S_ISDIR(st.st_mode) || access(a->out, W_OK)) {
            fprintf(stderr, "g4v encode: %s is not a writable directory\n", a->out);
            return G4V_EXIT_OUTPUT;
        }
        return 0;
    }
    char *copy = strdup(a->out);
    if (!copy) return G4V_EXIT_INTERNAL;
    const char *parent = dirname(copy);
    int ok = access(parent, W_OK) == 0;
    if (!ok)
        fprintf(stderr, "g4v encode: cannot write %s: %s: %s\n", a->out, parent, strerror(errno));
    free(copy);
    return ok ? 0 : G4V_EXIT_OUTPUT;
}

/* Encodes one input: a .npy through g4v_encode_rgb, anything else through g4v_encode_file.
 * Returns a g4v status; the message is in msg. */
static int encode_one(g4v_ctx *ctx, const char *path, const g4v_encode_options *eo, g4v_result *r,
                      char *msg, size_t cap) {
    if (ends_with(path, ".npy")) {
        uint8_t *rgb;
        int w = 0, h = 0, not_npy;
        int st = g4v_npy_read_rgb(path, &rgb, &w, &h, &not_npy, msg, cap);
        if (st) return st;
        if (!not_npy) {
            st = g4v_encode_rgb(ctx, rgb, w, h, (size_t)w * 3, eo, r);
            free(rgb);
            if (st) snprintf(msg, cap, "%s: %s", path, g4v_ctx_error(ctx));
            return st;
        }
        /* not a .npy after all: decoded by content below */
    }
    int st = g4v_encode_file(ctx, path, eo, r);
    if (st) snprintf(msg, cap, "%s", g4v_ctx_error(ctx));
    return st;
}

/* "dir/cat.jpg" -> "cat" */
static void stem(const char *path, char *out, size_t cap) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, cap, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = '\0';
}

static void progress(int done, int total, double t0, int failed) {
    const int width = 30;
    int fill = total ? done * width / total : width;
    double el = fe_now_s() - t0, eta = done ? el / done * (total - done) : 0;
    char bar[64];
    for (int i = 0; i < width; i++)
        bar[i] = i < fill ? '#' : '-';
    bar[width] = '\0';
    fprintf(stderr, "\r[%s] %d/%d  %.1fs elapsed", bar, done, total, el);
    if (done && done < total) fprintf(stderr, ", ETA %.0fs", eta);
    if (failed) fprintf(stderr, ", %d failed", failed);
    fprintf(stderr, "   ");
    if (done == total) fprintf(stderr, "\n");
    fflush(stderr);
}

static void print_span(const g4v_result *r, const char *path, int several, int summary) {
    if (several) printf("# %s\n", path);
    if (summary) {
        printf("<|image> + %d x <|image|> + <image|>\n", r->n_tokens);
    } else {
        fputs("<|image>", stdout);
        for (int i = 0; i < r->n_tokens; i++)
            fputs("<|image|>", stdout);
        fputs("<image|>\n", stdout);
    }
    printf("ids: %d %dx%d %d\n", (int)r->boi_token_id, (int)r->image_token_id, r->n_tokens,
           (int)r->eoi_token_id);
}

static cJSON *int_pair(int a, int b) {
    int v[2] = {a, b};
    return cJSON_CreateIntArray(v, 2);
}

/* The end of one --json line (an image's or a video's): the error when st != 0, then the line,
 * printed and flushed. File names and error messages (which quote paths) may hold bytes that are
 * not UTF-8; they become '?' so that the line stays JSON (never a structural character: those are
 * ASCII). */
static void end_json_line(cJSON *o, int st, const char *msg) {
    if (st) {
        cJSON_AddStringToObject(o, "status", g4v_status_name(st));
        cJSON_AddStringToObject(o, "error", msg);
    }
    char *s = cJSON_PrintUnformatted(o);
    if (s) {
        fe_utf8_sanitize(s);
        puts(s);
    }
    cJSON_free(s);
    cJSON_Delete(o);
    fflush(stdout);
}

static void print_json(const char *path, const g4v_result *r, int st, const char *msg,
                       const char *output, const char *cache) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return;
    cJSON_AddStringToObject(o, "file", path);
    cJSON_AddBoolToObject(o, "ok", st == G4V_OK);
    if (st == G4V_OK) {
        cJSON_AddItemToObject(o, "original_size", int_pair(r->src_width, r->src_height));
        cJSON_AddItemToObject(o, "target_size", int_pair(r->width, r->height));
        cJSON_AddItemToObject(o, "grid", int_pair(r->grid_w, r->grid_h));
        cJSON_AddNumberToObject(o, "tokens", r->n_tokens);
        cJSON_AddNumberToObject(o, "dim", r->dim);
        cJSON_AddNumberToObject(o, "budget", r->budget);
        cJSON_AddNumberToObject(o, "seconds", r->seconds);
        cJSON_AddStringToObject(o, "output", output);
        cJSON *ids = cJSON_CreateObject();
        cJSON_AddNumberToObject(ids, "boi", r->boi_token_id);
        cJSON_AddNumberToObject(ids, "image", r->image_token_id);
        cJSON_AddNumberToObject(ids, "eoi", r->eoi_token_id);
        cJSON_AddItemToObject(o, "prompt_ids", ids);
        cJSON_AddStringToObject(o, "cache", cache);
    }
    end_json_line(o, st, msg);
}

/* Writes rows x dim features (f32, or the bf16 bit patterns with --bf16) for input name: a
 * tensor with meta (key, value pairs) in the safetensors file, the one .npy, or <name>.npy in the
 * directory (#2, #3... when a name repeats). Fills where (a file or tensor name). 0 or -1 (errno).
 */
static int write_rows(const encode_args *a, out_st_writer *sw, const char *name, const float *f32,
                      const uint16_t *bf16, int rows, int dim, const char *const *meta, char *where,
                      size_t cap) {
    if (a->kind == OUT_SAFETENSORS)
        return out_st_add(sw, name, a->bf16 ? "BF16" : "F32",
                          a->bf16 ? (const void *)bf16 : (const void *)f32, rows, dim, meta, where,
                          cap);
    char file[4096];
    if (a->kind == OUT_NPY) {
        snprintf(file, sizeof file, "%s", a->out);
    } else {
        snprintf(file, sizeof file, "%s/%s.npy", a->out, name);
        for (int k = 2; access(file, F_OK) == 0 && k < 100000; k++)
            snprintf(file, sizeof file, "%s/%s#%d.npy", a->out, name, k);
    }
    snprintf(where, cap, "%s", file);
    return a->bf16 ? g4v_npy_write_u16(file, bf16, rows, dim)
                   : g4v_npy_write_f32(file, f32, rows, dim);
}

/* Writes r for input path; fills where (a file or tensor name). 0 or -1 (errno). */
static int write_result(const encode_args *a, out_st_writer *sw, const char *path,
                        const g4v_result *r, char *where, size_t cap) {
    char name[512];
    stem(path, name, sizeof name);
    char tokens[32], grid[48], budget[16], osize[48], tsize[48], dim[16];
    snprintf(tokens, sizeof tokens, "%d", r->n_tokens);
    snprintf(grid, sizeof grid, "%dx%d", r->grid_w, r->grid_h);
    snprintf(budget, sizeof budget, "%d", r->budget);
    snprintf(osize, sizeof osize, "%dx%d", r->src_width, r->src_height);
    snprintf(tsize, sizeof tsize, "%dx%d", r->width, r->height);
    snprintf(dim, sizeof dim, "%d", r->dim);
    /* clang-format off */
    const char *meta[] = {"tokens", tokens, "grid", grid, "budget", budget, "source", path,
                          "original_size", osize, "target_size", tsize, "dim", dim, NULL};
    /* clang-format on */
    return write_rows(a, sw, name, r->features, r->features_bf16, r->n_tokens, r->dim, meta, where,
                      cap);
}

static int exit_for_image(int st) {
    return st == G4V_ERR_NOMEM || st == G4V_ERR_INTERNAL ? G4V_EXIT_INTERNAL : G4V_EXIT_INPUT;
}

/* Video inputs: defined after cmd_encode's image path (the "Video inputs" section below). */
static fe_medium sniff_medium(const char *path);
static int encode_video_input(const encode_args *a, g4v_ctx *ctx, out_st_writer *sw,
                              const char *path, int several, int bar);

/* Loads the model, encodes every input and writes the outputs; returns the exit code. */
static int encode_all(encode_args *a) {
    ms_paths where; /* a->model may point into it: the real path of a stored model */
    int rc = ms_resolve_front("encode", &where, &a->model, NULL, NULL, a->revision, 0);
    if (rc) return rc == MS_ERR_USAGE ? G4V_EXIT_USAGE : G4V_EXIT_MODEL;
    rc = prepare_output(a);
    if (rc) return rc;
    char msg[1024];
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.budget = a->tokens;
    mo.apply_exif = !a->no_exif;
    mo.math = a->math;
    mo.resize = a->resize;
    g4v_model *model = NULL;
    g4v_ctx *ctx = NULL;
    int st = g4v_model_load(a->model, &mo, &model, msg, sizeof msg);
    if (st) {
        fprintf(stderr, "g4v encode: model %s: %s\n", a->model, msg);
        return cli_exit_for_status(st, 1);
    }
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = a->threads;
    if ((st = g4v_ctx_create(model, &co, &ctx, msg, sizeof msg))) {
        fprintf(stderr, "g4v encode: %s\n", msg);
        g4v_model_free(model);
        return G4V_EXIT_INTERNAL;
    }
    g4v_cache *cache = NULL;
    if (a->cache) {
        g4v_cache_options cop;
        g4v_cache_options_init(&cop);
        if (a->cache_max_bytes) cop.max_bytes = a->cache_max_bytes;
        if ((st = g4v_cache_open(a->cache, &cop, &cache, msg, sizeof msg))) {
            fprintf(stderr, "g4v encode: --cache: %s\n", msg);
            rc = G4V_EXIT_OUTPUT;
            goto done;
        }
        g4v_ctx_set_cache(ctx, cache);
    }
    out_st_writer *sw = NULL;
    if (a->kind == OUT_SAFETENSORS && !(sw = out_st_open(a->out))) {
        fprintf(stderr, "g4v encode: cannot write %s: %s\n", a->out, strerror(errno));
        rc = G4V_EXIT_OUTPUT;
        goto done;
    }
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.bf16 = a->bf16;
    int several = a->in.count > 1, failed = 0, written = 0;
    int bar = several && !a->quiet && isatty(2);
    double t0 = fe_now_s();
    if (bar) progress(0, a->in.count, t0, 0);
    for (int i = 0; i < a->in.count && rc != G4V_EXIT_OUTPUT && rc != G4V_EXIT_INTERNAL; i++) {
        const char *path = a->in.paths[i];
        g4v_result r;
        char where[4096] = "";
        if (a->video || sniff_medium(path) == FE_MEDIUM_VIDEO) {
            int e = encode_video_input(a, ctx, sw, path, several, bar);
            if (e)
                failed++;
            else
                written++;
            if (e > rc) rc = e;
            if (bar) progress(i + 1, a->in.count, t0, failed);
            continue;
        }
        st = encode_one(ctx, path, &eo, &r, msg, sizeof msg);
        if (st) {
            failed++;
            if (bar) fprintf(stderr, "\n");
            fprintf(stderr, "g4v encode: %s\n", msg);
            int e = exit_for_image(st);
            if (e > rc) rc = e;
            if (a->json) print_json(path, &r, st, msg, "", "");
        } else if (write_result(a, sw, path, &r, where, sizeof where)) {
            if (bar) fprintf(stderr, "\n");
            fprintf(stderr, "g4v encode: cannot write %s: %s\n",
                    a->kind == OUT_SAFETENSORS ? a->out : where, strerror(errno));
            rc = G4V_EXIT_OUTPUT;
        } else {
            written++;
            const char *cache_state = !cache ? "off" : g4v_ctx_cache_hit(ctx) ? "hit" : "miss";
            if (a->json)
                print_json(path, &r, G4V_OK, "", where, cache_state);
            else if (!a->quiet)
                print_span(&r, path, several, span_summary(a));
            if (!a->quiet && !bar && !a->json)
                fprintf(
                    stderr, "g4v encode: %s %dx%d -> %dx%d, %d soft tokens x %d -> %s (%.2fs%s)\n",
                    path, r.src_width, r.src_height, r.width, r.height, r.n_tokens, r.dim, where,
                    r.seconds, cache && g4v_ctx_cache_hit(ctx) ? ", from the cache" : "");
        }
        if (bar) progress(i + 1, a->in.count, t0, failed);
    }
    if (sw && out_st_close(sw, rc != G4V_EXIT_OUTPUT && rc != G4V_EXIT_INTERNAL && written > 0)) {
        fprintf(stderr, "g4v encode: cannot write %s: %s\n", a->out, strerror(errno));
        rc = G4V_EXIT_OUTPUT;
    }
    if (several && failed && !a->quiet)
        fprintf(stderr, "g4v encode: %d of %d images failed\n", failed, a->in.count);
    if (cache) {
        g4v_cache_stats cs;
        g4v_cache_get_stats(cache, &cs, NULL, 0);
        if (cs.errors && !a->quiet)
            fprintf(stderr,
                    "g4v encode: warning: %llu cache writes to %s failed (results are "
                    "still correct, but not cached)\n",
                    (unsigned long long)cs.errors, a->cache);
    }
done:
    g4v_ctx_free(ctx);
    g4v_cache_close(cache);
    g4v_model_free(model);
    return rc;
}

/* ---- Video inputs (docs/VIDEO.md) ---- */

/* FE_MEDIUM_VIDEO if the file's first bytes look like a video container, else
 * FE_MEDIUM_IMAGE (an unreadable file too: the image decoder says what is wrong). */
static fe_medium sniff_medium(const char *path) {
    unsigned char head[16];
    FILE *f = fopen(path, "rb");
    if (!f) return FE_MEDIUM_IMAGE;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return g4v_video_sniff(head, n) ? FE_MEDIUM_VIDEO : FE_MEDIUM_IMAGE;
}

static void print_video_span(const g4v_video_result *r, const char *path, int several,
                             int summary) {
    if (several) printf("# %s\n", path);
    if (summary && r->n_frames > 0) { /* first frame, then the totals */
        long total = 0;
        for (int i = 0; i < r->n_frames; i++) total += r->frames[i].n_tokens;
        printf("%s <|image> + %d x <|video|> + <image|> ... (%d frames, %ld x <|video|> in all)\n",
               r->frames[0].mmss, r->frames[0].n_tokens, r->n_frames, total);
    } else {
        size_t len = g4v_video_prompt_text(r, NULL, 0);
        char *text = malloc(len + 1);
        if (text) {
            g4v_video_prompt_text(r, text, len + 1);
            puts(text);
            free(text);
        }
    }
    fputs("ids:", stdout);
    for (int i = 0; i < r->n_frames; i++)
        printf(" %d %dx%d %d", (int)r->boi_token_id, (int)r->video_token_id, r->frames[i].n_tokens,
               (int)r->eoi_token_id);
    putchar('\n');
}

static void print_video_json(const char *path, const g4v_video_result *r, int st, const char *msg,
                             const char *output) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return;
    cJSON_AddStringToObject(o, "file", path);
    cJSON_AddBoolToObject(o, "ok", st == G4V_OK);
    cJSON_AddStringToObject(o, "kind", "video");
    if (st == G4V_OK) {
        cJSON_AddItemToObject(o, "original_size", int_pair(r->src_width, r->src_height));
        cJSON_AddItemToObject(o, "target_size", int_pair(r->width, r->height));
        cJSON_AddItemToObject(o, "grid", int_pair(r->frames[0].grid_w, r->frames[0].grid_h));
        cJSON_AddNumberToObject(o, "tokens", r->n_tokens);
        cJSON_AddNumberToObject(o, "tokens_per_frame", r->frames[0].n_tokens);
        cJSON_AddNumberToObject(o, "dim", r->dim);
        cJSON_AddNumberToObject(o, "budget", r->budget);
        cJSON_AddNumberToObject(o, "total_frames", (double)r->total_frames);
        char num[32]; /* fps, duration and timestamps exactly (fe_format_double) */
        cJSON_AddRawToObject(o, "fps", fe_format_double(num, sizeof num, r->fps));
        cJSON_AddRawToObject(o, "duration", fe_format_double(num, sizeof num, r->duration));
        cJSON_AddStringToObject(o, "codec", r->codec);
        cJSON_AddStringToObject(o, "container", r->container);
        cJSON *frames = cJSON_AddArrayToObject(o, "frames");
        for (int i = 0; frames && i < r->n_frames; i++) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddNumberToObject(f, "index", (double)r->frames[i].index);
            cJSON_AddRawToObject(f, "timestamp",
                                 fe_format_double(num, sizeof num, r->frames[i].timestamp));
            cJSON_AddStringToObject(f, "mmss", r->frames[i].mmss);
            cJSON_AddNumberToObject(f, "tokens", r->frames[i].n_tokens);
            cJSON_AddItemToArray(frames, f);
        }
        cJSON_AddNumberToObject(o, "seconds", r->seconds);
        cJSON_AddStringToObject(o, "output", output);
        size_t len = g4v_video_prompt_text(r, NULL, 0);
        char *text = malloc(len + 1);
        if (text) {
            g4v_video_prompt_text(r, text, len + 1);
            cJSON_AddStringToObject(o, "prompt_text", text);
            free(text);
        }
        cJSON *ids = cJSON_CreateObject();
        cJSON_AddNumberToObject(ids, "boi", r->boi_token_id);
        cJSON_AddNumberToObject(ids, "video", r->video_token_id);
        cJSON_AddNumberToObject(ids, "eoi", r->eoi_token_id);
        cJSON_AddItemToObject(o, "prompt_ids", ids);
    }
    end_json_line(o, st, msg);
}

/* Writes a video's rows like an image's (one [rows, T] array / tensor); the safetensors metadata
 * adds frames, tokens_per_frame, frame_indices, timestamps (comma-separated), fps, total_frames. */
static int write_video(const encode_args *a, out_st_writer *sw, const char *path,
                       const g4v_video_result *r, char *where, size_t cap) {
    char name[512];
    stem(path, name, sizeof name);
    char tokens[32], per[32], nf[16], grid[48], budget[16], osize[48], tsize[48], dim[16];
    char fps[40], total[32];
    snprintf(tokens, sizeof tokens, "%d", r->n_tokens);
    snprintf(per, sizeof per, "%d", r->frames[0].n_tokens);
    snprintf(nf, sizeof nf, "%d", r->n_frames);
    snprintf(grid, sizeof grid, "%dx%d", r->frames[0].grid_w, r->frames[0].grid_h);
    snprintf(budget, sizeof budget, "%d", r->budget);
    snprintf(osize, sizeof osize, "%dx%d", r->src_width, r->src_height);
    snprintf(tsize, sizeof tsize, "%dx%d", r->width, r->height);
    snprintf(dim, sizeof dim, "%d", r->dim);
    snprintf(fps, sizeof fps, "%.17g", r->fps);
    snprintf(total, sizeof total, "%lld", (long long)r->total_frames);
    char *indices = NULL, *stamps = NULL;
    if (a->kind == OUT_SAFETENSORS) { /* only safetensors has room for metadata */
        size_t lcap = (size_t)r->n_frames * 28 + 1;
        indices = calloc(1, lcap);
        stamps = calloc(1, lcap);
        if (!indices || !stamps) {
            free(indices);
            free(stamps);
            errno = ENOMEM;
            return -1;
        }
        for (int i = 0, ni = 0, ns = 0; i < r->n_frames; i++) {
            ni += snprintf(indices + ni, lcap - (size_t)ni, "%s%lld", i ? "," : "",
                           (long long)r->frames[i].index);
            ns += snprintf(stamps + ns, lcap - (size_t)ns, "%s%.17g", i ? "," : "",
                           r->frames[i].timestamp);
        }
    }
    /* clang-format off */
    const char *meta[] = {"tokens", tokens, "frames", nf, "tokens_per_frame", per, "grid", grid,
                          "budget", budget, "source", path, "original_size", osize,
                          "target_size", tsize, "dim", dim, "fps", fps, "total_frames", total,
                          "frame_indices", indices ? indices : "", "timestamps",
                          stamps ? stamps : "", NULL};
    /* clang-format on */
    int rc = write_rows(a, sw, name, r->features, r->features_bf16, r->n_tokens, r->dim, meta,
                        where, cap);
    free(indices);
    free(stamps);
    return rc;
}

/* Encodes and writes one video input; returns 0 or the exit code it earns. */
static int encode_video_input(const encode_args *a, g4v_ctx *ctx, out_st_writer *sw,
                              const char *path, int several, int bar) {
    g4v_video_options vo;
    g4v_video_options_init(&vo);
    vo.budget = a->tokens; /* 0: the model's per-frame default */
    vo.num_frames = a->frames;
    vo.bf16 = a->bf16;
    g4v_video_result r;
    char where[4096] = "";
    int st = g4v_encode_video_file(ctx, path, &vo, &r);
    if (st) {
        if (bar) fprintf(stderr, "\n");
        fprintf(stderr, "g4v encode: %s\n", g4v_ctx_error(ctx));
        if (a->json) print_video_json(path, &r, st, g4v_ctx_error(ctx), "");
        return exit_for_image(st);
    }
    if (write_video(a, sw, path, &r, where, sizeof where)) {
        if (bar) fprintf(stderr, "\n");
        fprintf(stderr, "g4v encode: cannot write %s: %s\n",
                a->kind == OUT_SAFETENSORS ? a->out : where, strerror(errno));
        return G4V_EXIT_OUTPUT;
    }
    if (a->json)
        print_video_json(path, &r, G4V_OK, "", where);
    else if (!a->quiet)
        print_video_span(&r, path, several, span_summary(a));
    if (!a->quiet && !bar && !a->json)
        fprintf(stderr,
                "g4v encode: %s video %dx%d, %lld frames at %.3f fps -> %d frames at %dx%d, "
                "%d soft tokens x %d -> %s (%.2fs)\n",
                path, r.src_width, r.src_height, (long long)r.total_frames, r.fps, r.n_frames,
                r.width, r.height, r.n_tokens, r.dim, where, r.seconds);
    return 0;
}

int cmd_encode(int argc, char **argv) {
    encode_args a;
    memset(&a, 0, sizeof a);
    int r = parse_args(argc, argv, &a);
    if (r) {
        inputs_free(&a.in);
        fe_opt_list_free(&a.args);
        return r == -2 ? G4V_EXIT_OK : G4V_EXIT_USAGE;
    }
    g4v_video_quiet_ffmpeg(); /* FFmpeg's own stderr chatter: our messages say what failed */
    int rc = encode_all(&a);
    inputs_free(&a.in);
    fe_opt_list_free(&a.args);
    return rc;
}
