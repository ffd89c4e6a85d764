/* chat_params.h - what one request asks of a chat session: sampling, grammar, tools, thinking,
 * the image budget, the answer's length. Parsed once where the request comes in (g4v chat's
 * command line, an OpenAI request body in g4v serve), passed by pointer to the session
 * (chat_session_open for the first conversation, chat_session_restart for each next one); the
 * session's constants (models, context, threads, caches) are chat_options apart.
 * No libllama here: the service's request parser fills it in builds without it too. */
#ifndef G4V_CHAT_PARAMS_H
#define G4V_CHAT_PARAMS_H

#include <stdint.h>

#define CHAT_MAX_TOP_LOGPROBS 20 /* top_logprobs at most (OpenAI's limit) */

typedef struct chat_params {
    const char *system;  /* system prompt or NULL */
    float temp;          /* <= 0: greedy */
    int top_k;           /* <= 0: off */
    float top_p;         /* >= 1: off */
    float min_p;         /* <= 0: off */
    uint32_t seed;
    int max_tokens;      /* per answer; <= 0: until the end of the turn or the context */
    int budget;          /* image soft tokens, one of G4V_BUDGETS; 0: the session's own */
    int think;           /* 1: thinking on (enable_thinking): the answer's thought comes back
                            apart, in chat_turn_result.reasoning */
    const char *grammar; /* GBNF (root rule "root") every answer must match, sampled under
                            libllama's grammar sampler (docs/CHAT.md "Structured output"), or
                            NULL; with think, a thought block may come first. Not kept past the
                            call it is given to */
    int grammar_lazy;    /* 1: the grammar applies from the model's first <|tool_call> on
                            (tool_choice "auto": free text, constrained calls) */
    const char *tools;   /* the tools offered: an OpenAI tools array as JSON text, declared by
                            the model's template, or NULL (copied by the session) */
    const char *prefill; /* the start of the answer (an API request's final assistant message,
                            as llama-server's prefill): written after the generation prompt,
                            and the answer sampled continues it (it is not part of the answer
                            returned); NULL: none. Borrowed like system */
    /* logit_bias: bias[i] added to the logit of token bias_ids[i] before any sampling (grammar,
     * filters, temperature, the draw); -100 bans a token, +100 all but forces it. Borrowed */
    const int32_t *bias_ids;
    const float *bias;
    int n_bias;
    int logprobs;        /* 1: each answer token's log-probability is recorded
                            (chat_session_logprobs): the model's log-softmax over the whole
                            vocabulary of the raw logits, before logit_bias, temperature and
                            the filters (OpenAI's definition) */
    int top_logprobs;    /* with logprobs: that many likeliest tokens per position too, 0..20 */
} chat_params;

/* Gemma 4's generation_config.json: temperature 1, top_k 64, top_p 0.95; a random seed
 * (0xFFFFFFFF); 1024 tokens per answer; the session's budget; no system prompt, thinking,
 * grammar or tools. */
static inline void chat_params_init(chat_params *p) {
    *p = (chat_params){.temp = 1.0f, .top_k = 64, .top_p = 0.95f, .seed = 0xFFFFFFFFu,
                       .max_tokens = 1024};
}

#endif
