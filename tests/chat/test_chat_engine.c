/* test_chat_engine.c - conversations batched on one engine answer as they do alone
 * (chat/chat_engine.h, docs/CHAT_API.md §3).
 *
 *   test_chat_engine LM.gguf THREADS          (exit 0: every check holds)
 *
 * Four prompts of different lengths (token ids drawn from the vocabulary with a fixed seed), each
 * answered with N_ANSWER greedy tokens:
 * R: alone, on an engine of one sequence (what `g4v chat` runs): the reference.
 * L: alone, one after the other, on an engine of four sequences, each on its own sequence.
 *    Required: the same tokens and the same logits, bit for bit (a stream of its own: a lone
 *    sequence's decode calls are the reference's).
 * C: the four at once, one thread each, on the four-sequence engine with a small step budget
 *    (prompts cut into chunks and batched with the others' generation tokens).
 * S: the four at once on an engine of one sequence per step (one_per_step, --lm-no-batching)
 *    with a step budget of 4 tokens (which one_per_step must not apply: the pieces of a prompt
 *    change the rounding). Required: each answer and its logits equal the reference's, bit for
 *    bit.
 * G: two at once, one of them slow to ask for its next token (a third of a step, more than the
 *    engine's least wait), as sampling under a grammar or a slow client's socket make it.
 *    Required: their generation steps were still batched (the engine waits for a sequence as
 *    long as it took last time, not a fixed few milliseconds: with that, the fast one's steps
 *    left without the slow one's token every other time).
 * P: alone on an engine of one sequence, the prompt decoded in calls of 1 and of 4 tokens: how
 *    far llama.cpp's logits move with the shapes of the decode calls alone (its CPU kernels
 *    differ with the number of rows: measured 5e-3 to 8e-3 on the synthetic e2b model, where
 *    calls of 16 and of the whole prompt agree bit for bit).
 *    Required: the steps were shared (stats), and every step's logits, up to where an answer
 *    leaves the reference's, within 1.5x P's distance of the reference's (relative: max |d| over
 *    the vocabulary / max |logit|), and under 2e-2. Batch composition changes the bits
 *    (llama.cpp documents the same), so a near-tie of the reference's top two logits can flip,
 *    and the answer goes its own way from there: the answers are compared and printed, with the
 *    top-2 gap and the distance where one leaves the reference (a flip needs gap <= 2x it). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "chat_engine.h"
#include "llama.h"

#define N_PROMPTS 4
#define N_ANSWER 24
#define STEP_TOKENS 16

static const int prompt_len[N_PROMPTS] = {37, 5, 61, 19};

typedef struct answer {
    llama_token tok[N_ANSWER];
    float gap[N_ANSWER];   /* top1 - top2 of the logits each token was drawn from */
    double dist[N_ANSWER]; /* max |logit - the reference's| at each step, while on its path */
    float scale;           /* max |logit| of the first step */
    float *steps;          /* the reference: every step's logits, N_ANSWER x n_vocab */
    const struct answer *ref; /* the answer to measure against, or NULL */
    float *logits;         /* scratch */
} answer;

static int fails;
static int n_vocab;
static int think_us; /* G: how long sequence 1's thread takes to ask for its next token */
static llama_token prompts[N_PROMPTS][64];

static void check(int ok, const char *what) {
    printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    if (!ok) fails++;
}

static chat_engine *open_engine(const char *lm, int n_seq, int n_batch, int step_tokens,
                                int threads) {
    chat_engine_options o = {.lm_path = lm, .n_seq = n_seq, .n_ctx_seq = 512, .n_batch = n_batch,
                             .step_tokens = step_tokens, .threads = threads};
    chat_engine *e;
    char err[1024];
    if (chat_engine_open(&o, &e, err, sizeof err)) {
        printf("FAIL: chat_engine_open: %s\n", err);
        exit(1);
    }
    return e;
}

static llama_token argmax(const float *l, float *gap) {
    int best = 0;
    for (int i = 1; i < n_vocab; i++)
        if (l[i] > l[best]) best = i;
    float second = -INFINITY;
    for (int i = 0; i < n_vocab; i++)
        if (i != best && l[i] > second) second = l[i];
    *gap = l[best] - second;
    return best;
}

/* Prompt p on sequence seq, then N_ANSWER greedy tokens, as a session runs them. */
static int answer_on(chat_engine *e, int seq, int p, answer *a) {
    char err[512];
    chat_engine_lock(e);
    llama_memory_seq_rm(llama_get_memory(chat_engine_context(e)), seq, -1, -1);
    chat_engine_unlock(e);
    if (chat_engine_decode(e, seq, prompts[p], prompt_len[p], 0, a->logits, err, sizeof err)) {
        printf("FAIL: prompt %d: %s\n", p, err);
        return -1;
    }
    a->scale = 0;
    for (int i = 0; i < n_vocab; i++)
        if (fabsf(a->logits[i]) > a->scale) a->scale = fabsf(a->logits[i]);
    chat_engine_answering(e, seq, 1);
    llama_pos pos = prompt_len[p];
    int on_path = 1; /* every token so far the reference's */
    for (int k = 0; k < N_ANSWER; k++) {
        if (a->steps) memcpy(a->steps + (size_t)k * n_vocab, a->logits, (size_t)n_vocab * sizeof(float));
        a->dist[k] = 0;
        if (a->ref && on_path)
            for (int i = 0; i < n_vocab; i++) {
                double d = fabs((double)a->logits[i] - a->ref->steps[(size_t)k * n_vocab + i]);
                if (d > a->dist[k]) a->dist[k] = d;
            }
        a->tok[k] = argmax(a->logits, &a->gap[k]);
        if (a->ref && a->tok[k] != a->ref->tok[k]) on_path = 0;
        if (think_us && seq == 1) usleep((useconds_t)think_us);
        if (k + 1 < N_ANSWER &&
            chat_engine_decode(e, seq, &a->tok[k], 1, pos++, a->logits, err, sizeof err)) {
            printf("FAIL: prompt %d, token %d: %s\n", p, k, err);
            chat_engine_answering(e, seq, 0);
            return -1;
        }
    }
    chat_engine_answering(e, seq, 0);
    return 0;
}

static void answer_alloc(answer *a, const answer *ref) {
    memset(a, 0, sizeof *a);
    a->ref = ref;
    if (!ref) a->steps = malloc((size_t)N_ANSWER * n_vocab * sizeof(float));
    a->logits = malloc((size_t)n_vocab * sizeof(float));
    if ((!ref && !a->steps) || !a->logits) {
        printf("FAIL: out of memory\n");
        exit(1);
    }
}

typedef struct job {
    chat_engine *e;
    int p;
    answer *a;
    int rc;
} job;

static void *run_job(void *arg) {
    job *j = arg;
    j->rc = answer_on(j->e, j->p, j->p, j->a);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_chat_engine LM.gguf THREADS\n");
        return 2;
    }
    int threads = atoi(argv[2]);
    answer ref[N_PROMPTS], lone[N_PROMPTS], conc[N_PROMPTS];

    chat_engine *one = open_engine(argv[1], 1, 128, 0, threads);
    n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(chat_engine_model(one)));
    unsigned s = 12345;
    for (int p = 0; p < N_PROMPTS; p++)
        for (int i = 0; i < prompt_len[p]; i++) {
            s = s * 1103515245u + 12345u;
            prompts[p][i] = (llama_token)(2 + (s >> 8) % (unsigned)(n_vocab - 2));
        }
    for (int p = 0; p < N_PROMPTS; p++) {
        answer_alloc(&ref[p], NULL);
        answer_alloc(&lone[p], &ref[p]);
        answer_alloc(&conc[p], &ref[p]);
        if (answer_on(one, 0, p, &ref[p])) return 1;
    }
    chat_engine_close(one);

    /* L: one at a time on the four-sequence engine, whole prompts per call like the reference */
    chat_engine *four = open_engine(argv[1], N_PROMPTS, 128, 0, threads);
    int same = 1;
    for (int p = 0; p < N_PROMPTS; p++) {
        if (answer_on(four, p, p, &lone[p])) return 1;
        same &= !memcmp(lone[p].tok, ref[p].tok, sizeof ref[p].tok);
        for (int k = 0; k < N_ANSWER; k++)
            same &= lone[p].dist[k] == 0;
    }
    check(same, "alone on a four-sequence engine = alone on its own engine, bit for bit");
    chat_engine_close(four);

    /* P: alone again, its prompt in calls of 1 and of 4 tokens: how much llama.cpp's logits
     * move with the shape of the decode calls alone (its kernels differ with the number of
     * rows), the yardstick of C's distance */
    double calls = 0;
    static const int piece[2] = {1, 4};
    for (int c = 0; c < 2; c++) {
        one = open_engine(argv[1], 1, piece[c], 0, threads);
        double d = 0;
        for (int p = 0; p < N_PROMPTS; p++) {
            answer a;
            answer_alloc(&a, &ref[p]);
            if (answer_on(one, 0, p, &a)) return 1;
            for (int k = 0; k < N_ANSWER; k++)
                if (a.dist[k] / ref[p].scale > d) d = a.dist[k] / ref[p].scale;
            free(a.logits);
        }
        chat_engine_close(one);
        printf("alone, the prompt in calls of %d: logits' relative distance up to %.3g\n",
               piece[c], d);
        if (d > calls) calls = d;
    }

    /* C: the four at once, with prompt chunks of STEP_TOKENS */
    four = open_engine(argv[1], N_PROMPTS, 128, STEP_TOKENS, threads);
    job jobs[N_PROMPTS];
    pthread_t th[N_PROMPTS];
    for (int p = 0; p < N_PROMPTS; p++) {
        jobs[p] = (job){.e = four, .p = p, .a = &conc[p]};
        pthread_create(&th[p], NULL, run_job, &jobs[p]);
    }
    for (int p = 0; p < N_PROMPTS; p++) {
        pthread_join(th[p], NULL);
        if (jobs[p].rc) return 1;
    }
    chat_engine_stats st;
    chat_engine_get_stats(four, &st);
    /* S: the four at once with one sequence per step (--lm-no-batching): each as alone */
    chat_engine_options so = {.lm_path = argv[1], .n_seq = N_PROMPTS, .n_ctx_seq = 512,
                              .n_batch = 128, .step_tokens = 4, .one_per_step = 1,
                              .threads = threads};
    chat_engine *serial;
    char err[1024];
    if (chat_engine_open(&so, &serial, err, sizeof err)) {
        printf("FAIL: chat_engine_open: %s\n", err);
        return 1;
    }
    answer sa[N_PROMPTS];
    for (int p = 0; p < N_PROMPTS; p++) {
        answer_alloc(&sa[p], &ref[p]);
        jobs[p] = (job){.e = serial, .p = p, .a = &sa[p]};
        pthread_create(&th[p], NULL, run_job, &jobs[p]);
    }
    same = 1;
    for (int p = 0; p < N_PROMPTS; p++) {
        pthread_join(th[p], NULL);
        if (jobs[p].rc) return 1;
        same &= !memcmp(sa[p].tok, ref[p].tok, sizeof ref[p].tok);
        for (int k = 0; k < N_ANSWER; k++)
            same &= sa[p].dist[k] == 0;
        free(sa[p].logits);
    }
    chat_engine_stats sst;
    chat_engine_get_stats(serial, &sst);
    check(same && sst.shared_steps == 0,
          "four at once, one sequence per step: each = alone, bit for bit");
    chat_engine_close(serial);
    printf("concurrent: %llu decode calls, %llu tokens, %llu of them shared by 2+ sequences, "
           "%.2f sequences per call\n",
           (unsigned long long)st.steps, (unsigned long long)st.step_tokens,
           (unsigned long long)st.shared_steps, st.steps ? (double)st.step_seqs / st.steps : 0.0);
    check(st.shared_steps >= N_ANSWER - 1, "the four conversations' steps were batched together");
    /* the fewest calls possible: every prompt token in 16-token steps and one per answer token */
    check(st.steps < (uint64_t)(N_PROMPTS * N_ANSWER), "fewer decode calls than one per token");
    double worst = 0;
    for (int p = 0; p < N_PROMPTS; p++) {
        int k = 0;
        while (k < N_ANSWER && conc[p].tok[k] == ref[p].tok[k]) k++;
        double d = 0;
        for (int i = 0; i < N_ANSWER && i <= k; i++)
            if (conc[p].dist[i] > d) d = conc[p].dist[i];
        d /= ref[p].scale;
        if (d > worst) worst = d;
        printf("prompt %d (%d tokens): logits' relative distance up to %.3g; answer ", p,
               prompt_len[p], d);
        if (k == N_ANSWER)
            printf("identical\n");
        else
            printf("leaves the reference's at token %d of %d (its top-2 gap %.3g, the distance "
                   "there %.3g)\n", k, N_ANSWER, ref[p].gap[k], conc[p].dist[k]);
    }
    printf("batched: up to %.3g; llama.cpp's own variation with the decode calls: %.3g\n", worst,
           calls);
    check(worst <= 1.5 * calls + 1e-6 && worst < 2e-2,
          "batched within 1.5x the variation the decode calls' shapes make alone (and < 2e-2)");
    chat_engine_close(four);

    /* G: how long one decode step of one token takes on this machine first, then two at once,
     * sequence 1 taking a third of that (at least 6 ms: more than the engine's least wait)
     * between its tokens; a machine whose steps take under 9 ms cannot tell (the engine
     * rightly waits no longer than a decode) */
    chat_engine *two = open_engine(argv[1], 2, 128, 0, threads);
    answer ga[2];
    for (int p = 0; p < 2; p++)
        answer_alloc(&ga[p], &ref[p]);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (answer_on(two, 0, 1, &ga[0])) return 1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double step_ms = ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6) / N_ANSWER;
    think_us = (int)(step_ms * 1e3 / 3);
    if (think_us < 6000) think_us = 6000;
    int think_was = think_us;
    chat_engine_stats g0, g1;
    chat_engine_get_stats(two, &g0);
    for (int p = 0; p < 2; p++) {
        jobs[p] = (job){.e = two, .p = p, .a = &ga[p]};
        pthread_create(&th[p], NULL, run_job, &jobs[p]);
    }
    for (int p = 0; p < 2; p++) {
        pthread_join(th[p], NULL);
        if (jobs[p].rc) return 1;
        free(ga[p].logits);
    }
    think_us = 0;
    chat_engine_get_stats(two, &g1);
    unsigned long long shared = g1.shared_steps - g0.shared_steps;
    printf("one slow sampler (%.1f ms to ask again, a step %.1f ms): %llu decode calls, %llu of them "
           "shared\n", think_was / 1e3, step_ms, (unsigned long long)(g1.steps - g0.steps), shared);
    check(step_ms < 9.0 || shared >= N_ANSWER * 3 / 4,
          "one slow sampler: the two's generation steps still batched together");
    chat_engine_close(two);
    for (int p = 0; p < N_PROMPTS; p++) {
        free(ref[p].steps), free(ref[p].logits);
        free(lone[p].logits);
        free(conc[p].logits);
    }
    if (fails) printf("%d check(s) failed\n", fails);
    return fails ? 1 : 0;
}
