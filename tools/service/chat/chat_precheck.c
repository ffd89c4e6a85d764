/* chat_precheck.c - what is checked of a parsed chat request before it waits for a slot (the
 * grammar its answer is sampled under, the model's vocabulary, the context), so that a request
 * no slot could serve is answered at once, even with every slot busy and the queue full
 * (docs/CHAT_API.md §3). Called by the routes on the connection's thread; without libllama
 * nothing is checked (the slots refuse --lm). */
#include "chat/chat_wing.h"

#ifndef G4V_HAVE_LLAMA

int chat_precheck(chat_wing *cw, chat_job *j, chat_fail *f) {
    (void)cw;
    (void)j;
    (void)f;
    return 0;
}

#else

#include "chat_grammar.h"
#include "chat_tool_call.h"
#include "llama.h"

#include <string.h>

/* The grammar the answer is sampled under (docs/CHAT.md "Structured output"): response_format's
 * schema, or the declared tools' calls (tool_choice "auto": lazily, from the model's first
 * <|tool_call> on; "required" or a named function: the answer is calls). NULL: none. 0, or -1
 * with a 400 naming what is not served. */
static int job_grammar(const chat_wing *cw, const chat_job *j, char **gbnf, int *lazy,
                       chat_fail *f) {
    char err[600] = "";
    *gbnf = NULL;
    *lazy = 0;
    int tools = j->tools && j->tool_choice != CHAT_TOOLS_NONE;
    for (int t = 0; t < j->n_turns; t++)
        tools |= j->turns[t].tool_calls || j->turns[t].role == CHAT_ROLE_TOOL;
    if (tools && cw->builtin_template) { /* only the model's template renders them */
        chat_fail_set(f, 400, "invalid_request_error", "invalid_tools",
                      "tools, tool calls and tool results need the model's own chat "
                      "template (Gemma 4's tool format is the template's), and this server "
                      "renders with its built-in format (%s): start it with "
                      "--chat-template FILE",
                      cw->template_origin);
        return -1;
    }
    if (j->schema) {
        if (!chat_schema_grammar(j->schema, strlen(j->schema), gbnf, err, sizeof err)) return 0;
        chat_fail_set(f, 400, "invalid_request_error", "invalid_response_format", "%s", err);
        return -1;
    }
    if (!j->tools || j->tool_choice == CHAT_TOOLS_NONE) return 0;
    chat_tool_grammar_opts go = {
        .only_name = j->tool_choice == CHAT_TOOLS_NAMED ? j->tool_name : NULL,
        .min_calls = 1,
        .max_calls = j->parallel_tool_calls ? -1 : 1,
        .allow_thought = j->params.think && j->tool_choice != CHAT_TOOLS_AUTO,
    };
    *lazy = j->tool_choice == CHAT_TOOLS_AUTO;
    if (!chat_tools_check(j->tools, err, sizeof err) &&
        !chat_tool_grammar(j->tools, &go, gbnf, err, sizeof err))
        return 0;
    chat_fail_set(f, 400, "invalid_request_error", "invalid_tools", "tools: %s", err);
    return -1;
}

/* The text tokenized before a request waits, at most: a longer one is left to the slot (it
 * would hold up the server's connection thread) */
enum { PRECHECK_MAX_TEXT = 4 << 20 };

/* A lower bound of the prompt's positions: its text's tokens (images and the template's own
 * tokens not counted) */
static long text_tokens(const struct llama_vocab *v, const char *text) {
    if (!text || !*text) return 0; /* under PRECHECK_MAX_TEXT: its length fits an int32_t */
    int r = llama_tokenize(v, text, (int32_t)strlen(text), NULL, 0, false, false); /* -needed */
    return r < 0 ? -(long)r : r;
}

int chat_precheck(chat_wing *cw, chat_job *j, chat_fail *f) {
    if (job_grammar(cw, j, &j->gbnf, &j->params.grammar_lazy, f)) return -1;
    j->params.grammar = j->gbnf;
    j->checked = 1;
    if (!cw->lm || cw->n_ctx <= 0) return 0;
    int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(cw->lm));
    for (int i = 0; i < j->params.n_bias; i++)
        if (j->params.bias_ids[i] >= n_vocab) {
            chat_fail_set(f, 400, "invalid_request_error", "invalid_logit_bias",
                          "logit_bias: token id %d is outside the vocabulary (0 to %d)",
                          (int)j->params.bias_ids[i], n_vocab - 1);
            return -1;
        }
    size_t bytes = (j->system ? strlen(j->system) : 0) + (j->prefill ? strlen(j->prefill) : 0);
    for (int t = 0; t < j->n_turns; t++)
        bytes += (j->turns[t].text ? strlen(j->turns[t].text) : 0) +
                 (j->turns[t].reasoning ? strlen(j->turns[t].reasoning) : 0) +
                 (j->turns[t].tool_calls ? strlen(j->turns[t].tool_calls) : 0);
    if (bytes > PRECHECK_MAX_TEXT) return 0;
    const struct llama_vocab *v = llama_model_get_vocab(cw->lm);
    long n = text_tokens(v, j->system) + text_tokens(v, j->prefill);
    for (int t = 0; t < j->n_turns && n < cw->n_ctx; t++) {
        n += text_tokens(v, j->turns[t].text);
        n += text_tokens(v, j->turns[t].reasoning);
        n += text_tokens(v, j->turns[t].tool_calls);
    }
    if (n + 1 > cw->n_ctx) {
        chat_fail_set(f, 400, "invalid_request_error", "context_length_exceeded",
                      "the prompt does not fit in the context: its text alone is %ld tokens "
                      "(images and the chat template not counted) + 1 to answer, and the "
                      "context holds %d (the server's --lm-ctx)",
                      n, cw->n_ctx);
        return -1;
    }
    return 0;
}

#endif
