/* chat_logprobs_ref.c - a greedy answer's log-probabilities computed straight from libllama, the
 * reference test_chat_openai.py holds g4v serve's "logprobs" against (docs/CHAT_API.md §2.3):
 * the prompt's ids decoded in one call on a fresh context, then per step the log-softmax (in
 * double) of the raw logits over the whole vocabulary, the likeliest token taken, decoded, and
 * so on. Nothing of chat/'s engine, sampler or session is used.
 *
 *   chat_logprobs_ref LM.gguf IDS N TOP [BAN]   IDS: the prompt's token ids, comma-separated;
 *                                               BAN: ids never taken (as a logit_bias of -100
 *                                               would), comma-separated
 *
 * Prints one JSON array: per step {"id", "bytes", "logprob", "top": [[id, logprob], ...]}; the
 * log-probabilities are the raw logits' (a banned id keeps its own). */
#include "chat_backend.h"
#include "llama.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)level;
    (void)text;
    (void)user;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: chat_logprobs_ref LM.gguf IDS N TOP [BAN]\n");
        return 2;
    }
    llama_log_set(quiet, NULL);
    char err[512];
    if (chat_backend_load(err, sizeof err)) {
        fprintf(stderr, "chat_logprobs_ref: %s\n", err);
        return 1;
    }
    llama_backend_init();
    int n_gen = atoi(argv[3]), top = atoi(argv[4]);
    int cap = 1, n = 0;
    for (const char *p = argv[2]; *p; p++) cap += *p == ',';
    llama_token *ids = malloc((size_t)(cap + n_gen) * sizeof *ids);
    if (!ids) return 1;
    for (char *p = argv[2], *e; *p; p = *e ? e + 1 : e) ids[n++] = (llama_token)strtol(p, &e, 10);
    int ban[64], n_ban = 0;
    for (char *p = argc == 6 ? argv[5] : (char *)"", *e; *p && n_ban < 64; p = *e ? e + 1 : e)
        ban[n_ban++] = (int)strtol(p, &e, 10);
    struct llama_model *m = llama_model_load_from_file(argv[1], llama_model_default_params());
    if (!m) {
        fprintf(stderr, "chat_logprobs_ref: cannot load %s\n", argv[1]);
        return 1;
    }
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(n + n_gen + 16);
    cp.n_batch = cp.n_ubatch = (uint32_t)(n + 16);
    cp.n_threads = cp.n_threads_batch = 1;
    struct llama_context *c = llama_init_from_model(m, cp);
    const struct llama_vocab *v = llama_model_get_vocab(m);
    int nv = llama_vocab_n_tokens(v);
    if (!c || llama_decode(c, llama_batch_get_one(ids, n))) {
        fprintf(stderr, "chat_logprobs_ref: the prompt does not decode\n");
        return 1;
    }
    printf("[");
    for (int k = 0; k < n_gen; k++) {
        const float *l = llama_get_logits_ith(c, -1);
        int best = -1, top1 = 0;
        for (int i = 0; i < nv; i++) {
            int banned = 0;
            for (int b = 0; b < n_ban && !banned; b++) banned = ban[b] == i;
            if (!banned && (best < 0 || l[i] > l[best])) best = i;
            if (l[i] > l[top1]) top1 = i;
        }
        double sum = 0;
        for (int i = 0; i < nv; i++) sum += exp((double)l[i] - l[top1]);
        double lse = l[top1] + log(sum);
        char piece[256];
        int pn = llama_token_to_piece(v, best, piece, (int32_t)sizeof piece, 0, false);
        printf("%s{\"id\": %d, \"logprob\": %.9g, \"bytes\": [", k ? ", " : "", best,
               l[best] - lse);
        for (int i = 0; i < pn; i++) printf("%s%d", i ? ", " : "", (unsigned char)piece[i]);
        printf("], \"top\": [");
        /* the TOP largest by repeated selection (TOP is small) */
        int *taken = calloc((size_t)top + 1, sizeof *taken);
        for (int t = 0; t < top; t++) {
            int b = -1;
            for (int i = 0; i < nv; i++) {
                int dup = 0;
                for (int q = 0; q < t && !dup; q++) dup = taken[q] == i;
                if (!dup && (b < 0 || l[i] > l[b])) b = i;
            }
            taken[t] = b;
            printf("%s[%d, %.9g]", t ? ", " : "", b, l[b] - lse);
        }
        free(taken);
        printf("]}");
        if (llama_vocab_is_eog(v, best)) break;
        llama_token next = best;
        if (llama_decode(c, llama_batch_get_one(&next, 1))) {
            fprintf(stderr, "chat_logprobs_ref: step %d does not decode\n", k);
            return 1;
        }
    }
    printf("]\n");
    llama_free(c);
    llama_model_free(m);
    free(ids);
    return 0;
}
