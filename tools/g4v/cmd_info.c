/* cmd_info.c - `g4v info --model DIR [--json]`: loads a checkpoint's vision tower through the
 * public API (g4v_model_load validates every tensor it uses and reads no text weights) and
 * describes it from g4v_model_info and g4v_model_fingerprint: variant, dimensions, options,
 * parameter count and bytes, dtypes, where the tensors came from, the prompt token ids, the
 * supported soft-token budgets and the input limits in force (g4v_model_options' defaults, which
 * this load and `g4v encode` use), and, in a g4v built with libllama, the CPU backend llama.cpp
 * runs `g4v chat`'s text model on (llama_cpu.h). --json prints the same fields as one JSON object.
 */
#include "cli.h"
#include "frontend.h"
#include "g4v.h"
#include "llama_cpu.h"
#include "math_option.h"
#include "model_store.h"
#include "options.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const int budgets[] = {G4V_BUDGETS};
#define NBUDGETS (int)(sizeof budgets / sizeof budgets[0])

typedef struct limit {
    const char *name; /* the g4v_model_options field */
    double value;
} limit;
#define NLIMITS 8

/* The limits in force, as g4v_model_info reports them for a model loaded with mo. */
static void limits_of(const g4v_model_info *mo, limit out[NLIMITS]) {
    out[0] = (limit){"max_pixels", (double)mo->max_pixels};
    out[1] = (limit){"max_dimension", mo->max_dimension};
    out[2] = (limit){"max_file_bytes", (double)mo->max_file_bytes};
    out[3] = (limit){"max_header_bytes", (double)mo->max_header_bytes};
    out[4] = (limit){"max_config_bytes", (double)mo->max_config_bytes};
    out[5] = (limit){"max_tensor_count", (double)mo->max_tensor_count};
    out[6] = (limit){"max_video_frames", (double)mo->max_video_frames};
    out[7] = (limit){"max_video_seconds", mo->max_video_seconds};
}

/* 1234567 -> "1,234,567" */
static const char *grouped(long long v, char *buf, size_t cap) {
    char raw[32];
    int n = snprintf(raw, sizeof raw, "%lld", v), o = 0;
    for (int i = 0; i < n && o + 2 < (int)cap; i++) {
        if (i && raw[i - 1] != '-' && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = '\0';
    return buf;
}

typedef struct identity {
    char fingerprint[G4V_FINGERPRINT_HEX];
    g4v_math_mode math;   /* the mode whose fingerprint is given */
    const char *math_opt; /* the option that set it (NULL: none) */
    double seconds;
} identity;

typedef struct info_args {
    const char *dir;
    const char *revision; /* --revision: of a Hugging Face repo id given as --model */
    int json;
    identity id; /* its math and math_opt: the mode options */
} info_args;

#define O(member) FE_FIELD(info_args, member)

static const fe_opt rows[] = {
    {.name = "model", .kind = FE_OPT_STRING, .flags = FE_OPT_REQUIRED, O(dir), .arg = "DIR",
     .help = "the checkpoint directory, or an mmproj .gguf file, or a Hugging Face repo id in "
             "the local cache (google/gemma-4-E4B-it; `g4v models` lists them) (required)"},
    MS_OPT_REVISION(info_args, revision),
    {.name = "json", .kind = FE_OPT_FLAG, O(json), .lo = 1,
     .help = "print one JSON object instead of text"},
    FE_OPT_MATH_ROWS(info_args, id.math, id.math_opt),
};

static const fe_cmd info_cmd = {
    .name = "info",
    .usage = "info --model DIR [--json] [--math fast|precise|int8|int8-blocks]",
    .about =
        "Describes the vision tower of a Gemma 4 checkpoint directory (config.json plus\n"
        "model.safetensors, model.safetensors.index.json + shards, or an\n"
        "optiq_vision.safetensors sidecar; names with or without the \"model.\" prefix), or\n"
        "of a llama.cpp mmproj GGUF file (docs/GGUF.md; source names the file type).\n"
        "Every vision tensor is validated against config.json; text weights are not read.\n"
        "The fingerprint (g4v_model_fingerprint) is a SHA-256 over the numerics version and\n"
        "mode, the configuration values that matter and every vision tensor's content: the\n"
        "same for one checkpoint in any layout, different if any of those changes.\n"
        "kernels names the kernel variant this CPU runs for each step (G4V_ISA caps it):\n"
        "default-mode outputs are bit-identical between machines only when it is the same.\n"
        "kernel rule says whether this CPU's kernels use vdpbf16ps or the FMA ones (a fixed\n"
        "rule per CPU vendor and family, docs/NUMERICS.md §6.6); amx whether Intel AMX tiles\n"
        "are used here (CPU, OS permission, G4V_ISA and the start-up self-test) and, if not,\n"
        "why. sharp layers: layers whose attention is sharp (docs/NUMERICS.md §6.5) run as\n"
        "PRECISE even in the fast and int8 modes; --json lists each layer's sharpness.\n"
        "The mode options choose the mode whose fingerprint is given (default: the default\n"
        "mode); for int8 and int8-blocks, info also names the INT8 mode's GEMM kernel.\n",
    .heading = "options:",
    FE_OPTS(rows),
    .epilog = "exit codes: 0 ok, 1 usage error, 3 model error (missing, malformed or\n"
              "            inconsistent checkpoint), 5 internal error\n",
};

#undef O

/* The INT8 mode's GEMM kernel: the first one in the kernel path's gemm_kernels list whose name
 * ends in "-q8" (blocks: "-q8b"), the one g4v_wmat_create takes in that mode, or "-". */
static const char *int8_kernel(const char *path, int blocks) {
    static char name[64];
    const char *l = strstr(path, "gemm_kernels="), *suffix = blocks ? "-q8b" : "-q8";
    size_t sl = strlen(suffix);
    const char *q = l ? strstr(l, suffix) : NULL;
    while (q && q[sl] != ',' && q[sl] != '\0' && q[sl] != ';' && q[sl] != ' ')
        q = strstr(q + 1, suffix); /* "-q8" inside "-q8b": the next one */
    if (!q) return "-";
    const char *s = q;
    while (s > l && s[-1] != ',' && s[-1] != '=') s--;
    size_t n = (size_t)(q + sl - s) < sizeof name ? (size_t)(q + sl - s) : sizeof name - 1;
    memcpy(name, s, n);
    name[n] = '\0';
    return name;
}

static void print_text(const char *dir, const g4v_model_info *v, const limit *lim,
                       const identity *id) {
    char a[40];
    printf("model         %s\n", dir);
    printf("variant       %s (from hidden size %d and text hidden size %d)\n", v->variant,
           v->hidden_size, v->dim);
    printf("kind          %s\n", v->kind);
    if (!strcmp(v->kind, "unified")) {
        int side = v->patch_size * v->pooling_kernel_size;
        printf("embedder      encoder-free: one soft token per %dx%d patch (%d values), width %d\n",
               side, side, 3 * side * side, v->hidden_size);
        printf("positions     table %d x 2 x %d\n", v->position_embedding_size, v->hidden_size);
        printf("options       layer_norm_eps %g, rms_norm_eps %g\n", v->layer_norm_eps,
               v->rms_norm_eps);
    } else {
        printf("vision tower  %d layers, hidden %d, intermediate %d, %d heads (%d kv), "
               "head_dim %d\n",
               v->num_layers, v->hidden_size, v->intermediate_size, v->num_heads, v->num_kv_heads,
               v->head_dim);
        printf("patches       %d px, pooling %dx%d, position table 2 x %d x %d\n", v->patch_size,
               v->pooling_kernel_size, v->pooling_kernel_size, v->position_embedding_size,
               v->hidden_size);
        printf("options       clipped linears: %s, standardize: %s, rope_theta %g, "
               "rms_norm_eps %g\n",
               v->use_clipped_linears ? "yes" : "no", v->standardize ? "yes" : "no", v->rope_theta,
               v->rms_norm_eps);
    }
    printf("text hidden   %d (soft-token width)\n", v->dim);
    printf("parameters    %s", grouped(v->param_count, a, sizeof a));
    printf(" (%s bytes = %.1f MiB as stored)\n", grouped((long long)v->weight_bytes, a, sizeof a),
           (double)v->weight_bytes / (1024.0 * 1024.0));
    printf("dtypes       ");
    for (int d = 0; d < v->n_dtypes; d++)
        printf(" %s: %lld tensors, %s bytes;", v->dtypes[d].name, (long long)v->dtypes[d].tensors,
               grouped((long long)v->dtypes[d].bytes, a, sizeof a));
    printf("\n");
    printf("files         %s (naming: %s)\n", v->source, v->naming);
    printf("fingerprint   %s\n              (%s mode, numerics version %d; computed in %.2f s)\n",
           id->fingerprint,
           id->math != G4V_MATH_FAST ? g4v_math_mode_name(id->math) : "default (fast)",
           v->numerics_version,
           id->seconds);
    printf("kernels       %s\n", v->kernels);
    printf("kernel rule   %s\n", v->kernel_rule);
    printf("amx           %s: %s\n              (self-test %s)\n", v->amx_usable ? "usable" : "no",
           v->amx, v->amx_self_test);
    char sharp[1024];
    fe_info_sharpness_line(v, sharp, sizeof sharp);
    printf("sharp layers  %s\n", sharp);
    if (id->math == G4V_MATH_INT8 || id->math == G4V_MATH_INT8_BLOCKS)
        printf("int8 gemm     %s\n", int8_kernel(v->kernels, id->math == G4V_MATH_INT8_BLOCKS));
#ifdef G4V_HAVE_LLAMA
    char llama[1600];
    cli_llama_cpu_line(llama, sizeof llama);
    printf("llama.cpp cpu %s\n", llama);
    cli_llama_extra_line(llama, sizeof llama);
    printf("llama.cpp bufs %s\n", llama);
#endif
    printf("image tokens  image %d, boi %d, eoi %d, video %d\n", v->image_token_id, v->boi_token_id,
           v->eoi_token_id, v->video_token_id);
    printf("budgets      ");
    for (int i = 0; i < NBUDGETS; i++)
        printf(" %d", budgets[i]);
    printf(" (soft tokens per image; default %d)\n", v->default_budget);
    for (int i = 0; i < NLIMITS; i++) /* three to a line */
        printf("%s%s %s%s",
               i == 0  ? "limits        "
               : i % 3 ? ", "
                       : "              ",
               lim[i].name, grouped((long long)lim[i].value, a, sizeof a), i % 3 == 2 ? "\n" : "");
    if (NLIMITS % 3) putchar('\n');
}

static int print_json(const char *dir, const g4v_model_info *v, const limit *lim,
                      const identity *id) {
    cJSON *o = cJSON_CreateObject(), *dt = cJSON_CreateObject();
    int blocks = id->math == G4V_MATH_INT8_BLOCKS, int8 = blocks || id->math == G4V_MATH_INT8;
    int ok = o && dt;
    const struct {
        const char *key;
        double val;
    } nums[] = {
        {"hidden_size", v->hidden_size},
        {"intermediate_size", v->intermediate_size},
        {"num_layers", v->num_layers},
        {"num_heads", v->num_heads},
        {"num_kv_heads", v->num_kv_heads},
        {"head_dim", v->head_dim},
        {"patch_size", v->patch_size},
        {"pooling_kernel_size", v->pooling_kernel_size},
        {"position_embedding_size", v->position_embedding_size},
        {"default_output_length", v->config_output_length},
        {"default_budget", v->default_budget}, /* the checkpoint's (docs/GUIDE.md) */
        {"text_hidden_size", v->dim},
        {"rope_theta", v->rope_theta},
        {"rms_norm_eps", v->rms_norm_eps},
        {"param_count", (double)v->param_count},
        {"weight_bytes", (double)v->weight_bytes},
        {"image_token_id", v->image_token_id},
        {"boi_token_id", v->boi_token_id},
        {"eoi_token_id", v->eoi_token_id},
        {"video_token_id", v->video_token_id},
    };
    ok = ok && cJSON_AddStringToObject(o, "model", dir) &&
         cJSON_AddStringToObject(o, "variant", v->variant) &&
         cJSON_AddStringToObject(o, "kind", v->kind);
    if (!strcmp(v->kind, "unified"))
        ok = ok && cJSON_AddNumberToObject(o, "layer_norm_eps", v->layer_norm_eps);
    for (size_t i = 0; ok && i < sizeof nums / sizeof nums[0]; i++)
        ok = cJSON_AddNumberToObject(o, nums[i].key, nums[i].val) != NULL;
    ok = ok && cJSON_AddBoolToObject(o, "use_clipped_linears", v->use_clipped_linears) &&
         cJSON_AddBoolToObject(o, "standardize", v->standardize);
    for (int d = 0; ok && d < v->n_dtypes; d++) {
        cJSON *e = cJSON_AddObjectToObject(dt, v->dtypes[d].name);
        ok = e && cJSON_AddNumberToObject(e, "tensors", (double)v->dtypes[d].tensors) &&
             cJSON_AddNumberToObject(e, "bytes", (double)v->dtypes[d].bytes);
    }
    if (ok) {
        cJSON_AddItemToObject(o, "dtypes", dt);
        dt = NULL;
    }
    ok = ok && cJSON_AddStringToObject(o, "naming", v->naming) &&
         cJSON_AddStringToObject(o, "source", v->source) &&
         cJSON_AddStringToObject(o, "fingerprint", id->fingerprint) &&
         cJSON_AddStringToObject(o, "fingerprint_mode", g4v_math_mode_name(id->math)) &&
         (!int8 || cJSON_AddStringToObject(o, "int8_gemm", int8_kernel(v->kernels, blocks))) &&
         cJSON_AddNumberToObject(o, "numerics_version", v->numerics_version) &&
         cJSON_AddNumberToObject(o, "fingerprint_seconds", id->seconds) &&
         cJSON_AddStringToObject(o, "kernels", v->kernels) &&
         cJSON_AddStringToObject(o, "kernel_rule", v->kernel_rule);
    ok = ok && fe_info_amx_json(o, v) && fe_info_sharpness_json(o, v);
    cJSON *llama = ok ? cli_llama_cpu_json() : NULL; /* null without libllama */
    ok = llama != NULL;
    if (ok) cJSON_AddItemToObject(o, "llama_cpu_backend", llama);
    cJSON *b = ok ? cJSON_CreateIntArray(budgets, NBUDGETS) : NULL;
    if (b) cJSON_AddItemToObject(o, "budgets", b);
    cJSON *l = b ? cJSON_AddObjectToObject(o, "limits") : NULL;
    ok = l != NULL;
    for (int i = 0; ok && i < NLIMITS; i++)
        ok = cJSON_AddNumberToObject(l, lim[i].name, lim[i].value) != NULL;
    char *text = ok ? cJSON_Print(o) : NULL;
    if (text) {
        fe_utf8_sanitize(text); /* the model path may hold bytes that are not UTF-8 */
        printf("%s\n", text);
    }
    free(text);
    cJSON_Delete(o);
    cJSON_Delete(dt);
    if (!text) {
        fprintf(stderr, "g4v info: out of memory\n");
        return G4V_EXIT_INTERNAL;
    }
    return G4V_EXIT_OK;
}

int cmd_info(int argc, char **argv) {
    info_args a = {.dir = NULL};
    int rc = fe_opt_run(&info_cmd, argc, argv, &a);
    if (rc) return rc == FE_OPT_HELP ? G4V_EXIT_OK : G4V_EXIT_USAGE;
    ms_paths where; /* the real path of a stored model */
    if ((rc = ms_resolve_front("info", &where, &a.dir, NULL, NULL, a.revision, 0)))
        return rc == MS_ERR_USAGE ? G4V_EXIT_USAGE : G4V_EXIT_MODEL;
    const char *dir = a.dir;
    identity id = a.id;
    /* The model as `g4v encode` loads it (the default options; --precise: precise mode, whose
     * fingerprint differs), every vision tensor checked against config.json, but with no weight
     * packed (metadata_only): info needs the checks, not the packed matrices. */
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.math = id.math;
    mo.metadata_only = 1;
    char msg[1024];
    g4v_model *m = NULL;
    int st = g4v_model_load(dir, &mo, &m, msg, sizeof msg);
    if (st) {
        fprintf(stderr, "g4v info: %s: %s\n", g4v_status_name(st), msg);
        return cli_exit_for_status(st, 1);
    }
    g4v_model_info info;
    if ((st = g4v_model_get_info(m, &info, msg, sizeof msg))) {
        fprintf(stderr, "g4v info: %s: %s\n", g4v_status_name(st), msg);
        g4v_model_free(m);
        return G4V_EXIT_INTERNAL;
    }
    limit lim[NLIMITS];
    limits_of(&info, lim);
    double t0 = fe_now_s();
    if ((st = g4v_model_fingerprint(m, id.fingerprint, sizeof id.fingerprint, msg, sizeof msg))) {
        fprintf(stderr, "g4v info: %s: %s\n", g4v_status_name(st), msg);
        g4v_model_free(m);
        return G4V_EXIT_INTERNAL;
    }
    id.seconds = fe_now_s() - t0;
    rc = G4V_EXIT_OK;
    if (a.json)
        rc = print_json(dir, &info, lim, &id);
    else
        print_text(dir, &info, lim, &id);
    g4v_model_free(m);
    if (rc == G4V_EXIT_OK && fflush(stdout) != 0) {
        fprintf(stderr, "g4v info: cannot write the output\n");
        rc = G4V_EXIT_OUTPUT;
    }
    return rc;
}
