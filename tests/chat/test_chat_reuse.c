/* test_chat_reuse.c - prompt reuse gives the logits a fresh context gives for the same decode
 * calls, bit for bit (docs/CHAT.md "Prompt reuse").
 *
 *   test_chat_reuse LM.gguf VISION IMAGE THREADS          (exit 0: every check holds)
 *
 * A: a session answers "<image> Describe." with 12 greedy tokens; then the client sends the
 *    conversation back with the answer edited after a few tokens, plus a new question. A keeps
 *    the image turn and the answer's tokens up to the edit, cuts the rest, decodes the suffix.
 *    The prompt is g4v's own Gemma 4 format (--chat-template builtin), of the model's family:
 *    E2B/E4B's generation prompt is "<|turn>model\n", so the answer's tokens are kept; the
 *    26B/31B one adds the empty thought block "<|channel>thought\n<channel|>" (4 tokens), which
 *    the rendering of an earlier answer has not, so A keeps up to "<|turn>model\n" exactly.
 * B: a fresh session decodes the same calls: the same first turn, as many answer tokens as A
 *    kept (greedy again, one per call, as A decoded them), then the same request.
 *    Required: A and B keep the same positions and their last logits are identical (all
 *    n_vocab floats), and so are the logits after 4 more greedy tokens.
 * S: A's state saved (llama_state_seq_get_data) and loaded into a fresh session S; both feed
 *    one more turn: identical logits.
 * C: a session that decodes the whole request in one go (no reuse): the difference to A is
 *    printed (llama.cpp's results depend on the decode calls; a measurement, not a check), and
 *    the first greedy token must agree.
 * Also: a request held whole (the same one again) decodes nothing, gets the logits of its first
 * feed bit for bit, reports every position as reused, and its image is neither encoded nor
 * decoded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat_session.h"
#include "g4v.h"
#include "llama.h"
#include "test_util.h"

#define N_ANSWER 12
#define KEEP_TOKENS 5

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static chat_session *open_session(const char *lm, const char *vision, int threads, int reuse) {
    chat_options o;
    chat_options_init(&o);
    o.lm_path = lm;
    o.vision_path = vision;
    o.threads = threads;
    o.params.temp = 0;
    o.no_prompt_reuse = !reuse;
    o.chat_template = "builtin";
    chat_session *s;
    char err[1024];
    if (chat_session_open(&o, &s, err, sizeof err)) {
        printf("FAIL: chat_session_open: %s\n", err);
        exit(1);
    }
    llama_log_set(quiet, NULL);
    return s;
}

static void restart(chat_session *s, int max_tokens) {
    chat_params o;
    chat_params_init(&o);
    o.temp = 0;
    o.max_tokens = max_tokens;
    char err[512];
    if (chat_session_restart(s, &o, err, sizeof err)) {
        printf("FAIL: restart: %s\n", err);
        exit(1);
    }
}

static int n_vocab_of(chat_session *s) {
    return llama_vocab_n_tokens(llama_model_get_vocab(chat_session_llama_model(s)));
}

static float *logits_copy(chat_session *s) {
    size_t n = (size_t)n_vocab_of(s) * sizeof(float);
    float *v = malloc(n);
    memcpy(v, llama_get_logits_ith(chat_session_llama_context(s), -1), n);
    return v;
}

/* Plans the request (first turn, an earlier answer if any, a follow-up if any), feeds it. */
static chat_feed_stats replay(chat_session *s, const chat_media *img, const char *answer,
                              const char *follow) {
    char err[1024];
    chat_feed_stats st;
    memset(&st, 0, sizeof st);
    if (chat_session_add_user(s, img, 1, "Describe.", err, sizeof err) ||
        (answer && chat_session_add_answer(s, answer, err, sizeof err)) ||
        (follow && chat_session_add_user(s, NULL, 0, follow, err, sizeof err)) ||
        chat_session_feed(s, &st, err, sizeof err)) {
        printf("FAIL: replay: %s\n", err);
        exit(1);
    }
    return st;
}

/* Plans the three-turn request of the state and "held whole" checks: the image turn, the
 * edited answer, the follow-up, its answer, and "Why?". */
static void plan_three(chat_session *s, const chat_media *img, const char *edited,
                       const char *more) {
    char err[1024];
    if (chat_session_add_user(s, img, 1, "Describe.", err, sizeof err) ||
        chat_session_add_answer(s, edited, err, sizeof err) ||
        chat_session_add_user(s, NULL, 0, "And then?", err, sizeof err) ||
        chat_session_add_answer(s, more, err, sizeof err) ||
        chat_session_add_user(s, NULL, 0, "Why?", err, sizeof err)) {
        printf("FAIL: plan: %s\n", err);
        exit(1);
    }
}

static char *answer(chat_session *s) {
    chat_turn_result r;
    memset(&r, 0, sizeof r);
    char err[512];
    if (chat_session_generate(s, NULL, NULL, &r, err, sizeof err)) {
        printf("FAIL: generate: %s\n", err);
        exit(1);
    }
    char *t = r.text;
    r.text = NULL;
    chat_turn_result_free(&r);
    return t;
}

static int same_logits(const float *a, const float *b, int n, double *maxdiff) {
    *maxdiff = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > *maxdiff) *maxdiff = d;
    }
    return !memcmp(a, b, (size_t)n * sizeof *a);
}

static int argmax(const float *v, int n) {
    int b = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: test_chat_reuse LM.gguf VISION IMAGE THREADS\n");
        return 2;
    }
    const char *lm = argv[1], *vision = argv[2];
    int threads = atoi(argv[4]);
    chat_media img = {.path = argv[3]};
    chat_session *a = open_session(lm, vision, threads, 1);
    int nv = n_vocab_of(a);

    /* A, first request: the image turn and its answer */
    restart(a, N_ANSWER);
    chat_feed_stats st = replay(a, &img, NULL, NULL);
    int first_pos = st.text_tokens + st.image_rows;
    int prompt_items;
    chat_session_items(a, &prompt_items);
    char *ans = answer(a);
    int held;
    const uint64_t *items = chat_session_items(a, &held);
    CHECK_MSG(held >= prompt_items + KEEP_TOKENS, "the answer is held (%d items)", held);
    /* the client's edit: the text of the first KEEP_TOKENS answer tokens, then other words */
    char edited[1024] = "";
    const struct llama_vocab *vocab = llama_model_get_vocab(chat_session_llama_model(a));
    for (int k = 0; k < KEEP_TOKENS; k++) {
        char piece[256];
        int n = llama_token_to_piece(vocab, (llama_token)(items[prompt_items + k] & 0x7fffffff),
                                     piece, (int)sizeof piece - 1, 0, false);
        piece[n > 0 ? n : 0] = 0;
        strncat(edited, piece, sizeof edited - strlen(edited) - 1);
    }
    strncat(edited, " Edited by the client.", sizeof edited - strlen(edited) - 1);
    /* the template trims an earlier answer (strip_thinking): one that begins with whitespace
     * differs from the context at its first token */
    int lead_ws = ans[0] == ' ' || ans[0] == '\n' || ans[0] == '\t' || ans[0] == '\r';

    /* A, second request: kept up to the edit, the rest decoded */
    restart(a, 4);
    st = replay(a, &img, edited, "And then?");
    int kept_a = st.reused_pos;
    CHECK_MSG(st.images_reused == 1 && st.images_encoded == 0 && st.images_cached == 0,
          "A: the image is reused (%d reused, %d encoded, %d cached)", st.images_reused,
          st.images_encoded, st.images_cached);
    CHECK_MSG(kept_a >= st.image_rows + KEEP_TOKENS, "A: %d positions kept", kept_a);
    float *la = logits_copy(a);
    char *more_a = answer(a);

    /* B: fresh, the same decode calls: the first turn, then as many answer tokens as A kept,
     * one per call (greedy gives A's tokens again) */
    int n_kept_answer = kept_a - first_pos;
    chat_session_info info;
    chat_session_get_info(a, &info);
    if (strstr(info.template_origin, "26B/31B"))
        CHECK_MSG(n_kept_answer == -4, "A kept up to the model turn's start (%d, -4 expected)",
                  n_kept_answer);
    else if (lead_ws)
        CHECK_MSG(n_kept_answer == 0, "A kept up to its answer, which began with whitespace "
                  "(%d, 0 expected)", n_kept_answer);
    else
        CHECK_MSG(n_kept_answer >= KEEP_TOKENS && n_kept_answer < N_ANSWER,
                  "A kept %d answer tokens (%d+ expected)", n_kept_answer, KEEP_TOKENS);
    chat_session *b = open_session(lm, vision, threads, 1);
    restart(b, n_kept_answer > 0 ? n_kept_answer : 1);
    replay(b, &img, NULL, NULL);
    free(answer(b));
    restart(b, 4);
    chat_feed_stats sb = replay(b, &img, edited, "And then?");
    float *lb = logits_copy(b);
    char *more_b = answer(b);
    double d;
    CHECK_MSG(sb.reused_pos == kept_a, "B keeps what A kept (%d vs %d)", sb.reused_pos, kept_a);
    CHECK_MSG(same_logits(la, lb, nv, &d), "A's logits = B's, bit for bit (max |diff| %.3g)", d);
    CHECK_MSG(!strcmp(more_a, more_b), "A's 4 greedy tokens = B's ('%s' vs '%s')", more_a, more_b);
    printf("reuse: kept %d positions (%d answer tokens), decoded %d; A = B bit for bit: %s\n",
           kept_a, n_kept_answer, st.decoded_pos, same_logits(la, lb, nv, &d) ? "yes" : "NO");

    /* S: A's state into a fresh session; one more turn on both */
    void *state = NULL;
    size_t size = 0;
    char err[1024];
    int n_items;
    const uint64_t *ia = chat_session_items(a, &n_items);
    uint64_t *ic = malloc((size_t)n_items * sizeof *ic);
    memcpy(ic, ia, (size_t)n_items * sizeof *ic);
    CHECK_MSG(!chat_session_state_save(a, &state, &size, err, sizeof err), "save: %s", err);
    chat_session *sv = open_session(lm, vision, threads, 1);
    restart(sv, 2);
    CHECK_MSG(!chat_session_state_load(sv, ic, n_items, state, size, err, sizeof err), "load: %s",
          err);
    restart(a, 2);
    plan_three(a, &img, edited, more_a);
    chat_feed_stats s3a, s3s;
    CHECK_MSG(!chat_session_feed(a, &s3a, err, sizeof err), "A, third: %s", err);
    plan_three(sv, &img, edited, more_a);
    CHECK_MSG(!chat_session_feed(sv, &s3s, err, sizeof err), "S, third: %s", err);
    float *l3a = logits_copy(a), *l3s = logits_copy(sv);
    CHECK_MSG(s3a.reused_pos == s3s.reused_pos && s3a.reused_pos > kept_a,
          "the loaded state is reused as A's own (%d vs %d)", s3s.reused_pos, s3a.reused_pos);
    CHECK_MSG(same_logits(l3a, l3s, nv, &d), "a loaded state = the saved one, bit for bit (%.3g)", d);
    printf("state: %zu bytes for %d items; loaded = saved: %s\n", size, n_items,
           same_logits(l3a, l3s, nv, &d) ? "yes" : "NO");

    /* the same request again: held whole, nothing decoded, the logits those of its first feed
     * (a decode of the last position alone would round differently: a seeded answer would not
     * be the one the same request got before) */
    restart(a, 2);
    plan_three(a, &img, edited, more_a);
    chat_feed_stats s4;
    CHECK_MSG(!chat_session_feed(a, &s4, err, sizeof err), "A, again: %s", err);
    CHECK_MSG(s4.decoded_pos == 0 && s4.reused_pos == s3a.reused_pos + s3a.decoded_pos &&
              s4.images_reused == 1 && s4.images_encoded == 0,
          "a request held whole: nothing decoded, %d reused (%d, images %d/%d)",
          s4.reused_pos, s4.decoded_pos, s4.images_reused, s4.images_encoded);
    float *l4 = logits_copy(a);
    CHECK_MSG(same_logits(l3a, l4, nv, &d),
              "held whole: the logits of its first feed, bit for bit (%.3g)", d);

    /* C: the second request in one go, no reuse (a measurement) */
    chat_session *c = open_session(lm, vision, threads, 0);
    restart(c, 4);
    chat_feed_stats sc = replay(c, &img, edited, "And then?");
    float *lc = logits_copy(c);
    CHECK_MSG(sc.reused_pos == 0, "no reuse: nothing kept (%d)", sc.reused_pos);
    same_logits(la, lc, nv, &d);
    printf("reuse vs one-shot prefill: max |logit diff| %.3g (largest logit %.3g), greedy token "
           "%s\n", d, lc[argmax(lc, nv)],
           argmax(la, nv) == argmax(lc, nv) ? "the same" : "DIFFERENT (a near tie)");

    free(la);
    free(lb);
    free(lc);
    free(l3a);
    free(l3s);
    free(l4);
    free(state);
    free(ic);
    free(ans);
    free(more_a);
    free(more_b);
    chat_session_close(a);
    chat_session_close(b);
    chat_session_close(sv);
    chat_session_close(c);
    return test_summary("test_chat_reuse");
}
