/* chat_generate.c - the answer to a chat request generated on its slot's session: each piece
 * as the model samples it (kept; checked against the stop strings, the deadline and a hang-up;
 * a tool call parsed and checked against its declared parameters; streamed as far as it can no
 * longer become a stop string nor split a character, with its logprobs), in the request's API
 * (chat.completion.chunk events or the Responses API's), for each of the request's "n" choices;
 * and what they came to, for the answer and /metrics. */
#define _GNU_SOURCE /* POLLRDHUP, memmem */
#ifdef G4V_HAVE_LLAMA

#include "chat_grammar.h"
#include "chat_slots_impl.h"
#include "chat_tool_call.h"
#include "frontend.h"
#include "llama.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The client hung up: libmicrohttpd completed the request, or the socket says so. */
int chat_client_gone(chat_job *j) {
    pthread_mutex_lock(&j->mu);
    int gone = j->gone;
    if (!gone && j->fd >= 0) { /* under j->mu: the request cannot complete, the fd stays ours */
        struct pollfd p = {.fd = j->fd, .events = POLLRDHUP};
        gone = poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
    }
    pthread_mutex_unlock(&j->mu);
    return gone;
}

/* The stream's pieces in the request's API: chat.completion.chunk events, or the Responses
 * API's typed events (chat_responses.c; a thought is not streamed there, it comes in the final
 * response). */
int chat_out_role(chat_job *j) {
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
int chat_out_end(chat_job *j, const chat_usage *u) {
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

/* *buf at least `need` bytes (doubling from 1 KiB, so a long answer costs log n reallocs); 0, or
 * -1 out of memory with *buf as it was. */
static int grow_text(char **buf, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 1024;
    while (c < need)
        c *= 2;
    char *t = realloc(*buf, c);
    if (!t) return -1;
    *buf = t;
    *cap = c;
    return 0;
}

/* A piece of the thought: kept, and streamed as far as it ends on a whole character. Stop
 * strings are looked for in the answer only. */
static int on_thought(gen *g, const char *p, size_t n) {
    chat_job *j = g->j;
    if (grow_text(&g->th, &g->th_cap, g->th_len + n + 1)) {
        g->why = "out_of_memory";
        return 1;
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

static int on_piece(const char *p, size_t n, chat_emit_kind kind, void *user) {
    gen *g = user;
    chat_job *j = g->j;
    if (kind == CHAT_EMIT_TOOL_CALL) {
        if (on_tool_call(g, p, n)) return 1;
        kind = CHAT_EMIT_ANSWER;
        n = 0; /* the checks below still run */
    }
    if (kind == CHAT_EMIT_THOUGHT) {
        if (on_thought(g, p, n)) return 1;
        n = 0; /* the checks below still run: a hang-up, the deadline */
    }
    if (grow_text(&g->text, &g->cap, g->len + n + 1)) {
        g->why = "out_of_memory";
        return 1;
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
    if (chat_client_gone(j)) {
        g->why = "client_gone";
        return 1;
    }
    if (fe_now_s() > g->deadline) {
        g->why = "timeout";
        return 1;
    }
    return 0;
}

/* What the choices came to, as the answer gives them: choice 0's in u, the others' in
 * a->more. */
static void answers_usage(chat_answers *a, chat_usage *u) {
    const gen *g = &a->gs[0];
    u->reasoning = g->th;
    u->reasoning_len = g->th_len;
    u->finish_reason = a->fin[0];
    u->calls = g->calls;
    u->n_calls = g->n_calls;
    u->logprobs = a->lps[0];
    for (int k = 1; k < a->done; k++)
        a->more[k - 1] = (chat_choice_out){a->gs[k].text, a->gs[k].len, a->gs[k].th,
                                           a->gs[k].th_len, a->gs[k].calls, a->gs[k].n_calls,
                                           a->fin[k], a->lps[k]};
    u->more = a->more;
    u->n_more = a->done > 1 ? a->done - 1 : 0;
}

void chat_generate(chat_job *j, chat_session *cs, double deadline, chat_answers *a,
                   chat_usage *u) {
    /* "n": choice 0, then each other one from the same prompt (chat_session_rewind: the answer
     * before it leaves the context, the prompt is not decoded again), each with its own sampler */
    memset(a, 0, sizeof *a);
    gen *gs = a->gs;
    const char **fin = a->fin;
    char **lps = a->lps;
    fin[0] = "length";
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
            chat_fail_session(&a->f, rc, err);
            break;
        }
        j->choice = k;
        chat_turn_result r;
        memset(&r, 0, sizeof r);
        rc = chat_session_generate(cs, on_piece, g, &r, err, sizeof err);
        double end = fe_now_s();
        u->completion_tokens += r.n_generated;
        u->generate_s += r.generate_s;
        if (!k) { /* to the first token sampled, visible or not (a special token, a thought's
                     start): r.ttft_s counts from generate's start, encode and prefill being 0 */
            u->ttft_s = (r.n_generated ? gen0 + r.ttft_s : end) - j->t0;
            u->stop = g->why ? g->why : r.stop;
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
        if (rc && !gone) chat_fail_session(&a->f, rc, err);
        if (!rc && g->why && !strcmp(g->why, "invalid_tool_call")) {
            a->f = g->bad;
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
    a->rc = rc;
    a->gone = gone;
    a->done = done;
    answers_usage(a, u);
}

void chat_answers_free(chat_answers *a) {
    for (int k = 0; k < CHAT_MAX_N; k++) {
        free(a->gs[k].text);
        free(a->gs[k].th);
        for (int i = 0; i < a->gs[k].n_calls; i++) {
            free(a->gs[k].calls[i].name);
            free(a->gs[k].calls[i].arguments);
        }
        free(a->gs[k].calls);
        cJSON_Delete(a->gs[k].tools);
        free(a->lps[k]);
    }
}

#endif
