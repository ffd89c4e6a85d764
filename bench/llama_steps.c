/* llama_steps.c - libllama's own ceiling for batched generation: what one llama_decode of one
 * token for each of S sequences costs against one token of one sequence, on a text model and a
 * thread count (docs/CHAT.md §5.4.3; make bench-chat runs it before bench/chat_batch.py).
 *
 * usage: llama_steps MODEL.gguf [THREADS=2] [STEPS=24] [REPS=3]
 *
 * Four sequences are each given a 16-token prompt; then, for S = 1, 2 and 4, STEPS decode calls
 * each carrying one token of each of S sequences (logits for every one of them, as a server
 * sampling S streams needs), REPS times; the median step time is printed, and tokens per second
 * against S = 1. No server, no sampling, no HTTP: a server that batches S conversations into
 * one call per step cannot exceed the S row's "x one" on this machine and thread count. Prints
 * one JSON object last.
 */
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)level, (void)text, (void)user;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Appends token tok at position pos of sequence seq to batch b, asking for its logits. */
static void add(struct llama_batch *b, llama_token tok, llama_pos pos, llama_seq_id seq,
                int logits) {
    int k = b->n_tokens++;
    b->token[k] = tok;
    b->pos[k] = pos;
    b->n_seq_id[k] = 1;
    b->seq_id[k][0] = seq;
    b->logits[k] = (int8_t)logits;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: llama_steps MODEL.gguf [THREADS=2] [STEPS=24] [REPS=3]\n");
        return 2;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 2, steps = argc > 3 ? atoi(argv[3]) : 24,
        reps = argc > 4 ? atoi(argv[4]) : 3;
    if (threads < 1 || steps < 1 || reps < 1 || reps > 15) {
        fprintf(stderr, "llama_steps: THREADS, STEPS >= 1, REPS 1..15\n");
        return 2;
    }
    enum { SEQS = 4, PROMPT = 16 };
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "llama_steps: cannot load %s\n", argv[1]);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(SEQS * (PROMPT + steps * reps * 3 + 8));
    cp.n_batch = cp.n_ubatch = 512;
    cp.n_seq_max = SEQS;
    cp.n_threads = cp.n_threads_batch = threads;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llama_steps: cannot create a context\n");
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(vocab);
    struct llama_batch b = llama_batch_init(512, 0, SEQS);
    llama_pos pos[SEQS] = {0};
    for (int s = 0; s < SEQS; s++) {
        b.n_tokens = 0;
        for (int i = 0; i < PROMPT; i++)
            add(&b, (llama_token)((1000 + 37 * i + 101 * s) % n_vocab), pos[s]++, s,
                i == PROMPT - 1);
        if (llama_decode(ctx, b)) {
            fprintf(stderr, "llama_steps: prompt decode failed\n");
            return 1;
        }
    }
    static const int seqs[] = {1, 2, 4};
    double step_ms[3];
    for (int q = 0; q < 3; q++) {
        double t[15];
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            for (int st = 0; st < steps; st++) {
                b.n_tokens = 0;
                for (int s = 0; s < seqs[q]; s++)
                    add(&b, (llama_token)((2000 + 13 * st + 7 * s) % n_vocab), pos[s]++, s, 1);
                if (llama_decode(ctx, b)) {
                    fprintf(stderr, "llama_steps: decode failed\n");
                    return 1;
                }
            }
            t[r] = (now_s() - t0) / steps;
        }
        qsort(t, (size_t)reps, sizeof t[0], cmp_double);
        step_ms[q] = 1e3 * t[reps / 2];
    }
    double one = 1e3 / step_ms[0];
    printf("libllama alone, %d threads, %d steps x %d reps (median):\n", threads, steps, reps);
    for (int q = 0; q < 3; q++) {
        double tps = seqs[q] * 1e3 / step_ms[q];
        printf("  %d sequence%s per call: step %7.1f ms, %6.1f tok/s, %.2fx one\n", seqs[q],
               seqs[q] > 1 ? "s" : " ", step_ms[q], tps, tps / one);
    }
    printf("{\"threads\": %d, \"step_ms\": {\"1\": %.2f, \"2\": %.2f, \"4\": %.2f}, "
           "\"ceiling_4_over_1\": %.3f}\n",
           threads, step_ms[0], step_ms[1], step_ms[2], 4 * step_ms[0] / step_ms[2]);
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
