/* chat_sse.c - the chat answer as clients expect it: one chat.completion JSON object, or
 * server-sent events (each `data: {chat.completion.chunk}` and a blank line; first the role,
 * then the content in pieces, then the finish reason, the usage when stream_options asks for it,
 * and `data: [DONE]`). JSON must be UTF-8 while tokens may end inside a character, so a stream
 * holds back an incomplete sequence until the next piece, and stray bytes become '?' (as
 * `g4v chat --json` prints them): the pieces joined equal the non-streamed content.
 *
 * The streaming response reads job->out: a slot's worker appends under job->mu; libmicrohttpd's
 * reader copies out what is there, and when nothing is, suspends the connection (returning 0,
 * as libmicrohttpd asks) until the worker appends and resumes it. A refusal is the OpenAI-style
 * error body {"error": {"message", "type", "param", "code"}}. */
#include "chat/chat_wing.h"
#include "frontend.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct MHD_Response *chat_error_response(const chat_fail *f) {
    cJSON *o = cJSON_CreateObject();
    cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
    char *text = NULL;
    if (e && cJSON_AddStringToObject(e, "message", f->msg) &&
        cJSON_AddStringToObject(e, "type", f->type) &&
        (f->param ? cJSON_AddStringToObject(e, "param", f->param) : cJSON_AddNullToObject(e, "param")) &&
        cJSON_AddStringToObject(e, "code", f->code))
        text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return NULL;
    fe_utf8_sanitize(text); /* the message may quote the client's bytes */
    return svc_buffer_response(text, strlen(text), "application/json");
}

enum MHD_Result chat_answer_error(request *q, const chat_fail *f) {
    return svc_answer(q, f->http, chat_error_response(f));
}

size_t chat_utf8_safe_len(const char *text, size_t n) {
    /* the last lead byte among the final 3 bytes, if its sequence is not complete yet */
    for (size_t k = 1; k <= 3 && k <= n; k++) {
        unsigned char c = (unsigned char)text[n - k];
        if ((c & 0xC0) == 0x80) continue; /* a continuation byte: look further back */
        size_t need = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 && c < 0xF0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 1;
        return need > k ? n - k : n;
    }
    return n;
}

static void add_usage(cJSON *o, const chat_usage *u) {
    cJSON *us = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(us, "prompt_tokens", u->prompt_tokens);
    cJSON_AddNumberToObject(us, "completion_tokens", u->completion_tokens);
    cJSON_AddNumberToObject(us, "total_tokens", u->prompt_tokens + u->completion_tokens);
    cJSON *d = cJSON_AddObjectToObject(us, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", u->cached_tokens);
    cJSON_AddNumberToObject(d, "image_tokens", u->image_tokens);
    /* ours: what the images cost and where the time went */
    cJSON *g = cJSON_AddObjectToObject(o, "g4v");
    cJSON_AddNumberToObject(g, "image_tokens", u->image_tokens);
    cJSON_AddNumberToObject(g, "images_encoded", u->images_encoded);
    cJSON_AddNumberToObject(g, "images_cached", u->images_cached);
    cJSON_AddNumberToObject(g, "images_reused", u->images_reused);
    cJSON_AddNumberToObject(g, "cached_tokens", u->cached_tokens);
    cJSON_AddStringToObject(g, "stop", u->stop);
    cJSON_AddNumberToObject(g, "time_to_first_token_s", u->ttft_s);
    cJSON_AddNumberToObject(g, "prefill_s", u->prefill_s);
    cJSON_AddNumberToObject(g, "generate_s", u->generate_s);
    if (u->prompt_text) { /* "g4v": {"debug_prompt": true} */
        cJSON *p = cJSON_AddObjectToObject(g, "prompt");
        char *t = fe_utf8_copy(u->prompt_text, strlen(u->prompt_text));
        cJSON *ids = cJSON_AddArrayToObject(p, "ids");
        cJSON_AddStringToObject(p, "text", t ? t : "");
        for (int i = 0; ids && i < u->n_prompt_ids; i++)
            cJSON_AddItemToArray(ids, cJSON_CreateNumber(u->prompt_ids[i]));
        free(t);
    }
}

static cJSON *envelope(const chat_job *j, const char *object) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "id", j->id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)j->created);
    cJSON_AddStringToObject(o, "model", chat_model_id(j->s));
    return o;
}

/* A tool call as message.tool_calls[] (index < 0) or delta.tool_calls[] (with its index) hold
 * it: {index?, id, type, function: {name, arguments}}, arguments a JSON object's text. */
static cJSON *call_json(const chat_call_out *c, int index) {
    cJSON *x = cJSON_CreateObject(), *fn = x ? cJSON_CreateObject() : NULL;
    if (!fn || (index >= 0 && !cJSON_AddNumberToObject(x, "index", index)) ||
        !cJSON_AddStringToObject(x, "id", c->id) || !cJSON_AddStringToObject(x, "type", "function") ||
        !cJSON_AddItemToObject(x, "function", fn)) {
        cJSON_Delete(fn);
        cJSON_Delete(x);
        return NULL;
    }
    if (!cJSON_AddStringToObject(fn, "name", c->name) ||
        !cJSON_AddStringToObject(fn, "arguments", c->arguments)) {
        cJSON_Delete(x);
        return NULL;
    }
    return x;
}

/* One choice of a chat.completion: index, message (content, tool_calls, reasoning_content),
 * logprobs, finish_reason. */
static cJSON *choice_json(int index, const char *text, size_t n, const char *reasoning,
                          size_t reasoning_len, const chat_call_out *calls, int n_calls,
                          const char *logprobs, const char *finish) {
    char *t = fe_utf8_copy(text, n);
    cJSON *c = t ? cJSON_CreateObject() : NULL;
    if (!c) {
        free(t);
        return NULL;
    }
    cJSON_AddNumberToObject(c, "index", index);
    cJSON *m = cJSON_AddObjectToObject(c, "message");
    cJSON_AddStringToObject(m, "role", "assistant");
    if (n_calls && !t[0]) /* an answer that only calls tools: content null, as OpenAI's */
        cJSON_AddNullToObject(m, "content");
    else
        cJSON_AddStringToObject(m, "content", t);
    free(t);
    if (n_calls) {
        cJSON *tc = cJSON_AddArrayToObject(m, "tool_calls");
        for (int i = 0; tc && i < n_calls; i++) {
            cJSON *x = call_json(&calls[i], -1);
            if (x) cJSON_AddItemToArray(tc, x);
        }
    }
    if (reasoning) { /* as llama-server and vLLM return a thought */
        char *r = fe_utf8_copy(reasoning, reasoning_len);
        cJSON_AddStringToObject(m, "reasoning_content", r ? r : "");
        free(r);
    }
    cJSON *lp = logprobs ? fe_json_parse_text(logprobs, strlen(logprobs), NULL) : NULL;
    if (lp) {
        cJSON *l = cJSON_AddObjectToObject(c, "logprobs");
        cJSON_AddItemToObject(l, "content", lp);
        cJSON_AddNullToObject(l, "refusal");
    } else {
        cJSON_AddNullToObject(c, "logprobs");
    }
    cJSON_AddStringToObject(c, "finish_reason", finish);
    return c;
}

char *chat_completion_json(const chat_job *j, const char *text, size_t n, const chat_usage *u,
                           size_t *len) {
    cJSON *o = envelope(j, "chat.completion");
    char *out = NULL;
    cJSON *ch = o ? cJSON_AddArrayToObject(o, "choices") : NULL;
    cJSON *c = ch ? choice_json(0, text, n, u->reasoning, u->reasoning_len, u->calls, u->n_calls,
                                u->logprobs, u->finish_reason)
                  : NULL;
    if (!c) goto done;
    cJSON_AddItemToArray(ch, c);
    for (int i = 0; i < u->n_more; i++) { /* "n": the other choices */
        const chat_choice_out *x = &u->more[i];
        cJSON *y = choice_json(i + 1, x->text ? x->text : "", x->len, x->reasoning,
                               x->reasoning_len, x->calls, x->n_calls, x->logprobs,
                               x->finish_reason);
        if (!y) goto done;
        cJSON_AddItemToArray(ch, y);
    }
    add_usage(o, u);
    out = cJSON_PrintUnformatted(o);
    if (out) *len = strlen(out);
done:
    cJSON_Delete(o);
    return out;
}

/* Appends "[event: TYPE\n]data: TEXT\n\n" and wakes the reader. -1 when the client is gone. */
static int push_typed(chat_job *j, const char *type, const char *text) {
    size_t n = strlen(text) + 9 + (type ? strlen(type) + 8 : 0); /* and snprintf's NUL */
    pthread_mutex_lock(&j->mu);
    if (j->gone) {
        pthread_mutex_unlock(&j->mu);
        return -1;
    }
    if (j->out_len + n > j->out_cap) {
        size_t cap = j->out_cap ? j->out_cap : 4096;
        while (cap < j->out_len + n)
            cap *= 2;
        char *b = realloc(j->out, cap);
        if (!b) {
            pthread_mutex_unlock(&j->mu);
            return -1;
        }
        j->out = b;
        j->out_cap = cap;
    }
    int k = type ? snprintf(j->out + j->out_len, n, "event: %s\ndata: %s\n\n", type, text)
                 : snprintf(j->out + j->out_len, n, "data: %s\n\n", text);
    j->out_len += (size_t)k;
    if (j->suspended) {
        j->suspended = 0;
        MHD_resume_connection(j->conn);
    }
    pthread_mutex_unlock(&j->mu);
    return 0;
}

static int push(chat_job *j, const char *text) { return push_typed(j, NULL, text); }

int chat_stream_push_event(chat_job *j, const char *type, const char *json) {
    return push_typed(j, type, json);
}

/* The end of a stream: no more bytes come. */
static void stream_done(chat_job *j) {
    pthread_mutex_lock(&j->mu);
    j->out_done = 1;
    if (j->suspended) {
        j->suspended = 0;
        MHD_resume_connection(j->conn);
    }
    pthread_mutex_unlock(&j->mu);
}

static int push_chunk(chat_job *j, const char *role, const char *field, const char *content,
                      size_t n, const char *finish, const char *lp) {
    cJSON *o = envelope(j, "chat.completion.chunk");
    char *t = content ? fe_utf8_copy(content, n) : NULL, *s = NULL;
    int rc = -1;
    if (!o || (content && !t)) goto done;
    cJSON *ch = cJSON_AddArrayToObject(o, "choices");
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(ch, c);
    cJSON_AddNumberToObject(c, "index", j->choice);
    cJSON *d = cJSON_AddObjectToObject(c, "delta");
    if (role) cJSON_AddStringToObject(d, "role", role);
    if (t) cJSON_AddStringToObject(d, field, t);
    cJSON *lpa = lp ? fe_json_parse_text(lp, strlen(lp), NULL) : NULL;
    if (lpa) {
        cJSON *l = cJSON_AddObjectToObject(c, "logprobs");
        cJSON_AddItemToObject(l, "content", lpa);
        cJSON_AddNullToObject(l, "refusal");
    }
    if (finish)
        cJSON_AddStringToObject(c, "finish_reason", finish);
    else
        cJSON_AddNullToObject(c, "finish_reason");
    if ((s = cJSON_PrintUnformatted(o))) rc = push(j, s);
done:
    cJSON_free(s);
    free(t);
    cJSON_Delete(o);
    return rc;
}

int chat_stream_role(chat_job *j) {
    return push_chunk(j, "assistant", "content", "", 0, NULL, NULL);
}

int chat_stream_text(chat_job *j, const char *text, size_t n) {
    return n ? push_chunk(j, NULL, "content", text, n, NULL, NULL) : 0;
}

int chat_stream_text_lp(chat_job *j, const char *text, size_t n, const char *lp) {
    return n || lp ? push_chunk(j, NULL, "content", text, n, NULL, lp) : 0;
}

int chat_stream_reasoning(chat_job *j, const char *text, size_t n) {
    return n ? push_chunk(j, NULL, "reasoning_content", text, n, NULL, NULL) : 0;
}

int chat_stream_tool_call(chat_job *j, int index, const chat_call_out *c) {
    /* the whole call in one delta: its arguments are known once the call is complete (a client
     * joins argument pieces; one piece is the simplest case of that) */
    cJSON *o = envelope(j, "chat.completion.chunk");
    cJSON *ch = o ? cJSON_AddArrayToObject(o, "choices") : NULL;
    cJSON *c0 = ch ? cJSON_CreateObject() : NULL;
    char *s = NULL;
    if (c0 && !cJSON_AddItemToArray(ch, c0)) {
        cJSON_Delete(c0);
        c0 = NULL;
    }
    cJSON *d = c0 && cJSON_AddNumberToObject(c0, "index", j->choice)
                   ? cJSON_AddObjectToObject(c0, "delta")
                                                              : NULL;
    cJSON *tc = d ? cJSON_AddArrayToObject(d, "tool_calls") : NULL;
    cJSON *x = tc ? call_json(c, index) : NULL;
    if (x && !cJSON_AddItemToArray(tc, x)) {
        cJSON_Delete(x);
        x = NULL;
    }
    if (x && cJSON_AddNullToObject(c0, "finish_reason")) s = cJSON_PrintUnformatted(o);
    int rc = s ? push(j, s) : -1;
    cJSON_free(s);
    cJSON_Delete(o);
    return rc;
}

int chat_stream_finish(chat_job *j, const char *finish_reason) {
    return push_chunk(j, NULL, NULL, NULL, 0, finish_reason, NULL);
}

void chat_stream_close(chat_job *j) { stream_done(j); }

int chat_stream_end(chat_job *j, const chat_usage *u) {
    if (push_chunk(j, NULL, NULL, NULL, 0, u->finish_reason, NULL)) return -1;
    if (j->include_usage) {
        cJSON *o = envelope(j, "chat.completion.chunk");
        char *s = NULL;
        if (o) {
            cJSON_AddArrayToObject(o, "choices");
            add_usage(o, u);
            s = cJSON_PrintUnformatted(o);
        }
        int rc = s ? push(j, s) : -1;
        cJSON_free(s);
        cJSON_Delete(o);
        if (rc) return -1;
    }
    if (push(j, "[DONE]")) return -1;
    stream_done(j);
    return 0;
}

void chat_stream_abort(chat_job *j) {
    pthread_mutex_lock(&j->mu);
    j->out_done = j->out_error = 1;
    if (j->suspended) {
        j->suspended = 0;
        MHD_resume_connection(j->conn);
    }
    pthread_mutex_unlock(&j->mu);
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    chat_job *j = cls;
    pthread_mutex_lock(&j->mu);
    ssize_t r;
    if (j->out_sent < j->out_len) {
        size_t n = j->out_len - j->out_sent;
        if (n > max) n = max;
        memcpy(buf, j->out + j->out_sent, n);
        j->out_sent += n;
        r = (ssize_t)n;
    } else if (j->out_done) {
        r = j->out_error ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
    } else { /* nothing yet: wait, suspended, for the worker's next piece */
        j->suspended = 1;
        MHD_suspend_connection(j->conn);
        r = 0;
    }
    pthread_mutex_unlock(&j->mu);
    return r;
}

static void reader_free(void *cls) { chat_job_unref(cls); }

struct MHD_Response *chat_stream_response(chat_job *j) {
    pthread_mutex_lock(&j->mu);
    j->refs++;
    pthread_mutex_unlock(&j->mu);
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, j, reader_free);
    if (!r) {
        chat_job_unref(j);
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    return r;
}
