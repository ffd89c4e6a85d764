/* chat_slots.c - the job kind "chat" (core/core.h, svc_kind): the language model's slots
 * (--lm-slots K) are the workers of the core's queue, each owning one chat session (chat/)
 * on a sequence of the one text model's one context (chat_engine.h: every answering slot's next
 * token in one decode call), sharing the service's vision model and one
 * feature cache (--cache, else a private one removed at exit), so an image sent again in a later
 * turn of a conversation is read from the cache, not encoded again. A complete chat request is
 * admitted by the core (429 with Retry-After when --max-queue requests already wait, 503 while
 * stopping: answered here in the OpenAI error format) and its connection suspended; a slot's
 * worker replays the conversation (the API is stateless:
 * every request carries all its turns), answers errors before any byte of an answer, then
 * generates: into one JSON answer, or as server-sent events while the tokens come.
 *
 * A client that hangs up frees its slot at once: the worker polls the socket for POLLRDHUP after
 * every token (libmicrohttpd sees nothing of a suspended connection), and a stream's writer sees
 * the request completed. --request-timeout bounds a request from its arrival to its last token.
 */
#define _GNU_SOURCE /* POLLRDHUP, memmem */
#include "chat/chat_wing.h"
#include "frontend.h"
#include "tempdir.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef G4V_HAVE_LLAMA

int chat_slots_open(chat_wing *cw) {
    (void)cw;
    fprintf(stderr, "g4v serve: --lm: this g4v was built without llama.cpp's libllama\n"
                    "  (scripts/build-llama.sh, then reconfigure; docs/CHAT.md)\n");
    return G4V_SERVICE_ERR_USAGE;
}
void chat_slots_close(chat_wing *cw) { (void)cw; }
int chat_slots_precheck(chat_wing *cw, chat_job *j, chat_fail *f) {
    (void)cw;
    (void)j;
    (void)f;
    return 0;
}

#else

#include "chat_engine.h"
#include "chat_grammar.h"
#include "chat_items.h"
#include "chat_prompt_cache.h"
#include "chat_session.h"
#include "chat_tool_call.h"
#include "llama.h"

#include <cjson/cJSON.h>

#include <poll.h>
#include <string.h>
#include <unistd.h>

enum { LARGEST_BUDGET = 1120 }; /* the last of G4V_BUDGETS: a slot takes any */
/* A cached state replaces what a slot holds only when it saves this many more positions: loading
 * a state costs about as much as decoding a few dozen tokens. */
enum { PCACHE_MIN_GAIN = 32 };

static int job_grammar(const chat_wing *cw, const chat_job *j, char **gbnf, int *lazy,
                       chat_fail *f);

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

int chat_slots_precheck(chat_wing *cw, chat_job *j, chat_fail *f) {
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

/* The client hung up: libmicrohttpd completed the request, or the socket says so. */
static int client_gone(chat_job *j) {
    pthread_mutex_lock(&j->mu);
    int gone = j->gone;
    if (!gone && j->fd >= 0) { /* under j->mu: the request cannot complete, the fd stays ours */
        struct pollfd p = {.fd = j->fd, .events = POLLRDHUP};
        gone = poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
    }
    pthread_mutex_unlock(&j->mu);
    return gone;
}

/* Answers the still-suspended request (before any byte of a stream) and resumes it. */
static void reply(chat_job *j, int code, struct MHD_Response *resp) {
    request *q = j->q;
    j->q = NULL;
    svc_reply(q, code, resp); /* svc_handle queues resp */
}

static void reply_fail(chat_job *j, const chat_fail *f) {
    struct MHD_Response *r = chat_error_response(f);
    reply(j, r ? f->http : MHD_HTTP_INTERNAL_SERVER_ERROR, r);
}

/* What generation keeps: the answer so far, what of it was streamed, why it stopped. */
typedef struct gen {
    chat_job *j;
    double deadline;
    char *text;
    size_t len, cap, sent, scanned, hold;
    const char *why; /* set when we stopped it: "stop_string", "timeout", "client_gone" */
    char *th;        /* the thought so far (th_sent of it streamed) */
    size_t th_len, th_cap, th_sent;
    chat_call_out *calls; /* the tool calls, parsed and checked as each completes */
    int n_calls;
    cJSON *tools;    /* the request's tools (their parameters check the calls), or NULL */
    chat_fail bad;   /* why a call was refused (why = "invalid_tool_call") */
    chat_session *cs; /* the slot's session: the answer's logprobs */
    int lp_sent;      /* of them, streamed */
} gen;

/* The stream's pieces in the request's API: chat.completion.chunk events, or the Responses
 * API's typed events (chat_responses.c; a thought is not streamed there, it comes in the final
 * response). */
static int out_role(chat_job *j) {
    return j->responses ? chat_responses_start(j) : chat_stream_role(j);
}
static int out_text(chat_job *j, const char *text, size_t n, const char *lp) {
    if (j->responses) return chat_responses_text(j, text, n);
    return lp ? chat_stream_text_lp(j, text, n, lp) : chat_stream_text(j, text, n);
}
static int out_reasoning(chat_job *j, const char *text, size_t n) {
    return j->responses ? 0 : chat_stream_reasoning(j, text, n);
}
static int out_call(chat_job *j, int index, const chat_call_out *c) {
    return j->responses ? chat_responses_call(j, c) : chat_stream_tool_call(j, index, c);
}
static int out_end(chat_job *j, const chat_usage *u) {
    return j->responses ? chat_responses_end(j, u) : chat_stream_end(j, u);
}

/* One token's text and bytes as OpenAI's logprobs give them: "token" (UTF-8, a stray byte as
 * '?'), "bytes" (the token's own bytes, which may be part of a character). */
static int add_token(cJSON *x, const struct llama_vocab *v, int32_t tok) {
    char buf[256];
    int n = llama_token_to_piece(v, tok, buf, (int32_t)sizeof buf, 0, false);
    if (n < 0) n = 0;
    char *t = fe_utf8_copy(buf, (size_t)n);
    cJSON *b = cJSON_CreateArray();
    int ok = t && b && cJSON_AddStringToObject(x, "token", t) && cJSON_AddItemToObject(x, "bytes", b);
    if (!ok && b && !cJSON_GetObjectItemCaseSensitive(x, "bytes")) cJSON_Delete(b);
    for (int i = 0; ok && i < n; i++)
        ok = cJSON_AddItemToArray(b, cJSON_CreateNumber((unsigned char)buf[i])) != 0;
    free(t);
    return ok;
}

/* The answer's tokens [from, to) as logprobs.content's JSON text (malloc'ed), or NULL. */
static char *logprobs_json(chat_session *cs, int from, int to) {
    int n;
    const chat_logprob *lp = chat_session_logprobs(cs, &n);
    const struct llama_vocab *v = llama_model_get_vocab(chat_session_llama_model(cs));
    if (to > n) to = n;
    cJSON *a = cJSON_CreateArray();
    int ok = a != NULL;
    for (int i = from; ok && i < to; i++) {
        cJSON *x = cJSON_CreateObject(), *top = NULL;
        ok = x && cJSON_AddItemToArray(a, x) && add_token(x, v, lp[i].token) &&
             cJSON_AddNumberToObject(x, "logprob", lp[i].logprob) &&
             (top = cJSON_AddArrayToObject(x, "top_logprobs"));
        for (int k = 0; ok && k < lp[i].n_top; k++) {
            cJSON *y = cJSON_CreateObject();
            ok = y && cJSON_AddItemToArray(top, y) && add_token(y, v, lp[i].top[k]) &&
                 cJSON_AddNumberToObject(y, "logprob", lp[i].top_logprob[k]);
        }
    }
    char *s = ok ? cJSON_PrintUnformatted(a) : NULL;
    cJSON_Delete(a);
    return s;
}

/* A piece of content streamed with the logprobs of the tokens sampled since the last piece. */
static int stream_text(gen *g, const char *text, size_t n) {
    char *lp = NULL;
    if (g->j->params.logprobs) {
        int nl;
        chat_session_logprobs(g->cs, &nl);
        if (nl > g->lp_sent) lp = logprobs_json(g->cs, g->lp_sent, nl);
        if (lp) g->lp_sent = nl;
    }
    int rc = out_text(g->j, text, n, lp);
    free(lp);
    return rc;
}

/* The parameters schema the request declares for the function name, as JSON text (malloc'ed),
 * or NULL when it declares none (any arguments then). */
static char *tool_parameters(const cJSON *tools, const char *name) {
    for (const cJSON *t = tools ? tools->child : NULL; t; t = t->next) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (cJSON_IsString(nm) && !strcmp(nm->valuestring, name)) {
            const cJSON *p = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
            return cJSON_IsObject(p) ? cJSON_PrintUnformatted(p) : NULL;
        }
    }
    return NULL;
}

/* One complete tool call as the model wrote it: parsed, checked against the function's declared
 * parameters (the grammar makes them match; the check says so), kept, and streamed. */
static int on_tool_call(gen *g, const char *p, size_t n) {
    chat_job *j = g->j;
    chat_tool_call *c = NULL;
    int nc = 0;
    char *content = NULL, err[512];
    if (chat_tool_calls_parse(p, n, &c, &nc, &content, err, sizeof err) || nc != 1) {
        chat_fail_set(&g->bad, 500, "server_error", "invalid_tool_call",
                      "the model wrote a tool call that does not parse: %s", nc != 1 && !err[0] ? "not one call" : err);
        goto refuse;
    }
    int declared = 0;
    for (const cJSON *t = g->tools ? g->tools->child : NULL; t && !declared; t = t->next) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(t, "function"), "name");
        declared = cJSON_IsString(nm) && !strcmp(nm->valuestring, c[0].name);
    }
    char *params = declared ? tool_parameters(g->tools, c[0].name) : NULL;
    int v = !declared ? 1 : params ? chat_schema_validate(params, c[0].arguments_json, err, sizeof err) : 0;
    free(params);
    if (v) {
        chat_fail_set(&g->bad, 500, "server_error", "invalid_tool_call",
                      "the model called '%.64s' with arguments that do not match its parameters: "
                      "%s", c[0].name, declared ? err : "no such function was declared");
        goto refuse;
    }
    chat_call_out *v2 = realloc(g->calls, (size_t)(g->n_calls + 1) * sizeof *v2);
    if (!v2) {
        g->why = "out_of_memory";
        goto stop;
    }
    g->calls = v2;
    chat_call_out *o = &g->calls[g->n_calls++];
    snprintf(o->id, sizeof o->id, "call_%s_%d", j->id + 9, g->n_calls - 1);
    o->name = c[0].name;
    o->arguments = c[0].arguments_json;
    c[0].name = c[0].arguments_json = NULL;
    chat_tool_calls_free(c, nc);
    free(content);
    if (j->stream && out_call(j, g->n_calls - 1, o)) {
        g->why = "client_gone";
        return 1;
    }
    return 0;
refuse:
    g->why = "invalid_tool_call";
stop:
    chat_tool_calls_free(c, nc);
    free(content);
    return 1;
}

/* The call the answer's end cut short (r->call_cut): its name and the start of its arguments
 * as JSON text, kept (and streamed) as the answer's last call; nothing is checked of it. */
static void cut_call(gen *g, const chat_turn_result *r) {
    const char *p = r->tool_calls, *last = NULL;
    for (const char *q = p; (q = memmem(q, r->tool_calls_len - (size_t)(q - p), "<|tool_call>",
                                        12));
         q++)
        last = q;
    if (!last) return;
    chat_call_out *v = realloc(g->calls, (size_t)(g->n_calls + 1) * sizeof *v);
    if (!v) return;
    g->calls = v;
    chat_call_out *o = &g->calls[g->n_calls];
    if (chat_tool_call_partial(last, r->tool_calls_len - (size_t)(last - p), &o->name,
                               &o->arguments))
        return;
    snprintf(o->id, sizeof o->id, "call_%s_%d", g->j->id + 9, g->n_calls);
    g->n_calls++;
    if (g->j->stream) out_call(g->j, g->n_calls - 1, o);
}

/* A piece of the thought: kept, and streamed as far as it ends on a whole character. Stop
 * strings are looked for in the answer only. */
static int on_thought(gen *g, const char *p, size_t n) {
    chat_job *j = g->j;
    if (g->th_len + n + 1 > g->th_cap) {
        size_t cap = g->th_cap ? g->th_cap * 2 : 1024;
        while (cap < g->th_len + n + 1)
            cap *= 2;
        char *t = realloc(g->th, cap);
        if (!t) {
            g->why = "out_of_memory";
            return 1;
        }
        g->th = t;
        g->th_cap = cap;
    }
    memcpy(g->th + g->th_len, p, n);
    g->th_len += n;
    g->th[g->th_len] = 0;
    if (j->stream) {
        size_t safe = chat_utf8_safe_len(g->th, g->th_len);
        if (safe > g->th_sent) {
            if (out_reasoning(j, g->th + g->th_sent, safe - g->th_sent)) {
                g->why = "client_gone";
                return 1;
            }
            g->th_sent = safe;
        }
    }
    return 0;
}

static int on_piece(const char *p, size_t n, int thought, void *user) {
    gen *g = user;
    chat_job *j = g->j;
    if (thought == CHAT_EMIT_TOOL_CALL) {
        if (on_tool_call(g, p, n)) return 1;
        thought = 0;
        n = 0; /* the checks below still run */
    }
    if (thought) {
        if (on_thought(g, p, n)) return 1;
        n = 0; /* the checks below still run: a hang-up, the deadline */
    }
    if (g->len + n + 1 > g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 1024;
        while (cap < g->len + n + 1)
            cap *= 2;
        char *t = realloc(g->text, cap);
        if (!t) {
            g->why = "out_of_memory";
            return 1;
        }
        g->text = t;
        g->cap = cap;
    }
    if (n) memcpy(g->text + g->len, p, n);
    g->len += n;
    g->text[g->len] = 0;
    /* a stop string ends the answer before it (searched where it may have begun) */
    size_t from = g->scanned > g->hold ? g->scanned - g->hold : 0, cut = g->len;
    for (int i = 0; i < j->n_stop; i++) {
        char *hit = memmem(g->text + from, g->len - from, j->stop[i], strlen(j->stop[i]));
        if (hit && (size_t)(hit - g->text) < cut) cut = (size_t)(hit - g->text);
    }
    g->scanned = g->len;
    if (cut < g->len) {
        g->len = cut;
        g->text[cut] = 0;
        g->why = "stop_string";
        return 1;
    }
    if (j->stream) { /* what can no longer become a stop string nor split a character */
        size_t safe = chat_utf8_safe_len(g->text, g->len > g->hold ? g->len - g->hold : 0);
        if (safe > g->sent) {
            if (stream_text(g, g->text + g->sent, safe - g->sent)) {
                g->why = "client_gone";
                return 1;
            }
            g->sent = safe;
        }
    }
    if (client_gone(j)) {
        g->why = "client_gone";
        return 1;
    }
    if (fe_now_s() > g->deadline) {
        g->why = "timeout";
        return 1;
    }
    return 0;
}

/* Maps a chat_session failure to the answer. */
static void session_fail(chat_fail *f, int rc, const char *err) {
    if (rc == CHAT_ERR_INPUT && strstr(err, "does not fit in the context"))
        chat_fail_set(f, 400, "invalid_request_error", "context_length_exceeded", "%s", err);
    else if (rc == CHAT_ERR_INPUT && strstr(err, "the chat template")) /* it raised an error */
        chat_fail_set(f, 400, "invalid_request_error", "invalid_messages", "%s", err);
    else if (rc == CHAT_ERR_INPUT)
        chat_fail_set(f, 400, "invalid_request_error", "invalid_image", "%s", err);
    else if (rc == CHAT_ERR_USAGE)
        chat_fail_set(f, 400, "invalid_request_error", "invalid_parameter", "%s", err);
    else
        chat_fail_set(f, 500, "server_error", "internal_error", "%s", err);
}

/* Plans every turn of the conversation and feeds the plan: the slot's sequence keeps what it
 * already holds of it (prompt reuse) and decodes the rest; the last turn (a user turn) is left
 * to generate. */
static void pcache_consult(chat_wing *cw, chat_session *cs);

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

/* Adds turn t of the job to the session's conversation. */
static int add_turn(chat_session *cs, chat_job *j, int t, char *err, size_t errsz, chat_fail *f);

/* The template refused the conversation: which message it refuses, found by rendering the
 * turns up to each in turn (only on this error), named in the 400 with the template's reason. */
static void template_refusal(chat_session *cs, chat_job *j, const char *why, chat_fail *f) {
    char err[1024] = "";
    int at = -1;
    for (int n = 1; at < 0 && n <= j->n_turns; n++) {
        if (chat_session_restart(cs, &j->params, err, sizeof err)) break;
        int rc = 0;
        for (int t = 0; !rc && t < n; t++)
            rc = add_turn(cs, j, t, err, sizeof err, f);
        if (!rc && chat_session_check_render(cs, err, sizeof err) == CHAT_ERR_INPUT)
            at = j->turns[n - 1].msg;
    }
    if (at >= 0)
        chat_fail_set(f, 400, "invalid_request_error", "invalid_messages",
                      "messages[%d]: the model's chat template cannot render the conversation "
                      "up to this message: %s", at, why);
    else
        chat_fail_set(f, 400, "invalid_request_error", "invalid_messages",
                      "the model's chat template cannot render this conversation: %s", why);
    char e2[64];
    chat_session_restart(cs, &j->params, e2, sizeof e2); /* nothing of it stays planned */
}

static int replay(chat_wing *cw, chat_session *cs, chat_job *j, chat_usage *u, chat_fail *f) {
    char err[1024] = "";
    /* as parsed (chat_request.c), with the grammar chat_slots_precheck made before it waited */
    int rc = chat_session_restart(cs, &j->params, err, sizeof err);
    for (int t = 0; !rc && t < j->n_turns; t++)
        rc = add_turn(cs, j, t, err, sizeof err, f);
    if (rc < 0) return -1; /* out of memory, f filled */
    chat_feed_stats st;
    if (!rc) pcache_consult(cw, cs);
    if (!rc) rc = chat_session_feed(cs, &st, err, sizeof err);
    if (rc == CHAT_ERR_INPUT && strstr(err, "the chat template")) {
        template_refusal(cs, j, err, f);
        return -1;
    }
    if (rc) {
        session_fail(f, rc, err);
        return -1;
    }
    u->image_tokens = st.image_rows;
    u->prefill_s = st.prefill_s + st.encode_s;
    u->images_cached = st.images_cached;
    u->images_encoded = st.images_encoded;
    u->images_reused = st.images_reused;
    u->cached_tokens = st.reused_pos;
    u->prompt_tokens = chat_session_n_past(cs);
    if (j->debug_prompt &&
        chat_session_prompt(cs, &u->prompt_text, &u->prompt_ids, &u->n_prompt_ids)) {
        chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
        return -1;
    }
    return 0;
}

static int add_turn(chat_session *cs, chat_job *j, int t, char *err, size_t errsz, chat_fail *f) {
    chat_turn_in *ti = &j->turns[t];
    int rc;
    if (ti->role == CHAT_ROLE_SYSTEM)
        return chat_session_add_system(cs, ti->text, err, errsz);
    if (ti->role == CHAT_ROLE_ASSISTANT && ti->tool_calls)
        return chat_session_add_tool_calls(cs, ti->text, ti->reasoning, ti->tool_calls, err,
                                           errsz);
    if (ti->role == CHAT_ROLE_ASSISTANT)
        return chat_session_add_answer_thought(cs, ti->text, ti->reasoning, err, errsz);
    if (ti->role == CHAT_ROLE_TOOL)
        return chat_session_add_tool_result(cs, ti->tool_call_id, ti->text, err, errsz);
    chat_media *m = calloc((size_t)(ti->n_img ? ti->n_img : 1), sizeof *m);
    chat_part *p = calloc((size_t)(ti->n_parts ? ti->n_parts : 1), sizeof *p);
    if (!m || !p) {
        free(m);
        free(p);
        chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
        return -1;
    }
    for (int i = 0; i < ti->n_img; i++) { /* an image by URL: fetched now, once */
        chat_image *im = &ti->img[i];
        char why[400];
        if (im->url && !im->data &&
            chat_fetch_url(&j->s->a, im->url, &im->data, &im->size, why, sizeof why)) {
            chat_fail_set(f, 400, "invalid_request_error", "invalid_image_url",
                          "%s (%.200s): %s", im->name, im->url, why);
            free(m);
            free(p);
            return -1;
        }
    }
    for (int i = 0; i < ti->n_img; i++) {
        m[i].path = ti->img[i].path ? ti->img[i].path : ti->img[i].name;
        m[i].data = ti->img[i].data;
        m[i].size = ti->img[i].size;
        m[i].medium = ti->img[i].medium;
        m[i].budget = ti->img[i].budget;
    }
    for (int k = 0; k < ti->n_parts; k++) { /* the client's order, as the template renders */
        p[k].text = ti->parts[k].img < 0 ? ti->parts[k].text : NULL;
        p[k].media = ti->parts[k].img >= 0 ? &m[ti->parts[k].img] : NULL;
    }
    rc = chat_session_add_user_parts(cs, p, ti->n_parts, err, errsz);
    free(p);
    free(m);
    return rc;
}

/* The slot's sequence into the prompt cache (docs/PROMPT_CACHE.md). */
static void pcache_save(chat_wing *cw, chat_session *cs) {
    int n;
    const uint64_t *items = chat_session_items(cs, &n);
    if (!n) return;
    void *state;
    size_t size;
    char err[512];
    if (chat_session_state_save(cs, &state, &size, err, sizeof err)) {
        fprintf(stderr, "g4v serve: prompt cache: %s\n", err);
        return;
    }
    chat_pcache_put(cw->pc, items, n, state, size);
    free(state);
}

/* Before a slot feeds its plan: when the plan would drop most of what the slot holds (another
 * conversation takes it), that goes to the prompt cache first; when the cache holds a state that
 * shares more with the plan (by PCACHE_MIN_GAIN positions), it takes the slot's place. */
static void pcache_consult(chat_wing *cw, chat_session *cs) {
    if (!cw->pc) return;
    uint64_t *plan;
    int np, nh;
    if (chat_session_plan_items(cs, &plan, &np)) return;
    const uint64_t *held = chat_session_items(cs, &nh);
    int common = chat_items_common(plan, np, held, nh), common_pos = 0;
    for (int i = 0; i < common; i++)
        common_pos += chat_item_n_pos(held[i]);
    chat_pcache_hit hit;
    int found = chat_pcache_find(cw->pc, plan, np, common + 1, &hit) == 1;
    if (found && hit.n_common_pos < common_pos + PCACHE_MIN_GAIN) {
        chat_pcache_hit_free(&hit);
        found = 0;
    }
    int covered = found && chat_items_common(held, nh, hit.items, hit.n_items) == nh;
    if (nh && !covered && (found || 2 * common < nh)) pcache_save(cw, cs);
    if (found) {
        char err[512];
        if (chat_session_state_load(cs, hit.items, hit.n_items, hit.state, hit.size, err,
                                    sizeof err))
            fprintf(stderr, "g4v serve: prompt cache: %s; the prompt is decoded instead\n", err);
        chat_pcache_hit_free(&hit);
    }
    free(plan);
}

/* The prompt cache, keyed by what the slots' states depend on; NULL (no cache) when both tiers
 * are off or reuse is. 0, or a G4V_SERVICE_ERR_* printed. */
static int pcache_open(chat_wing *cw) {
    const g4v_service_options *a = &cw->s->a;
    uint64_t disk = a->cache ? a->prompt_cache_disk : 0;
    if (a->no_prompt_reuse || (!a->prompt_cache_ram && !disk)) return G4V_SERVICE_OK;
    char id[2048], err[512];
    if (chat_session_identity(cw->slots[0].cs, id, sizeof id, err, sizeof err)) {
        fprintf(stderr, "g4v serve: prompt cache: %s\n", err);
        return G4V_SERVICE_ERR_MODEL;
    }
    chat_pcache_options po;
    memset(&po, 0, sizeof po);
    po.ram_bytes = (size_t)a->prompt_cache_ram;
    po.dir = disk ? a->cache : NULL;
    po.disk_bytes = disk;
    const char *parts[] = {"g4v serve prompt states", id};
    chat_pcache_key(po.key, parts, 2);
    if (chat_pcache_open(&po, &cw->pc, err, sizeof err)) {
        fprintf(stderr, "g4v serve: prompt cache: %s\n", err);
        return G4V_SERVICE_ERR_LISTEN;
    }
    return G4V_SERVICE_OK;
}

/* The free slot the job goes to (chat_affinity.c); a worker always finds one: there are as many
 * slots as workers. */
static chat_slot *slot_take(chat_wing *cw, const chat_job *j) {
    server *s = cw->s;
    pthread_mutex_lock(&s->mu);
    int i = chat_affinity_pick(cw->slots, cw->n_slots, j);
    chat_slot *sl = i >= 0 ? &cw->slots[i] : NULL;
    if (sl) {
        sl->busy = 1;
        sl->last_used = ++cw->use_clock;
    }
    pthread_mutex_unlock(&s->mu);
    return sl;
}

/* What the slot's sequence holds now, for the next request's choice: the request's turns once
 * they were fed, and the answer when it was given whole. Under the server's mutex. */
static void slot_keys(chat_slot *sl, const chat_job *j, int fed, const char *answer, size_t n) {
    sl->n_keys = 0;
    if (!fed) return;
    memcpy(sl->keys, j->keys, (size_t)j->n_keys * sizeof *sl->keys);
    sl->n_keys = j->n_keys;
    if (answer && !j->prefill && j->keys_complete && j->n_keys > 0)
        sl->keys[sl->n_keys++] = chat_answer_key(j->keys[j->n_keys - 1], answer, n);
}

/* Counts the request for /metrics and frees its slot, before its answer is released. */
static void count(svc_worker *w, chat_slot *sl, const chat_job *j, int fed, const char *answer,
                  size_t answer_len, const chat_usage *u, const char *why, int ok) {
    chat_wing *cw = w->p->ctx;
    server *s = cw->s;
    pthread_mutex_lock(&s->mu);
    if (sl) {
        slot_keys(sl, j, fed, ok ? answer : NULL, answer_len);
        sl->busy = 0;
    }
    if (!ok) {
        cw->failed++;
    } else {
        cw->requests++;
        cw->prompt_tokens += (uint64_t)u->prompt_tokens;
        cw->gen_tokens += (uint64_t)u->completion_tokens;
        cw->prefill_s += u->prefill_s;
        cw->gen_s += u->generate_s;
        cw->images_encoded += (uint64_t)u->images_encoded;
        cw->images_cached += (uint64_t)u->images_cached;
        cw->images_reused += (uint64_t)u->images_reused;
        cw->cached_tokens += (uint64_t)u->cached_tokens;
        svc_hist_add(&cw->ttft, u->ttft_s);
    }
    if (why && !strcmp(why, "client_gone")) cw->cancelled++;
    if (why && !strcmp(why, "timeout")) cw->timeouts++;
    pthread_mutex_unlock(&s->mu);
    svc_worker_free(w); /* the session is done with: a client that sends its next request as
                           soon as it has this answer must find the slot free */
}

static void run(svc_worker *w, request *q, void *job) {
    (void)q; /* j->q until the job replies */
    chat_job *j = job;
    server *s = j->s;
    chat_wing *cw = w->p->ctx;
    chat_fail f;
    chat_usage u = {0};
    if (client_gone(j)) { /* hung up while waiting: nobody to answer */
        count(w, NULL, j, 0, NULL, 0, &u, "client_gone", 0);
        reply(j, 499, MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
        return;
    }
    double deadline = j->t0 + s->a.request_timeout_s;
    if (fe_now_s() > deadline) {
        chat_fail_set(&f, MHD_HTTP_SERVICE_UNAVAILABLE, "server_error", "timeout",
                      "waited more than --request-timeout %d s for a slot", s->a.request_timeout_s);
        count(w, NULL, j, 0, NULL, 0, &u, "timeout", 0);
        reply_fail(j, &f);
        return;
    }
    chat_slot *sl = slot_take(cw, j);
    if (!sl) {
        chat_fail_set(&f, 500, "server_error", "internal_error", "no free language-model slot");
        count(w, NULL, j, 0, NULL, 0, &u, NULL, 0);
        reply_fail(j, &f);
        return;
    }
    chat_session *cs = sl->cs;
    if (replay(cw, cs, j, &u, &f)) {
        count(w, sl, j, 0, NULL, 0, &u, NULL, 0);
        reply_fail(j, &f);
        return;
    }
    if (j->stream) {
        struct MHD_Response *r = chat_stream_response(j);
        if (!r) {
            chat_fail_set(&f, 500, "server_error", "out_of_memory", "out of memory");
            count(w, sl, j, 1, NULL, 0, &u, NULL, 0);
            reply_fail(j, &f);
            free(u.prompt_text);
            free(u.prompt_ids);
            return;
        }
        reply(j, MHD_HTTP_OK, r);
        out_role(j);
    }
    /* "n": choice 0, then each other one from the same prompt (chat_session_rewind: the answer
     * before it leaves the context, the prompt is not decoded again), each with its own sampler */
    gen gs[CHAT_MAX_N];
    const char *fin[CHAT_MAX_N] = {"length"};
    char *lps[CHAT_MAX_N];
    memset(gs, 0, sizeof gs);
    memset(lps, 0, sizeof lps);
    char err[1024] = "";
    int rc = 0, gone = 0, done = 0;
    double gen0 = fe_now_s();
    for (int k = 0; k < j->n_choices && !rc && !gone; k++, done++) {
        gen *g = &gs[k];
        *g = (gen){.j = j, .deadline = deadline, .cs = cs};
        if (j->tools) g->tools = fe_json_parse_text(j->tools, strlen(j->tools), NULL);
        for (int i = 0; i < j->n_stop; i++) /* the longest stop string, less one, is held back */
            if (strlen(j->stop[i]) - 1 > g->hold) g->hold = strlen(j->stop[i]) - 1;
        uint32_t seed = j->params.seed == 0xFFFFFFFFu ? 0xFFFFFFFFu : j->params.seed + (uint32_t)k;
        if (k && (rc = chat_session_rewind(cs, seed, err, sizeof err))) {
            session_fail(&f, rc, err);
            break;
        }
        j->choice = k;
        chat_turn_result r;
        memset(&r, 0, sizeof r);
        rc = chat_session_generate(cs, on_piece, g, &r, err, sizeof err);
        double end = fe_now_s();
        u.completion_tokens += r.n_generated;
        u.generate_s += r.generate_s;
        if (!k) { /* to the first token sampled, visible or not (a special token, a thought's
                     start): r.ttft_s counts from generate's start, encode and prefill being 0 */
            u.ttft_s = (r.n_generated ? gen0 + r.ttft_s : end) - j->t0;
            u.stop = g->why ? g->why : r.stop;
        }
        const char *stop = g->why ? g->why : r.stop;
        fin[k] = !strcmp(stop, "tool_calls") && g->n_calls                      ? "tool_calls"
                 : !strcmp(stop, "end_of_turn") || !strcmp(stop, "stop_string") ? "stop"
                                                                                 : "length";
        if (!rc && r.call_cut && r.tool_calls && !strcmp(fin[k], "length") &&
            (!g->why || !strcmp(g->why, "timeout")))
            cut_call(g, &r); /* as OpenAI returns it: partial arguments, finish_reason length */
        chat_turn_result_free(&r);
        gone = g->why && !strcmp(g->why, "client_gone");
        if (rc && !gone) session_fail(&f, rc, err);
        if (!rc && g->why && !strcmp(g->why, "invalid_tool_call")) {
            f = g->bad;
            rc = CHAT_ERR_INTERNAL;
        }
        if (rc || gone) break;
        if (j->params.logprobs && !j->stream) {
            int nl;
            chat_session_logprobs(cs, &nl);
            if (!(lps[k] = logprobs_json(cs, 0, nl))) lps[k] = strdup("[]");
        }
        if (j->stream) { /* this choice's rest, and its last chunk unless it is the last */
            out_reasoning(j, g->th + g->th_sent, g->th_len - g->th_sent);
            stream_text(g, g->text + g->sent, g->len - g->sent);
            g->sent = g->len;
            g->th_sent = g->th_len;
            if (k + 1 < j->n_choices) chat_stream_finish(j, fin[k]);
        }
    }
    gen *g = &gs[0];
    u.reasoning = g->th;
    u.reasoning_len = g->th_len;
    u.finish_reason = fin[0];
    u.calls = g->calls;
    u.n_calls = g->n_calls;
    u.logprobs = lps[0];
    chat_choice_out more[CHAT_MAX_N];
    for (int k = 1; k < done; k++)
        more[k - 1] = (chat_choice_out){gs[k].text, gs[k].len, gs[k].th, gs[k].th_len, gs[k].calls,
                                        gs[k].n_calls, fin[k], lps[k]};
    u.more = more;
    u.n_more = done > 1 ? done - 1 : 0;
    const char *why = gone ? "client_gone" : gs[done ? done - 1 : 0].why;
    /* the slot's keys take the answer only when the context holds choice 0's */
    count(w, sl, j, 1, done == 1 && g->text ? g->text : done == 1 ? "" : NULL, g->len, &u, why,
          !rc && !gone);
    if (j->stream) {
        if (gone || rc) {
            chat_stream_abort(j);
        } else {
            chat_usage ue = u;
            ue.finish_reason = fin[done - 1];
            out_end(j, &ue);
        }
    } else if (gone) {
        reply(j, 499, MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
    } else if (rc) {
        reply_fail(j, &f);
    } else {
        size_t len = 0;
        char *body = j->responses
                         ? chat_response_json(j, g->text ? g->text : "", g->len, &u, &len)
                         : chat_completion_json(j, g->text ? g->text : "", g->len, &u, &len);
        reply(j, MHD_HTTP_OK, body ? svc_buffer_response(body, len, "application/json") : NULL);
    }
    for (int k = 0; k < CHAT_MAX_N; k++) {
        free(gs[k].text);
        free(gs[k].th);
        for (int i = 0; i < gs[k].n_calls; i++) {
            free(gs[k].calls[i].name);
            free(gs[k].calls[i].arguments);
        }
        free(gs[k].calls);
        cJSON_Delete(gs[k].tools);
        free(lps[k]);
    }
    free(u.prompt_text);
    free(u.prompt_ids);
}

static int slot_open(void *ctx, int i, void **state) {
    chat_wing *cw = ctx;
    server *s = cw->s;
    const g4v_service_options *a = &s->a;
    char msg[1024];
    chat_options o;
    chat_options_init(&o);
    o.lm_path = a->lm;
    o.vision_path = a->model;
    o.vision_model = s->model;
    o.cache = cw->cache;
    o.n_ctx = a->lm_ctx;
    o.threads = cw->threads;
    o.vision = chat_vision_of(cw, i); /* the encode wing's contexts, not one of its own */
    o.engine = cw->engine;
    o.seq = i;
    o.budget = a->tokens;
    o.max_budget = LARGEST_BUDGET;
    o.math = a->math; /* the shared model's mode, which the session checks */
    o.no_prompt_reuse = a->no_prompt_reuse;
    o.chat_template = a->chat_template;
    chat_session *cs = NULL;
    int rc = chat_session_open(&o, &cs, msg, sizeof msg);
    if (rc) {
        fprintf(stderr, "g4v serve: --lm %s: %s\n", a->lm, msg);
        return rc == CHAT_ERR_USAGE ? G4V_SERVICE_ERR_USAGE
               : rc == CHAT_ERR_MODEL ? G4V_SERVICE_ERR_MODEL
                                      : G4V_SERVICE_ERR_INTERNAL;
    }
    pthread_mutex_lock(&s->mu);
    cw->slots[i].cs = cs;
    pthread_mutex_unlock(&s->mu);
    *state = &cw->slots[i];
    return 0;
}

static void slot_close(void *ctx, void *state) {
    chat_wing *cw = ctx;
    chat_slot *sl = state;
    if (cw->pc && cw->s->a.cache && sl->cs) pcache_save(cw, sl->cs); /* kept across the restart */
    pthread_mutex_lock(&cw->s->mu);
    chat_session *cs = sl->cs;
    sl->cs = NULL;
    pthread_mutex_unlock(&cw->s->mu);
    chat_session_close(cs);
}

/* The request's hold on the job, taken before a slot can see it; the queue keeps the
 * parser's (released after run). */
static void admitted(request *q, void *job) {
    chat_job *j = job;
    j->refs++;
    j->q = q;
}

static void release(void *job) { chat_job_unref(job); }

static enum MHD_Result refuse(request *q, void *job, int code, int busy, int queued, int limit) {
    chat_fail f;
    chat_job_unref(job);
    if (code == MHD_HTTP_SERVICE_UNAVAILABLE)
        chat_fail_set(&f, code, "server_error", "shutting_down", "the server is shutting down");
    else
        chat_fail_set(&f, code, "rate_limit_error", "queue_full",
                      "all %d slots are busy and %d requests are waiting (--max-queue %d); "
                      "retry later",
                      busy, queued, limit);
    return chat_answer_error(q, &f);
}

static const svc_kind chat_kind = {
    .name = "chat",
    .worker_name = "chat slot",
    .hold_until_completed = 1, /* a stream goes on after the slot is free */
    .worker_open = slot_open,
    .worker_close = slot_close,
    .admitted = admitted,
    .run = run,
    .release = release,
    .refuse = refuse,
};

int chat_slots_open(chat_wing *cw) {
    server *s = cw->s;
    const g4v_service_options *a = &s->a;
    char msg[1024];
    if (s->cache) {
        cw->cache = s->cache;
    } else {
        const char *where = NULL;
        if (fe_temp_dir(cw->cache_dir, sizeof cw->cache_dir, "g4v-serve", &where)) {
            fprintf(stderr, "g4v serve: cannot create a feature cache under %s\n", where);
            return G4V_SERVICE_ERR_LISTEN;
        }
        cw->cache_private = 1;
        if (g4v_cache_open(cw->cache_dir, NULL, &cw->cache, msg, sizeof msg)) {
            fprintf(stderr, "g4v serve: feature cache: %s\n", msg);
            return G4V_SERVICE_ERR_LISTEN;
        }
    }
    int threads = cw->threads = svc_threads_each(a->lm_threads, 1);
    cw->slots = calloc((size_t)a->lm_slots, sizeof *cw->slots);
    if (!cw->slots) return G4V_SERVICE_ERR_INTERNAL;
    cw->n_slots = a->lm_slots;
    double t0 = fe_now_s();
    chat_engine_options eo = {.lm_path = a->lm,
                              .n_seq = a->lm_slots,
                              .n_ctx_seq = a->lm_ctx,
                              .n_batch = LARGEST_BUDGET, /* a whole image of any budget */
                              .step_tokens = a->lm_step_tokens,
                              .one_per_step = a->lm_no_batching,
                              .threads = threads,
                              .verbose = 0,
                              .gate = &s->gate}; /* the CPU budget, shared with the encodes */
    int rc = chat_vision_open(cw);
    if (rc) return rc;
    if (chat_engine_open(&eo, &cw->engine, msg, sizeof msg)) {
        fprintf(stderr, "g4v serve: --lm %s: %s\n", a->lm, msg);
        return G4V_SERVICE_ERR_MODEL;
    }
    rc = svc_pool_start(s, &chat_kind, cw, a->lm_slots, a->max_queue, 1, &cw->pool);
    if (!rc) rc = pcache_open(cw);
    if (rc) return rc;
    chat_session_info info; /* what chat_slots_precheck checks requests against */
    chat_session_get_info(cw->slots[0].cs, &info);
    cw->lm = chat_session_llama_model(cw->slots[0].cs);
    cw->n_ctx = info.n_ctx;
    cw->builtin_template = info.builtin_template;
    snprintf(cw->template_origin, sizeof cw->template_origin, "%s", info.template_origin);
    fprintf(stderr,
            "g4v serve: chat model %s: %d slot%s on one context (%s), %d threads, %d context "
            "tokens each (%.2f s)\n",
            a->lm, cw->pool->n, cw->pool->n == 1 ? "" : "s",
            a->lm_no_batching ? "one slot per decode call" : "their steps decoded together",
            threads, a->lm_ctx, fe_now_s() - t0);
    return G4V_SERVICE_OK;
}

void chat_slots_close(chat_wing *cw) {
    free(cw->slots); /* the pool has stopped: every slot is closed, its state saved */
    cw->slots = NULL;
    chat_engine_close(cw->engine);
    cw->engine = NULL;
    chat_pcache_close(cw->pc); /* writes what waits for the disk */
    cw->pc = NULL;
    if (!cw->cache_private) return;
    g4v_cache_close(cw->cache);
    fe_temp_dir_remove(cw->cache_dir);
}

#endif
