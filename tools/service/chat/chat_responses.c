/* chat_responses.c - OpenAI's Responses API over the chat wing (docs/CHAT_API.md §8): POST
 * /v1/responses's body translated into a chat.completions body (instructions -> a system message,
 * input text or items -> messages, input_image parts -> image_url parts, function_call and
 * function_call_output items -> an assistant message's tool_calls and tool messages, function
 * tools -> chat tools, text.format -> response_format, max_output_tokens -> max_tokens), which
 * chat_request.c then parses as any chat request; and the answer written back as a response
 * object, or as the typed response.* server-sent events (response.created ... response.completed).
 * Stateless like the chat API: previous_response_id, conversation and background are refused. */
#include "chat/chat_wing.h"
#include "frontend.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BAD(...) chat_fail_set(f, 400, "invalid_request_error", __VA_ARGS__)

static const char *const served[] = {
    "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "text",
    "max_output_tokens", "temperature", "top_p", "stream", "reasoning", "g4v", "logit_bias",
    /* accepted, not used: they do not change the answer */
    "metadata", "user", "store", "service_tier", "safety_identifier", "prompt_cache_key",
    "truncation", "include", "stream_options", NULL};

/* One content part of an input message into a chat part (appended to parts). 0 or -1. */
static int take_part(const cJSON *p, int mi, int pi, cJSON *parts, chat_fail *f) {
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(p, "type");
    const char *t = cJSON_IsString(ty) ? ty->valuestring : "";
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(parts, o);
    if (!strcmp(t, "input_text") || !strcmp(t, "output_text") || !strcmp(t, "text")) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(p, "text");
        if (!cJSON_IsString(x)) {
            BAD("invalid_content", "input[%d].content[%d]: a text part needs \"text\"", mi, pi);
            return -1;
        }
        cJSON_AddStringToObject(o, "type", "text");
        cJSON_AddStringToObject(o, "text", x->valuestring);
        return 0;
    }
    if (!strcmp(t, "input_image")) {
        const cJSON *u = cJSON_GetObjectItemCaseSensitive(p, "image_url");
        if (!cJSON_IsString(u)) {
            BAD("invalid_image_url", "input[%d].content[%d]: an input_image needs \"image_url\" (a "
                "data: URI or, with --allow-image-urls, a URL; file_id is not served)", mi, pi);
            return -1;
        }
        cJSON_AddStringToObject(o, "type", "image_url");
        cJSON *iu = cJSON_AddObjectToObject(o, "image_url");
        cJSON_AddStringToObject(iu, "url", u->valuestring);
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(p, "g4v");
        if (g) cJSON_AddItemToObject(o, "g4v", cJSON_Duplicate(g, 1));
        return 0;
    }
    BAD("invalid_content", "input[%d].content[%d]: the part type '%.40s' is not served "
        "(input_text, input_image)", mi, pi, t);
    return -1;
}

/* The input items into messages. 0 or -1. */
static int take_input(const cJSON *in, cJSON *msgs, chat_fail *f) {
    if (cJSON_IsString(in)) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddItemToArray(msgs, m);
        cJSON_AddStringToObject(m, "role", "user");
        cJSON_AddStringToObject(m, "content", in->valuestring);
        return 0;
    }
    if (!cJSON_IsArray(in)) {
        BAD("invalid_messages", "\"input\" must be a string or an array of items");
        return -1;
    }
    cJSON *calls = NULL; /* the assistant message consecutive function_call items join */
    int mi = 0;
    for (const cJSON *it = in->child; it; it = it->next, mi++) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(it, "type");
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(it, "role");
        const char *t = cJSON_IsString(ty) ? ty->valuestring : role ? "message" : "";
        if (!strcmp(t, "function_call")) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "call_id");
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
            const cJSON *ar = cJSON_GetObjectItemCaseSensitive(it, "arguments");
            if (!cJSON_IsString(id) || !cJSON_IsString(nm)) {
                BAD("invalid_tool_calls", "input[%d]: a function_call needs \"call_id\" and "
                    "\"name\"", mi);
                return -1;
            }
            if (!calls) {
                cJSON *m = cJSON_CreateObject();
                cJSON_AddItemToArray(msgs, m);
                cJSON_AddStringToObject(m, "role", "assistant");
                cJSON_AddNullToObject(m, "content");
                calls = cJSON_AddArrayToObject(m, "tool_calls");
            }
            cJSON *c = cJSON_CreateObject();
            cJSON_AddItemToArray(calls, c);
            cJSON_AddStringToObject(c, "id", id->valuestring);
            cJSON_AddStringToObject(c, "type", "function");
            cJSON *fn = cJSON_AddObjectToObject(c, "function");
            cJSON_AddStringToObject(fn, "name", nm->valuestring);
            cJSON_AddStringToObject(fn, "arguments", cJSON_IsString(ar) ? ar->valuestring : "{}");
            continue;
        }
        calls = NULL;
        if (!strcmp(t, "function_call_output")) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "call_id");
            const cJSON *out = cJSON_GetObjectItemCaseSensitive(it, "output");
            if (!cJSON_IsString(id) || !cJSON_IsString(out)) {
                BAD("invalid_messages", "input[%d]: a function_call_output needs \"call_id\" and "
                    "\"output\" (text)", mi);
                return -1;
            }
            cJSON *m = cJSON_CreateObject();
            cJSON_AddItemToArray(msgs, m);
            cJSON_AddStringToObject(m, "role", "tool");
            cJSON_AddStringToObject(m, "tool_call_id", id->valuestring);
            cJSON_AddStringToObject(m, "content", out->valuestring);
            continue;
        }
        if (!strcmp(t, "reasoning")) continue; /* an earlier thought: Gemma 4's template does not
                                                  render one before a later user turn */
        if (strcmp(t, "message")) {
            BAD("invalid_messages", "input[%d]: the item type '%.40s' is not served (message, "
                "function_call, function_call_output, reasoning)", mi, t);
            return -1;
        }
        const char *r = cJSON_IsString(role) ? role->valuestring : "";
        if (strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "system") &&
            strcmp(r, "developer")) {
            BAD("invalid_messages", "input[%d]: role '%.40s' is not served (user, assistant, "
                "system, developer)", mi, r);
            return -1;
        }
        cJSON *m = cJSON_CreateObject();
        cJSON_AddItemToArray(msgs, m);
        cJSON_AddStringToObject(m, "role", r);
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (cJSON_IsString(c)) {
            cJSON_AddStringToObject(m, "content", c->valuestring);
            continue;
        }
        if (!cJSON_IsArray(c)) {
            BAD("invalid_content", "input[%d].content: a string or an array of parts", mi);
            return -1;
        }
        cJSON *parts = cJSON_AddArrayToObject(m, "content");
        int pi = 0;
        for (const cJSON *p = c->child; p; p = p->next, pi++)
            if (take_part(p, mi, pi, parts, f)) return -1;
    }
    return 0;
}

/* tools: function tools, flat ({"type": "function", "name", "description", "parameters"}). */
static int take_tools(const cJSON *tools, cJSON *out, chat_fail *f) {
    if (!tools || cJSON_IsNull(tools)) return 0;
    if (!cJSON_IsArray(tools)) {
        BAD("invalid_tools", "\"tools\" must be an array of function tools");
        return -1;
    }
    cJSON *a = cJSON_AddArrayToObject(out, "tools");
    int k = 0;
    for (const cJSON *t = tools->child; t; t = t->next, k++) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(t, "type");
        if (!cJSON_IsString(ty) || strcmp(ty->valuestring, "function")) {
            BAD("invalid_tools", "tools[%d]: only function tools are served, not '%.40s'", k,
                cJSON_IsString(ty) ? ty->valuestring : "");
            return -1;
        }
        cJSON *x = cJSON_CreateObject(), *fn = cJSON_CreateObject();
        cJSON_AddItemToArray(a, x);
        cJSON_AddStringToObject(x, "type", "function");
        cJSON_AddItemToObject(x, "function", fn);
        static const char *const keys[] = {"name", "description", "parameters", "strict"};
        for (int i = 0; i < 4; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, keys[i]);
            if (v && !cJSON_IsNull(v)) cJSON_AddItemToObject(fn, keys[i], cJSON_Duplicate(v, 1));
        }
    }
    return 0;
}

char *chat_responses_translate(const char *body, size_t len, char **echo, chat_fail *f) {
    *echo = NULL;
    cJSON *o = fe_json_parse_text(body, len, NULL);
    cJSON *c = cJSON_CreateObject();
    char *out = NULL;
    if (!cJSON_IsObject(o)) {
        BAD("invalid_json", "the body is not a JSON object");
        goto done;
    }
    char names[300] = "";
    size_t at = 0;
    for (const cJSON *x = o->child; x; x = x->next) {
        int known = 0;
        for (int i = 0; served[i] && !known; i++) known = !strcmp(x->string, served[i]);
        if (!known && at < sizeof names - 80)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s\"%.64s\"", at ? ", " : "",
                                   x->string);
    }
    if (at) {
        BAD("unsupported_parameter", "%s: not supported by this server's Responses API (stateless: "
            "previous_response_id, conversation and background are not served; docs/CHAT_API.md "
            "§8)", names);
        goto done;
    }
    cJSON *msgs = cJSON_AddArrayToObject(c, "messages");
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(o, "instructions");
    if (cJSON_IsString(ins)) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddItemToArray(msgs, m);
        cJSON_AddStringToObject(m, "role", "system");
        cJSON_AddStringToObject(m, "content", ins->valuestring);
    }
    if (take_input(cJSON_GetObjectItemCaseSensitive(o, "input"), msgs, f) ||
        take_tools(cJSON_GetObjectItemCaseSensitive(o, "tools"), c, f))
        goto done;
    static const char *const same[] = {"model", "temperature", "top_p", "stream",
                                       "parallel_tool_calls", "g4v", "logit_bias", NULL};
    for (int i = 0; same[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, same[i]);
        if (v) cJSON_AddItemToObject(c, same[i], cJSON_Duplicate(v, 1));
    }
    const cJSON *mot = cJSON_GetObjectItemCaseSensitive(o, "max_output_tokens");
    if (mot && !cJSON_IsNull(mot)) cJSON_AddItemToObject(c, "max_tokens", cJSON_Duplicate(mot, 1));
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(o, "tool_choice");
    if (cJSON_IsObject(tc)) { /* {"type": "function", "name"} */
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(tc, "name");
        cJSON *x = cJSON_AddObjectToObject(c, "tool_choice");
        cJSON_AddStringToObject(x, "type", "function");
        cJSON *fn = cJSON_AddObjectToObject(x, "function");
        cJSON_AddStringToObject(fn, "name", cJSON_IsString(nm) ? nm->valuestring : "");
    } else if (tc) {
        cJSON_AddItemToObject(c, "tool_choice", cJSON_Duplicate(tc, 1));
    }
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(o, "reasoning");
    const cJSON *ef = cJSON_GetObjectItemCaseSensitive(rs, "effort");
    if (cJSON_IsString(ef)) cJSON_AddStringToObject(c, "reasoning_effort", ef->valuestring);
    const cJSON *fm = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "text"),
                                                       "format");
    const cJSON *fty = cJSON_GetObjectItemCaseSensitive(fm, "type");
    if (cJSON_IsString(fty) && !strcmp(fty->valuestring, "json_schema")) {
        cJSON *rf = cJSON_AddObjectToObject(c, "response_format");
        cJSON_AddStringToObject(rf, "type", "json_schema");
        cJSON *js = cJSON_AddObjectToObject(rf, "json_schema");
        const cJSON *sc = cJSON_GetObjectItemCaseSensitive(fm, "schema");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(fm, "name");
        if (cJSON_IsString(nm)) cJSON_AddStringToObject(js, "name", nm->valuestring);
        if (sc) cJSON_AddItemToObject(js, "schema", cJSON_Duplicate(sc, 1));
    } else if (cJSON_IsString(fty) && !strcmp(fty->valuestring, "json_object")) {
        cJSON *rf = cJSON_AddObjectToObject(c, "response_format");
        cJSON_AddStringToObject(rf, "type", "json_object");
    } else if (fm && !(cJSON_IsString(fty) && !strcmp(fty->valuestring, "text"))) {
        BAD("invalid_response_format", "\"text\": {\"format\": {\"type\": \"text\"}}, "
            "{\"type\": \"json_object\"} or {\"type\": \"json_schema\", \"name\", \"schema\"}");
        goto done;
    }
    /* what the response object repeats of the request */
    cJSON *e = cJSON_CreateObject();
    static const char *const echoed[] = {"instructions", "tools", "tool_choice", "text",
                                         "max_output_tokens", "temperature", "top_p",
                                         "parallel_tool_calls", "metadata", "reasoning", NULL};
    for (int i = 0; e && echoed[i]; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, echoed[i]);
        if (v) cJSON_AddItemToObject(e, echoed[i], cJSON_Duplicate(v, 1));
    }
    *echo = e ? cJSON_PrintUnformatted(e) : NULL;
    cJSON_Delete(e);
    out = cJSON_PrintUnformatted(c);
    if (!out || !*echo) {
        chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
        free(out);
        free(*echo);
        out = *echo = NULL;
    }
done:
    cJSON_Delete(o);
    cJSON_Delete(c);
    return out;
}

/* ---- the answer ----------------------------------------------------------------------------- */

static void usage_json(cJSON *r, const chat_usage *u) {
    cJSON *us = cJSON_AddObjectToObject(r, "usage");
    cJSON_AddNumberToObject(us, "input_tokens", u->prompt_tokens);
    cJSON *d = cJSON_AddObjectToObject(us, "input_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", u->cached_tokens);
    cJSON_AddNumberToObject(us, "output_tokens", u->completion_tokens);
    cJSON *od = cJSON_AddObjectToObject(us, "output_tokens_details");
    cJSON_AddNumberToObject(od, "reasoning_tokens", 0);
    cJSON_AddNumberToObject(us, "total_tokens", u->prompt_tokens + u->completion_tokens);
}

/* The response object: status "in_progress" (no output, no usage) or the final one. */
static cJSON *response_obj(const chat_job *j, const char *status) {
    cJSON *r = cJSON_CreateObject();
    char id[64];
    snprintf(id, sizeof id, "resp_%s", j->id + 9);
    cJSON_AddStringToObject(r, "id", id);
    cJSON_AddStringToObject(r, "object", "response");
    cJSON_AddNumberToObject(r, "created_at", (double)j->created);
    cJSON_AddStringToObject(r, "status", status);
    cJSON_AddNullToObject(r, "error");
    cJSON_AddNullToObject(r, "incomplete_details");
    cJSON_AddStringToObject(r, "model", chat_model_id(j->s));
    cJSON *e = j->r_echo ? fe_json_parse_text(j->r_echo, strlen(j->r_echo), NULL) : NULL;
    static const char *const keys[] = {"instructions", "tools", "tool_choice", "text",
                                       "max_output_tokens", "temperature", "top_p",
                                       "parallel_tool_calls", "metadata", "reasoning", NULL};
    for (int i = 0; keys[i]; i++) {
        cJSON *v = cJSON_GetObjectItemCaseSensitive(e, keys[i]);
        if (v)
            cJSON_AddItemToObject(r, keys[i], cJSON_Duplicate(v, 1));
        else if (!strcmp(keys[i], "tools"))
            cJSON_AddArrayToObject(r, "tools");
        else if (!strcmp(keys[i], "tool_choice"))
            cJSON_AddStringToObject(r, "tool_choice", "auto");
        else if (!strcmp(keys[i], "parallel_tool_calls"))
            cJSON_AddTrueToObject(r, "parallel_tool_calls");
        else if (!strcmp(keys[i], "metadata"))
            cJSON_AddObjectToObject(r, "metadata");
        else
            cJSON_AddNullToObject(r, keys[i]);
    }
    cJSON_Delete(e);
    cJSON_AddArrayToObject(r, "output");
    return r;
}

static cJSON *message_item(const chat_job *j, const char *text, const char *status) {
    cJSON *m = cJSON_CreateObject();
    char id[64];
    snprintf(id, sizeof id, "msg_%s", j->id + 9);
    cJSON_AddStringToObject(m, "type", "message");
    cJSON_AddStringToObject(m, "id", id);
    cJSON_AddStringToObject(m, "status", status);
    cJSON_AddStringToObject(m, "role", "assistant");
    cJSON *c = cJSON_AddArrayToObject(m, "content");
    if (text) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddItemToArray(c, p);
        cJSON_AddStringToObject(p, "type", "output_text");
        cJSON_AddStringToObject(p, "text", text);
        cJSON_AddArrayToObject(p, "annotations");
        cJSON_AddArrayToObject(p, "logprobs");
    }
    return m;
}

static cJSON *call_item(const chat_call_out *c, const char *arguments, const char *status) {
    cJSON *x = cJSON_CreateObject();
    char id[80];
    snprintf(id, sizeof id, "fc_%s", c->id);
    cJSON_AddStringToObject(x, "type", "function_call");
    cJSON_AddStringToObject(x, "id", id);
    cJSON_AddStringToObject(x, "call_id", c->id);
    cJSON_AddStringToObject(x, "name", c->name);
    cJSON_AddStringToObject(x, "arguments", arguments);
    cJSON_AddStringToObject(x, "status", status);
    return x;
}

/* The final response object: a reasoning item (a thought), the message (text), the calls. */
static cJSON *final_obj(const chat_job *j, const char *text, const chat_usage *u) {
    int cut = !strcmp(u->finish_reason, "length");
    cJSON *r = response_obj(j, cut ? "incomplete" : "completed");
    if (cut) {
        cJSON_DeleteItemFromObjectCaseSensitive(r, "incomplete_details");
        cJSON *d = cJSON_AddObjectToObject(r, "incomplete_details");
        cJSON_AddStringToObject(d, "reason", "max_output_tokens");
    }
    cJSON *out = cJSON_GetObjectItemCaseSensitive(r, "output");
    if (u->reasoning && u->reasoning_len) {
        char *t = fe_utf8_copy(u->reasoning, u->reasoning_len);
        cJSON *x = cJSON_CreateObject();
        char id[64];
        snprintf(id, sizeof id, "rs_%s", j->id + 9);
        cJSON_AddStringToObject(x, "type", "reasoning");
        cJSON_AddStringToObject(x, "id", id);
        cJSON_AddArrayToObject(x, "summary");
        cJSON *c = cJSON_AddArrayToObject(x, "content");
        cJSON *p = cJSON_CreateObject();
        cJSON_AddItemToArray(c, p);
        cJSON_AddStringToObject(p, "type", "reasoning_text");
        cJSON_AddStringToObject(p, "text", t ? t : "");
        free(t);
        cJSON_AddItemToArray(out, x);
    }
    if (text[0] || !u->n_calls)
        cJSON_AddItemToArray(out, message_item(j, text, cut ? "incomplete" : "completed"));
    for (int i = 0; i < u->n_calls; i++)
        cJSON_AddItemToArray(out, call_item(&u->calls[i], u->calls[i].arguments, "completed"));
    usage_json(r, u);
    return r;
}

char *chat_response_json(const chat_job *j, const char *text, size_t n, const chat_usage *u,
                         size_t *len) {
    char *t = fe_utf8_copy(text, n);
    cJSON *r = t ? final_obj(j, t, u) : NULL;
    char *s = r ? cJSON_PrintUnformatted(r) : NULL;
    cJSON_Delete(r);
    free(t);
    if (s) *len = strlen(s);
    return s;
}

/* ---- the stream: response.* events ------------------------------------------------------- */

static int event(chat_job *j, const char *type, cJSON *o) {
    cJSON_AddStringToObject(o, "type", type);
    cJSON_AddNumberToObject(o, "sequence_number", j->r_seq++);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    int rc = s ? chat_stream_push_event(j, type, s) : -1;
    cJSON_free(s);
    return rc;
}

static int with_response(chat_job *j, const char *type, cJSON *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "response", r);
    return event(j, type, o);
}

int chat_responses_start(chat_job *j) {
    if (with_response(j, "response.created", response_obj(j, "in_progress"))) return -1;
    return with_response(j, "response.in_progress", response_obj(j, "in_progress"));
}

/* the message item opened at the first piece of text */
static int open_message(chat_job *j) {
    if (j->r_msg_open) return 0;
    j->r_msg_open = 1;
    j->r_msg_index = j->r_items++;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "output_index", j->r_msg_index);
    cJSON_AddItemToObject(o, "item", message_item(j, NULL, "in_progress"));
    if (event(j, "response.output_item.added", o)) return -1;
    o = cJSON_CreateObject();
    char id[64];
    snprintf(id, sizeof id, "msg_%s", j->id + 9);
    cJSON_AddStringToObject(o, "item_id", id);
    cJSON_AddNumberToObject(o, "output_index", j->r_msg_index);
    cJSON_AddNumberToObject(o, "content_index", 0);
    cJSON *p = cJSON_AddObjectToObject(o, "part");
    cJSON_AddStringToObject(p, "type", "output_text");
    cJSON_AddStringToObject(p, "text", "");
    cJSON_AddArrayToObject(p, "annotations");
    return event(j, "response.content_part.added", o);
}

int chat_responses_text(chat_job *j, const char *text, size_t n) {
    if (!n) return 0;
    char *t = fe_utf8_copy(text, n);
    if (!t || open_message(j)) {
        free(t);
        return -1;
    }
    size_t k = strlen(t);
    char *v = realloc(j->r_text, j->r_text_len + k + 1);
    if (!v) {
        free(t);
        return -1;
    }
    j->r_text = v;
    memcpy(v + j->r_text_len, t, k + 1);
    j->r_text_len += k;
    cJSON *o = cJSON_CreateObject();
    char id[64];
    snprintf(id, sizeof id, "msg_%s", j->id + 9);
    cJSON_AddStringToObject(o, "item_id", id);
    cJSON_AddNumberToObject(o, "output_index", j->r_msg_index);
    cJSON_AddNumberToObject(o, "content_index", 0);
    cJSON_AddStringToObject(o, "delta", t);
    cJSON_AddArrayToObject(o, "logprobs");
    free(t);
    return event(j, "response.output_text.delta", o);
}

int chat_responses_call(chat_job *j, const chat_call_out *c) {
    int idx = j->r_items++;
    char id[80];
    snprintf(id, sizeof id, "fc_%s", c->id);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "output_index", idx);
    cJSON_AddItemToObject(o, "item", call_item(c, "", "in_progress"));
    if (event(j, "response.output_item.added", o)) return -1;
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "item_id", id);
    cJSON_AddNumberToObject(o, "output_index", idx);
    cJSON_AddStringToObject(o, "delta", c->arguments);
    if (event(j, "response.function_call_arguments.delta", o)) return -1;
    o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "item_id", id);
    cJSON_AddNumberToObject(o, "output_index", idx);
    cJSON_AddStringToObject(o, "name", c->name);
    cJSON_AddStringToObject(o, "arguments", c->arguments);
    if (event(j, "response.function_call_arguments.done", o)) return -1;
    o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "output_index", idx);
    cJSON_AddItemToObject(o, "item", call_item(c, c->arguments, "completed"));
    return event(j, "response.output_item.done", o);
}

int chat_responses_end(chat_job *j, const chat_usage *u) {
    const char *text = j->r_text ? j->r_text : "";
    if (j->r_msg_open) {
        char id[64];
        snprintf(id, sizeof id, "msg_%s", j->id + 9);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "item_id", id);
        cJSON_AddNumberToObject(o, "output_index", j->r_msg_index);
        cJSON_AddNumberToObject(o, "content_index", 0);
        cJSON_AddStringToObject(o, "text", text);
        cJSON_AddArrayToObject(o, "logprobs");
        if (event(j, "response.output_text.done", o)) return -1;
        o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "item_id", id);
        cJSON_AddNumberToObject(o, "output_index", j->r_msg_index);
        cJSON_AddNumberToObject(o, "content_index", 0);
        cJSON *p = cJSON_AddObjectToObject(o, "part");
        cJSON_AddStringToObject(p, "type", "output_text");
        cJSON_AddStringToObject(p, "text", text);
        cJSON_AddArrayToObject(p, "annotations");
        if (event(j, "response.content_part.done", o)) return -1;
        o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "output_index", j->r_msg_index);
        cJSON_AddItemToObject(o, "item", message_item(j, text, "completed"));
        if (event(j, "response.output_item.done", o)) return -1;
    }
    int cut = !strcmp(u->finish_reason, "length");
    int rc = with_response(j, cut ? "response.incomplete" : "response.completed",
                           final_obj(j, text, u));
    chat_stream_close(j); /* no [DONE]: the Responses API's stream ends with that event */
    return rc;
}
