/* splice.c - how to hand g4v's output to a language model (docs/NUMERICS.md §5).
 *
 *   splice MODEL_DIR IMAGE [PROMPT_LEN]
 *
 * Loads the model, encodes IMAGE, builds the token sequence of a prompt with one image
 *     [text ids ...] <|image> <|image|> x N <image|> [text ids ...]
 * and the matching input-embedding matrix [seq, T] exactly as Gemma 4 does:
 *   text rows  = embedding(id) * bf16(sqrt(T))   (the LM's embed scale, rounded to bf16)
 *   image rows = the N feature rows, in order, UNSCALED (never multiply or divide by sqrt(T))
 * boi/eoi are ordinary text tokens. No real language model is present here, so the embedding
 * table is SYNTHETIC: row(id)[j] = a hash of (id, j) in [-1, 1) -- replace embed_row() with
 * your runtime's token embedding lookup. The program checks its own splice and prints a summary.
 * Build: see examples/CMakeLists.txt (find_package(g4v)) or `cc splice.c $(pkg-config --cflags
 * --libs g4v) -lm`.
 */
#include <g4v.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Stand-in for the language model's embedding table (T floats for token id). */
static void embed_row(int32_t id, int T, float *row) {
    for (int j = 0; j < T; j++) {
        uint32_t h = (uint32_t)id * 2654435761u ^ (uint32_t)j * 40503u;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        row[j] = (float)(h & 0xffff) / 32768.0f - 1.0f;
    }
}

/* f32 -> bf16 -> f32, round to nearest even (how Gemma stores its embed scale). */
static float round_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: splice MODEL_DIR IMAGE [PROMPT_LEN]\n");
        return 1;
    }
    int text_len = argc > 3 ? atoi(argv[3]) : 8;
    char msg[1024];
    g4v_model *model = NULL;
    g4v_ctx *ctx = NULL;
    int st = g4v_model_load(argv[1], NULL, &model, msg, sizeof msg);
    if (st) {
        fprintf(stderr, "splice: %s: %s\n", g4v_status_name(st), msg);
        return 3;
    }
    if ((st = g4v_ctx_create(model, NULL, &ctx, msg, sizeof msg))) {
        fprintf(stderr, "splice: %s\n", msg);
        g4v_model_free(model);
        return 5;
    }
    g4v_result r;
    if ((st = g4v_encode_file(ctx, argv[2], NULL, &r))) {
        fprintf(stderr, "splice: %s: %s\n", g4v_status_name(st), g4v_ctx_error(ctx));
        g4v_ctx_free(ctx);
        g4v_model_free(model);
        return 2;
    }
    const int T = r.dim, N = r.n_tokens;
    /* Token sequence: text_len "text" ids (stand-ins), the image span, then 2 more text ids. */
    size_t span = g4v_prompt_tokens(&r, NULL, 0); /* N + 2 */
    size_t seq = (size_t)text_len + span + 2;
    int32_t *ids = malloc(seq * sizeof *ids);
    float *embeds = malloc(seq * (size_t)T * sizeof *embeds);
    if (!ids || !embeds) {
        fprintf(stderr, "splice: out of memory\n");
        return 5;
    }
    for (int i = 0; i < text_len; i++) ids[i] = 1000 + i;
    g4v_prompt_tokens(&r, ids + text_len, span);
    ids[seq - 2] = 2000;
    ids[seq - 1] = 2001;

    const float scale = round_bf16(sqrtf((float)T)); /* Gemma: normalizer = bf16(sqrt(T)) */
    int k = 0;                                        /* next image feature row */
    for (size_t p = 0; p < seq; p++) {
        float *row = embeds + p * (size_t)T;
        if (ids[p] == r.image_token_id) { /* the k-th image token gets feature row k, unscaled */
            memcpy(row, r.features + (size_t)k * T, (size_t)T * sizeof(float));
            k++;
        } else {
            embed_row(ids[p], T, row);
            for (int j = 0; j < T; j++) row[j] *= scale;
        }
    }
    /* Self-check: every image row is the encoder output, counts agree (HF errors otherwise). */
    int ok = k == N && ids[text_len] == r.boi_token_id && ids[text_len + N + 1] == r.eoi_token_id;
    for (int i = 0; ok && i < N; i++)
        ok = !memcmp(embeds + (size_t)(text_len + 1 + i) * T, r.features + (size_t)i * T,
                     (size_t)T * sizeof(float));
    printf("image %dx%d -> %dx%d, %d soft tokens x %d (grid %dx%d)\n", r.src_width, r.src_height,
           r.width, r.height, N, T, r.grid_w, r.grid_h);
    printf("sequence: %zu tokens = %d text + boi(%d) + %d x image(%d) + eoi(%d) + 2 text\n", seq,
           text_len, (int)r.boi_token_id, N, (int)r.image_token_id, (int)r.eoi_token_id);
    printf("inputs_embeds [%zu, %d]: text rows x %.6g (bf16(sqrt(%d))), image rows unscaled\n",
           seq, T, (double)scale, T);
    printf("splice check: %s\n", ok ? "ok" : "FAILED");
    free(ids);
    free(embeds);
    g4v_ctx_free(ctx);
    g4v_model_free(model);
    return ok ? 0 : 5;
}
