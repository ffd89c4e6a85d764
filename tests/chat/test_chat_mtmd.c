/* test_chat_mtmd.c - g4v chat's prefill against libmtmd's, bit for bit (docs/CHAT.md §5).
 *
 *   test_chat_mtmd LM.gguf VISION MMPROJ.gguf THREADS IMAGE...      (exit 0: identical)
 *   test_chat_mtmd --own-encoder [--precise] LM.gguf VISION MMPROJ.gguf THREADS IMAGE...
 *                                                                  (a measurement)
 *
 * One prompt, "<|turn>user\n" + the images + "Describe ...<turn|>\n<|turn>model\n<|channel>
 * thought\n<channel|>", two ways on the same llama_model with identical context parameters:
 *   ours: chat_session_prefill (the code g4v chat runs: template, tokenization, chunking, the
 *         rows fed through llama_batch.embd, causal/bidirectional choice);
 *   mtmd: mtmd_tokenize on the same text with the media marker, then per chunk
 *         mtmd_helper_eval_chunk_single (text) or mtmd_helper_decode_image_chunk fed the same
 *         rows from libg4v (images).
 * Required: the same number of image tokens per image, the same bidirectional choice
 * (mtmd_decode_use_non_causal), the last position's logits bit-identical (all n_vocab), and the
 * same 8 greedy tokens after it. A control then feeds mtmd rows with one value moved by 1e-3
 * and requires the logits to change: the comparison can see a small difference.
 * --own-encoder: mtmd encodes the images itself from the mmproj (mtmd_helper_eval_chunks) and
 * the logits difference to ours is printed (llama.cpp's encoder differs from ours). */
#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_backend.h"
#include "chat_session.h"
#include "g4v.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

#define N_GREEDY 8
#define TEXT "Describe the images in one sentence."
#define HEAD "<|turn>user\n"
/* g4v's own Gemma 4 format (--chat-template builtin): the generation prompt of the 26B/31B
 * family ends in the empty thought block, E2B/E4B's does not (docs/CHAT.md §2) */
#define TAIL "<turn|>\n<|turn>model\n"
#define THOUGHT "<|channel>thought\n<channel|>"

static int fails;
#define CHECK(c, ...)                                                                         \
    do {                                                                                      \
        if (!(c)) {                                                                           \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                       \
            printf(__VA_ARGS__);                                                              \
            printf("\n");                                                                     \
            fails++;                                                                          \
        }                                                                                     \
    } while (0)

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

/* FNV-1a over a step's logits */
static uint64_t hash_logits(const float *v, int n) {
    const unsigned char *p = (const unsigned char *)v;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < (size_t)n * sizeof(float); i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* greedy continuation on lctx from n_past: N_GREEDY tokens, and a hash of the logits each of
 * them was chosen from (the KV cache after the prompt must match too, not only the argmax) */
static void greedy(struct llama_context *lctx, int n_vocab, int n_past, llama_token *out,
                   uint64_t *hashes) {
    struct llama_batch b = llama_batch_init(1, 0, 1);
    for (int k = 0; k < N_GREEDY; k++) {
        hashes[k] = hash_logits(llama_get_logits_ith(lctx, -1), n_vocab);
        out[k] = argmax(llama_get_logits_ith(lctx, -1), n_vocab);
        b.n_tokens = 1;
        b.token[0] = out[k];
        b.pos[0] = n_past++;
        b.n_seq_id[0] = 1;
        b.seq_id[0][0] = 0;
        b.logits[0] = 1;
        if (llama_decode(lctx, b)) {
            printf("FAIL: llama_decode in the greedy continuation\n");
            fails++;
            break;
        }
    }
    llama_batch_free(b);
}

static struct llama_context *new_ctx(const struct llama_model *m, int threads, int n_batch) {
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 8192; /* as chat_session_open */
    cp.n_batch = (uint32_t)n_batch;
    cp.n_ubatch = (uint32_t)n_batch;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.no_perf = true;
    return llama_init_from_model((struct llama_model *)m, cp);
}

int main(int argc, char **argv) {
    int own = 0, precise = 0;
    while (argc > 1 && (!strcmp(argv[1], "--own-encoder") || !strcmp(argv[1], "--precise"))) {
        if (!strcmp(argv[1], "--own-encoder")) own = 1;
        else precise = 1;
        argc--;
        argv++;
    }
    if (argc < 6) {
        fprintf(stderr, "usage: %s [--own-encoder] LM.gguf VISION MMPROJ.gguf THREADS IMAGE...\n",
                argv[0]);
        return 2;
    }
    const char *lm = argv[1], *vision = argv[2], *mmproj = argv[3];
    int threads = atoi(argv[4]);
    int n_img = argc - 5;
    char **imgs = argv + 5;

    /* llama.cpp's CPU backend for both sides (libmtmd's encoder and the text model): loaded
     * before any llama_* or mtmd_* call, and named in the log */
    chat_backend_cpu cpu;
    char err[1024], line[1024];
    llama_log_set(quiet, NULL);
    if (chat_backend_cpu_get(&cpu, err, sizeof err)) {
        printf("FAIL: %s\n", err);
        return 1;
    }
    chat_backend_cpu_summary(&cpu, line, sizeof line);
    printf("llama.cpp CPU backend: %s\n", line);

    /* ours: the chat session's own prefill */
    chat_options o;
    chat_options_init(&o);
    o.lm_path = lm;
    o.vision_path = vision;
    o.threads = threads;
    o.params.temp = 0;
    o.math = precise ? G4V_MATH_PRECISE : G4V_MATH_FAST;
    o.chat_template = "builtin";
    chat_session *s;
    if (chat_session_open(&o, &s, err, sizeof err)) {
        printf("FAIL: chat_session_open: %s\n", err);
        return 1;
    }
    llama_log_set(quiet, NULL);
    chat_session_info info;
    chat_session_get_info(s, &info);
    chat_media *media = calloc((size_t)n_img, sizeof *media);
    for (int i = 0; i < n_img; i++) { /* "video:PATH": a video */
        int video = !strncmp(imgs[i], "video:", 6);
        media[i].medium = video ? FE_MEDIUM_VIDEO : FE_MEDIUM_IMAGE;
        media[i].path = imgs[i] + (video ? 6 : 0);
        if (own && video) {
            fprintf(stderr, "--own-encoder: images only\n");
            return 2;
        }
    }
    chat_turn_result r;
    if (chat_session_prefill(s, media, n_img, TEXT, &r, err, sizeof err)) {
        printf("FAIL: chat_session_prefill: %s\n", err);
        return 1;
    }
    const struct llama_model *model = chat_session_llama_model(s);
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    size_t lbytes = (size_t)n_vocab * sizeof(float);
    float *ours = malloc(lbytes);
    memcpy(ours, llama_get_logits_ith(chat_session_llama_context(s), -1), lbytes);
    llama_token g_ours[N_GREEDY], g_ref[N_GREEDY];
    uint64_t h_ours[N_GREEDY], h_ref[N_GREEDY];
    int past_ours = chat_session_n_past(s);
    greedy(chat_session_llama_context(s), n_vocab, past_ours, g_ours, h_ours);
    printf("ours: %d positions (%d text tokens, %d image rows), bidirectional images %d, "
           "n_batch %d, threads %d\n",
           r.n_prompt_pos, r.n_prompt_text, r.n_prompt_rows, info.non_causal, info.n_batch,
           threads);

    /* mtmd */
    llama_log_set(quiet, NULL);
    mtmd_helper_log_set(quiet, NULL);
    struct mtmd_context_params mp = mtmd_context_params_default();
    mp.use_gpu = false;
    mp.print_timings = false;
    mp.n_threads = threads;
    mp.warmup = false;
    mp.image_max_tokens = info.budget;
    mp.image_min_tokens = own ? 0 : 1; /* video frames have fewer than mtmd's default 70 */
    mtmd_context *mctx = mtmd_init_from_file(mmproj, model, mp);
    if (!mctx) {
        printf("FAIL: mtmd_init_from_file %s\n", mmproj);
        return 1;
    }
    /* the same rows from libg4v for mtmd */
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.budget = info.budget;
    mo.math = precise ? G4V_MATH_PRECISE : G4V_MATH_FAST;
    g4v_model *vm;
    g4v_ctx *vc;
    if (g4v_model_load(vision, &mo, &vm, err, sizeof err) ||
        g4v_ctx_create(vm, NULL, &vc, err, sizeof err)) {
        printf("FAIL: g4v: %s\n", err);
        return 1;
    }
    /* units: one image, or one video frame (mtmd sees each frame as an image after its
     * "MM:SS " label, frames joined by spaces, as g4v_video_prompt_text writes them) */
    int cap = 0;
    for (int i = 0; i < n_img; i++) cap += media[i].medium == FE_MEDIUM_VIDEO ? 1024 : 1;
    float **rows = calloc((size_t)cap, sizeof *rows);
    int *nrows = calloc((size_t)cap, sizeof *nrows);
    mtmd_bitmap **bm = calloc((size_t)cap, sizeof *bm);
    char (*label)[24] = calloc((size_t)cap, sizeof *label);
    int n_units = 0;
    for (int i = 0; i < n_img; i++) {
        if (media[i].medium == FE_MEDIUM_VIDEO) {
            g4v_video_result vr;
            if (g4v_encode_video_file(vc, media[i].path, NULL, &vr)) {
                printf("FAIL: encode %s: %s\n", media[i].path, g4v_ctx_error(vc));
                return 1;
            }
            for (int f = 0; f < vr.n_frames; f++, n_units++) {
                int n = vr.frames[f].n_tokens;
                nrows[n_units] = n;
                rows[n_units] = malloc((size_t)n * (size_t)vr.dim * sizeof(float));
                memcpy(rows[n_units], vr.features + vr.frames[f].first_row * (size_t)vr.dim,
                       (size_t)n * (size_t)vr.dim * sizeof(float));
                snprintf(label[n_units], sizeof label[n_units], "%s%s ", f ? " " : "",
                         vr.frames[f].mmss);
                unsigned char *px = calloc((size_t)vr.width * (size_t)vr.height * 3, 1);
                bm[n_units] = mtmd_bitmap_init((uint32_t)vr.width, (uint32_t)vr.height, px);
                free(px);
            }
            continue;
        }
        g4v_result gr;
        if (g4v_encode_file(vc, media[i].path, NULL, &gr)) {
            printf("FAIL: encode %s: %s\n", media[i].path, g4v_ctx_error(vc));
            return 1;
        }
        nrows[n_units] = gr.n_tokens;
        rows[n_units] = malloc((size_t)gr.n_tokens * (size_t)gr.dim * sizeof(float));
        g4v_result_copy(&gr, rows[n_units], (size_t)gr.n_tokens * (size_t)gr.dim, NULL, 0);
        if (!own) { /* any pixels of the target size: mtmd's count must be ours (checked) */
            unsigned char *px = calloc((size_t)gr.width * (size_t)gr.height * 3, 1);
            bm[n_units] = mtmd_bitmap_init((uint32_t)gr.width, (uint32_t)gr.height, px);
            free(px);
        }
        n_units++;
    }
    for (int i = 0; own && i < n_img; i++) {
        bm[i] = mtmd_helper_bitmap_init_from_file(mctx, imgs[i], false,
                                                  mtmd_helper_init_opt_default()).bitmap;
        if (!bm[i]) {
            printf("FAIL: mtmd cannot read %s\n", imgs[i]);
            return 1;
        }
    }
    size_t tl = strlen(HEAD) + strlen(TEXT) + strlen(TAIL) + strlen(THOUGHT) + 64 * (size_t)n_units;
    char *prompt = malloc(tl);
    strcpy(prompt, HEAD);
    for (int i = 0; i < n_units; i++) {
        strcat(prompt, label[i]);
        strcat(prompt, mtmd_default_marker());
    }
    strcat(prompt, TEXT);
    strcat(prompt, TAIL);
    if (strstr(info.template_origin, "26B/31B")) strcat(prompt, THOUGHT);
    mtmd_input_text it = {prompt, strlen(prompt), true, true};
    mtmd_input_chunks *chunks = mtmd_input_chunks_init();
    if (mtmd_tokenize(mctx, chunks, &it, (const mtmd_bitmap **)bm, (size_t)n_units)) {
        printf("FAIL: mtmd_tokenize\n");
        return 1;
    }
    float *ref = malloc(lbytes);
    for (int pass = 0; pass < (own ? 1 : 2); pass++) { /* pass 1: the perturbed control */
        struct llama_context *lctx = new_ctx(model, threads, info.n_batch);
        llama_pos n_past = 0;
        size_t nch = mtmd_input_chunks_size(chunks);
        if (own) {
            double t0 = now_s();
            if (mtmd_helper_eval_chunks(mctx, lctx, chunks, 0, 0, info.n_batch, true, &n_past)) {
                printf("FAIL: mtmd_helper_eval_chunks\n");
                return 1;
            }
            printf("time to the first logits: mtmd (its encoder + prefill) %.3f s; ours: encode "
                   "%.3f s + prefill %.3f s = %.3f s (%d threads)\n",
                   now_s() - t0, r.encode_s, r.prefill_s, r.encode_s + r.prefill_s, threads);
        } else {
            int k = 0;
            for (size_t c = 0; c < nch; c++) {
                const mtmd_input_chunk *ch = mtmd_input_chunks_get(chunks, c);
                if (mtmd_input_chunk_get_type(ch) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
                    if (mtmd_helper_eval_chunk_single(mctx, lctx, ch, n_past, 0, info.n_batch,
                                                      c == nch - 1, &n_past)) {
                        printf("FAIL: mtmd text chunk\n");
                        return 1;
                    }
                    continue;
                }
                size_t nt = mtmd_input_chunk_get_n_tokens(ch);
                if (pass == 0) {
                    CHECK((int)nt == nrows[k], "image %d: mtmd has %zu tokens, g4v %d", k, nt,
                          nrows[k]);
                    CHECK(mtmd_decode_use_non_causal(mctx, ch) == (info.non_causal != 0),
                          "bidirectional: mtmd %d, ours %d", mtmd_decode_use_non_causal(mctx, ch),
                          info.non_causal);
                }
                if ((int)nt != nrows[k]) return 1;
                if (pass == 1 && k == 0) rows[0][7] += 1e-3f;
                llama_pos np;
                if (mtmd_helper_decode_image_chunk(mctx, lctx, ch, rows[k], n_past, 0,
                                                   info.n_batch, &np, NULL, NULL)) {
                    printf("FAIL: mtmd_helper_decode_image_chunk\n");
                    return 1;
                }
                if (pass == 1 && k == 0) rows[0][7] -= 1e-3f;
                n_past = np;
                k++;
            }
        }
        float *lg = llama_get_logits_ith(lctx, -1);
        double maxd = 0;
        for (int i = 0; i < n_vocab; i++) {
            double d = fabs((double)lg[i] - (double)ours[i]);
            if (d > maxd) maxd = d;
        }
        if (pass == 0) {
            memcpy(ref, lg, lbytes);
            int same = !memcmp(ref, ours, lbytes);
            printf("%s: %d positions; last-position logits over %d tokens: max |ours - mtmd| = "
                   "%.9g, bit-identical %s; argmax ours %d mtmd %d\n",
                   own ? "mtmd (its own encoder)" : "mtmd (our rows)", (int)n_past, n_vocab,
                   maxd, same ? "yes" : "no", argmax(ours, n_vocab), argmax(ref, n_vocab));
            if (!own) {
                CHECK(n_past == past_ours, "positions: mtmd %d, ours %d", (int)n_past,
                      past_ours);
                CHECK(same, "logits differ (max %.9g)", maxd);
                greedy(lctx, n_vocab, n_past, g_ref, h_ref);
                int gsame = !memcmp(g_ours, g_ref, sizeof g_ours) &&
                            !memcmp(h_ours, h_ref, sizeof h_ours);
                printf("greedy %d tokens, logits of every step bit-identical %s: ours", N_GREEDY,
                       !memcmp(h_ours, h_ref, sizeof h_ours) ? "yes" : "no");
                for (int i = 0; i < N_GREEDY; i++) printf(" %d", g_ours[i]);
                printf(" | mtmd");
                for (int i = 0; i < N_GREEDY; i++) printf(" %d", g_ref[i]);
                printf("\n");
                CHECK(gsame, "greedy continuations (tokens or the logits of a step) differ");
            }
        } else {
            printf("control: one row value moved by 1e-3 moves the logits by max %.6g\n", maxd);
            CHECK(maxd > 0, "the control did not change the logits");
        }
        llama_free(lctx);
    }
    mtmd_input_chunks_free(chunks);
    mtmd_free(mctx);
    for (int i = 0; i < n_units; i++) {
        mtmd_bitmap_free(bm[i]);
        free(rows[i]);
    }
    free(rows);
    free(nrows);
    free(bm);
    free(label);
    free(prompt);
    free(ours);
    free(ref);
    free(media);
    chat_turn_result_free(&r);
    chat_session_close(s);
    g4v_ctx_free(vc);
    g4v_model_free(vm);
    printf("%s\n", fails ? "FAILED" : (own ? "measured" : "PASS"));
    return fails ? 1 : 0;
}
