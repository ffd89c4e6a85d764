/* chat_sample.c - how the next token of an answer is drawn: the conversation's sampling chain
 * (greedy, or top-k, top-p, min-p, temperature and a seeded draw: Gemma 4's generation_config.json by
 * default), under a grammar when the request asks for structured output or constrained tool
 * calls (docs/CHAT.md "Structured output").
 *
 * The grammar is libllama's sampler over GBNF. Applying it to the whole vocabulary (262,144
 * tokens for Gemma 4) at every step costs far more than the draw, so a token is drawn without it
 * first and only checked; when the grammar refuses that token, the draw is made again over the
 * whole vocabulary with the grammar applied first (llama.cpp's common sampler does the same).
 * Either way the token is one the grammar allows; what differs from a draw over the constrained
 * distribution is only how likely each allowed token was. */
#include "chat_error.h"
#include "chat_grammar.h"
#include "chat_session_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct llama_sampler *make_chain(const chat_params *o) {
    struct llama_sampler_chain_params p = llama_sampler_chain_default_params();
    p.no_perf = true;
    struct llama_sampler *c = llama_sampler_chain_init(p);
    if (!c) return NULL;
    if (o->temp <= 0) {
        llama_sampler_chain_add(c, llama_sampler_init_greedy());
        return c;
    }
    if (o->top_k > 0) llama_sampler_chain_add(c, llama_sampler_init_top_k(o->top_k));
    if (o->top_p < 1.0f) llama_sampler_chain_add(c, llama_sampler_init_top_p(o->top_p, 1));
    if (o->min_p > 0.0f) llama_sampler_chain_add(c, llama_sampler_init_min_p(o->min_p, 1));
    llama_sampler_chain_add(c, llama_sampler_init_temp(o->temp));
    llama_sampler_chain_add(c, llama_sampler_init_dist(o->seed));
    return c;
}

int chat_sampler_reseed(chat_session *s, uint32_t seed) {
    chat_params p = s->o.params;
    p.seed = seed;
    struct llama_sampler *c = make_chain(&p);
    if (!c) return -1;
    llama_sampler_free(s->smpl);
    s->smpl = c;
    s->o.params.seed = seed;
    return 0;
}

int chat_sampler_make(chat_session *s, const chat_params *o, struct llama_sampler **chain,
                      struct llama_sampler **grammar, char *err, size_t errsz) {
    *grammar = NULL;
    *chain = make_chain(o);
    if (!*chain) {
        seterr(err, errsz, "cannot create the sampler");
        return CHAT_ERR_INTERNAL;
    }
    if (!o->grammar) return CHAT_OK;
    if (o->grammar_lazy) {
        if (s->tok_call < 0) {
            seterr(err, errsz, "the text model's vocabulary has no <|tool_call> token");
            goto usage;
        }
        *grammar = llama_sampler_init_grammar_lazy_patterns(s->vocab, o->grammar, "root", NULL, 0,
                                                            &s->tok_call, 1);
    } else {
        /* thinking on: a thought block (<|channel> ... <channel|>) may come first, free; the
         * answer after it is constrained */
        char *g = strdup(o->grammar);
        if (!g || (o->think && chat_grammar_allow_thought(&g, err, errsz))) {
            int rc = g ? CHAT_ERR_USAGE : CHAT_ERR_INTERNAL; /* a rule name taken, memory */
            if (!g) seterr(err, errsz, "out of memory");
            free(g);
            llama_sampler_free(*chain);
            *chain = NULL;
            return rc;
        }
        *grammar = llama_sampler_init_grammar(s->vocab, g,
                                              o->think ? CHAT_GRAMMAR_THOUGHT_ROOT : "root");
        free(g);
    }
    if (*grammar) return CHAT_OK;
    seterr(err, errsz, "the grammar does not parse (GBNF, root rule \"root\"; libllama's parser "
                       "logs where with --verbose)");
usage:
    llama_sampler_free(*chain);
    *chain = NULL;
    return CHAT_ERR_USAGE;
}

/* The candidates of the whole vocabulary, from the logits of the conversation's last position
 * (copied out of the engine's shared decode). */
static llama_token_data_array all_candidates(chat_session *s) {
    const float *logits = s->logits;
    int n = llama_vocab_n_tokens(s->vocab);
    for (int i = 0; i < n; i++)
        s->cand[i] = (llama_token_data){i, logits[i], 0.0f};
    /* logit_bias, before anything else sees the logits (ids checked by the caller) */
    for (int i = 0; i < s->o.params.n_bias; i++)
        if (s->o.params.bias_ids[i] >= 0 && s->o.params.bias_ids[i] < n)
            s->cand[s->o.params.bias_ids[i]].logit += s->o.params.bias[i];
    return (llama_token_data_array){s->cand, (size_t)n, -1, false};
}

void chat_logprob_of(const chat_session *s, llama_token tok, int n, chat_logprob *out) {
    const float *l = s->logits;
    int nv = llama_vocab_n_tokens(s->vocab);
    if (n > CHAT_MAX_TOP_LOGPROBS) n = CHAT_MAX_TOP_LOGPROBS;
    float mx = l[0];
    for (int i = 1; i < nv; i++)
        if (l[i] > mx) mx = l[i];
    double sum = 0;
    for (int i = 0; i < nv; i++)
        sum += exp((double)l[i] - mx);
    double lse = mx + log(sum);
    out->token = tok;
    out->logprob = (float)(l[tok] - lse);
    /* the n largest, kept sorted (ties: the lower id first, as a stable sort gives them) */
    int k = 0;
    for (int i = 0; i < nv && n > 0; i++) {
        if (k == n && l[i] <= l[out->top[k - 1]]) continue;
        int at = k < n ? k++ : n - 1;
        while (at > 0 && l[out->top[at - 1]] < l[i]) {
            out->top[at] = out->top[at - 1];
            at--;
        }
        out->top[at] = i;
    }
    out->n_top = k;
    for (int i = 0; i < k; i++)
        out->top_logprob[i] = (float)(l[out->top[i]] - lse);
}

llama_token chat_sample(chat_session *s, char *err, size_t errsz) {
    if (!s->cand) {
        s->cand = malloc((size_t)llama_vocab_n_tokens(s->vocab) * sizeof *s->cand);
        if (!s->cand) {
            seterr(err, errsz, "out of memory");
            return -1;
        }
    }
    llama_token_data_array a = all_candidates(s);
    llama_sampler_apply(s->smpl, &a);
    llama_token tok = a.data[a.selected].id;
    if (!s->grammar) { /* as llama_sampler_sample draws from a context's logits */
        llama_sampler_accept(s->smpl, tok);
        return tok;
    }
    llama_token_data one = {tok, 1.0f, 0.0f};
    llama_token_data_array check = {&one, 1, -1, false};
    llama_sampler_apply(s->grammar, &check);
    if (isinf(one.logit) && one.logit < 0) { /* refused: drawn again under the grammar */
        a = all_candidates(s);
        llama_sampler_apply(s->grammar, &a);
        int any = 0;
        for (size_t i = 0; i < a.size && !any; i++) any = !(isinf(a.data[i].logit) && a.data[i].logit < 0);
        if (!any) {
            seterr(err, errsz, "the grammar allows no next token");
            return -1;
        }
        llama_sampler_apply(s->smpl, &a);
        tok = a.data[a.selected].id;
    }
    llama_sampler_accept(s->grammar, tok);
    llama_sampler_accept(s->smpl, tok);
    return tok;
}
