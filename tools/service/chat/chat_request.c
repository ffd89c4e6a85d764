/* chat_request.c - an OpenAI chat.completions request body into a chat_job: the messages
 * (system/developer first, then user and assistant; text parts and image_url parts), the
 * sampling parameters, stream, stop, and our extension "g4v": {"tokens": N}. Images come as
 * data: URIs (base64, decoded here) or, only under --allow-files DIR, as file:// URLs or plain
 * paths whose realpath lies inside DIR. Every refusal names what was wrong and carries its own
 * code (docs/CHAT_API.md, "Errors"); nothing here touches a model. */
#define _GNU_SOURCE /* realpath */
#include "chat/chat_wing.h"
#include "frontend.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

void chat_fail_set(chat_fail *f, int http, const char *type, const char *code, const char *fmt,
                   ...) {
    f->http = http;
    f->type = type;
    f->param = NULL;
    f->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->msg, sizeof f->msg, fmt, ap);
    va_end(ap);
}

#define BAD(code, ...) chat_fail_set(f, 400, "invalid_request_error", code, __VA_ARGS__)

void chat_job_unref(chat_job *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left) return;
    for (int t = 0; t < j->n_turns; t++) {
        for (int i = 0; i < j->turns[t].n_media; i++) { /* owned: chat_wing.h */
            free((void *)j->turns[t].media[i].data);
            free((void *)j->turns[t].media[i].path);
            free((void *)j->turns[t].media[i].url);
        }
        free(j->turns[t].media);
        free(j->turns[t].text);
        for (int k = 0; k < j->turns[t].n_parts; k++)
            free(j->turns[t].parts[k].text);
        free(j->turns[t].parts);
        free(j->turns[t].reasoning);
        free(j->turns[t].tool_calls);
        free(j->turns[t].tool_call_id);
    }
    free(j->turns);
    free(j->system);
    free(j->prefill);
    free(j->r_echo);
    free(j->r_text);
    free(j->schema);
    free(j->tools);
    free(j->gbnf);
    for (int i = 0; i < j->n_stop; i++)
        free(j->stop[i]);
    free(j->bias_ids);
    free(j->bias);
    free(j->out);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

const char *chat_model_id(const server *s) {
    if (s->a.ollama) return s->a.ollama; /* the tag, not the blob's sha256 name */
    const char *slash = strrchr(s->a.lm, '/');
    return slash ? slash + 1 : s->a.lm;
}

static int b64_value(int c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
}

/* Standard or URL-safe base64, padding optional; NULL if any other character appears. */
static unsigned char *b64_decode(const char *s, size_t n, size_t *out_n) {
    while (n && s[n - 1] == '=')
        n--;
    unsigned char *o = malloc(n / 4 * 3 + 3);
    if (!o) return NULL;
    size_t k = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0) {
            free(o);
            return NULL;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            o[k++] = (unsigned char)(acc >> bits);
        }
    }
    *out_n = k;
    return o;
}

/* A file:// URL's path with %XX decoded (malloc'ed), or a plain path copied. */
static char *url_path(const char *u) {
    if (!strncmp(u, "file://", 7)) u += 7;
    size_t n = strlen(u);
    char *p = malloc(n + 1), *d = p;
    if (!p) return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned hi, lo;
        if (u[i] == '%' && i + 2 < n + 0 && sscanf(u + i + 1, "%1x%1x", &hi, &lo) == 2) {
            *d++ = (char)(hi * 16 + lo);
            i += 2;
        } else {
            *d++ = u[i];
        }
    }
    *d = 0;
    return p;
}

/* A "g4v": {"tokens": N} object (the request's, or one image part's) into *budget (left as is
 * without "tokens"): 0, or -1 with f filled. where names it in the message. */
static int take_budget(const cJSON *x, int *budget, const char *where, chat_fail *f) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(x, "tokens");
    char msg[160];
    /* range first: converting a double outside int's range to int is undefined */
    if (!cJSON_IsObject(x) ||
        (t && (!cJSON_IsNumber(t) || !(t->valuedouble >= 0 && t->valuedouble <= 1e6) ||
               t->valuedouble != (int)t->valuedouble ||
               g4v_budget_check((int)t->valuedouble, msg, sizeof msg)))) {
        BAD("invalid_budget", "%s\"g4v\": {\"tokens\": N} with N one of " SVC_BUDGETS, where);
        return -1;
    }
    if (t) *budget = (int)t->valuedouble;
    return 0;
}

/* The kind of medium of a content part's type "<medium>_url" ("image_url", "video_url"), or -1. */
static int medium_part(const char *type) {
    size_t n = strlen(type);
    if (n < 4 || strcmp(type + n - 4, "_url")) return -1;
    return fe_medium_from_name(type, n - 4);
}

/* A medium in memory (or to be fetched) is named for messages: its path is its name. */
static int take_name(chat_media *img, const char *name, chat_fail *f) {
    if ((img->path = strdup(name))) return 0;
    chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
    return -1;
}

/* One image_url (or video_url) into img: 0, or -1 with f filled. */
static int take_image(server *s, const char *url, int index, chat_media *img, chat_fail *f) {
    char name[48]; /* "image N": img->path for messages unless it is a file */
    snprintf(name, sizeof name, "%s %d", fe_medium_name(img->medium), index + 1);
    if (!strncmp(url, "data:", 5)) {
        const char *comma = strchr(url, ',');
        if (!comma) {
            BAD("invalid_image_url", "%s: a data: URI without a comma", name);
            return -1;
        }
        size_t hl = (size_t)(comma - url);
        if (hl < 12 || strncmp(comma - 7, ";base64", 7)) {
            BAD("invalid_image_url", "%s: the data: URI must be base64 (data:image/...;base64,...)",
                name);
            return -1;
        }
        /* an image is an image type, a video a video type (a browser File.type): "<medium>/" */
        const char *kind = fe_medium_name(img->medium);
        size_t kl = strlen(kind);
        if (strncmp(url + 5, kind, kl) || url[5 + kl] != '/') {
            if (img->medium == FE_MEDIUM_VIDEO)
                BAD("invalid_video_url", "%s: the data: URI's media type is not video/* (%.*s)",
                    name, (int)(hl - 12 < 60 ? hl - 12 : 60), url + 5);
            else
                BAD("invalid_image", "%s: the data: URI's media type is not image/* (%.*s)",
                    name, (int)(hl - 12 < 60 ? hl - 12 : 60), url + 5);
            return -1;
        }
        img->data = b64_decode(comma + 1, strlen(comma + 1), &img->size);
        if (!img->data || !img->size) {
            BAD("invalid_image", "%s: the data: URI is not valid base64 or is empty", name);
            return -1;
        }
        return take_name(img, name, f);
    }
    int web = !strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8);
    if (web && s->a.allow_image_urls) { /* fetched by the slot (chat_fetch.c) */
        if (!(img->url = strdup(url))) {
            chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
            return -1;
        }
        return take_name(img, name, f);
    }
    if (strstr(url, "://") && strncmp(url, "file://", 7)) {
        BAD("invalid_image_url",
            "%s: this server does not fetch URLs (it would with --allow-image-urls); send the "
            "image as a data: URI (data:image/png;base64,...)",
            name);
        return -1;
    }
    if (!s->a.allow_files) {
        chat_fail_set(f, 403, "permission_error", "files_not_allowed",
                      "%s: file paths are refused; send a data: URI, or start the server with "
                      "--allow-files DIR",
                      name);
        return -1;
    }
    char *p = url_path(url);
    char dir[PATH_MAX], real[PATH_MAX];
    int ok = p && realpath(s->a.allow_files, dir) && realpath(p, real);
    size_t dl = ok ? strlen(dir) : 0;
    /* inside DIR after every symlink is resolved, never DIR itself */
    ok = ok && !strncmp(real, dir, dl) && (real[dl] == '/' || (dl == 1 && dir[0] == '/')) &&
         real[dl + (dl > 1)] != 0;
    free(p);
    if (!ok) {
        chat_fail_set(f, 403, "permission_error", "file_not_allowed",
                      "%s: not a file under the directory this server allows (--allow-files)",
                      name);
        return -1;
    }
    img->path = strdup(real);
    if (!img->path) {
        chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
        return -1;
    }
    return 0;
}

static char *append_text(char *acc, const char *t) {
    size_t a = acc ? strlen(acc) : 0, b = strlen(t);
    char *r = realloc(acc, a + b + 2);
    if (!r) {
        free(acc);
        return NULL;
    }
    if (a) r[a++] = '\n'; /* parts and merged messages: one per line */
    memcpy(r + a, t, b + 1);
    return r;
}

/* A content part into t->parts (media >= 0, or a text copied). 0, or -1 out of memory. */
static int push_part(chat_turn_in *t, int media, const char *text) {
    chat_part_in *v = realloc(t->parts, (size_t)(t->n_parts + 1) * sizeof *v);
    if (!v) return -1;
    t->parts = v;
    v[t->n_parts].media = media;
    v[t->n_parts].text = NULL;
    if (media < 0 && !(v[t->n_parts].text = strdup(text ? text : ""))) return -1;
    t->n_parts++;
    return 0;
}

/* One message's content (a string, or an array of parts) into turn t. */
static int take_content(server *s, chat_job *j, const cJSON *content, int role, int mi,
                        chat_turn_in *t, chat_fail *f) {
    /* an assistant message that only calls tools may leave content out, or null */
    if ((!content || cJSON_IsNull(content)) && role == CHAT_ROLE_ASSISTANT) return 0;
    if (cJSON_IsString(content)) {
        if (!(t->text = append_text(t->text, content->valuestring)) ||
            push_part(t, -1, content->valuestring))
            goto oom;
        return 0;
    }
    if (!cJSON_IsArray(content)) {
        BAD("invalid_content", "messages[%d].content: a string or an array of parts", mi);
        return -1;
    }
    int pi = 0;
    for (const cJSON *p = content->child; p; p = p->next, pi++) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
        const char *ty = cJSON_IsString(type) ? type->valuestring : "";
        if (!strcmp(ty, "text")) {
            const cJSON *tx = cJSON_GetObjectItemCaseSensitive(p, "text");
            if (!cJSON_IsString(tx)) {
                BAD("invalid_content", "messages[%d].content[%d]: a text part needs \"text\"", mi,
                    pi);
                return -1;
            }
            if (!(t->text = append_text(t->text, tx->valuestring)) ||
                push_part(t, -1, tx->valuestring))
                goto oom;
        } else if (medium_part(ty) >= 0) { /* "image_url", "video_url": "<medium>_url" */
            fe_medium medium = (fe_medium)medium_part(ty);
            if (role != CHAT_ROLE_USER) {
                BAD("invalid_content", "messages[%d]: images only in user messages", mi);
                return -1;
            }
            const cJSON *iu = cJSON_GetObjectItemCaseSensitive(p, ty);
            const cJSON *url = cJSON_IsObject(iu) ? cJSON_GetObjectItemCaseSensitive(iu, "url") : iu;
            if (!cJSON_IsString(url)) {
                BAD("invalid_image_url", "messages[%d].content[%d]: %s needs a \"url\"", mi, pi,
                    ty);
                return -1;
            }
            if (j->n_images >= s->a.max_images) {
                BAD("too_many_images",
                    "more than %d images in one request (this server's --max-images)",
                    s->a.max_images);
                return -1;
            }
            chat_media *im = realloc(t->media, (size_t)(t->n_media + 1) * sizeof *im);
            if (!im) goto oom;
            t->media = im;
            memset(&im[t->n_media], 0, sizeof *im);
            t->n_media++;
            im[t->n_media - 1].medium = medium;
            if (take_image(s, url->valuestring, j->n_images, &im[t->n_media - 1], f)) return -1;
            const cJSON *pg = cJSON_GetObjectItemCaseSensitive(p, "g4v");
            char where[64];
            snprintf(where, sizeof where, "messages[%d].content[%d]: ", mi, pi);
            if (pg && !cJSON_IsNull(pg) &&
                take_budget(pg, &im[t->n_media - 1].budget, where, f))
                return -1;
            j->n_images++;
            if (push_part(t, t->n_media - 1, NULL)) goto oom;
        } else {
            BAD("invalid_content",
                "messages[%d].content[%d]: part type '%.40s' is not served (text, image_url, "
                "video_url)", mi,
                pi, ty);
            return -1;
        }
    }
    return 0;
oom:
    chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
    return -1;
}

#define OOM(f) chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory")

/* An assistant message's tool_calls into t->tool_calls: each {id?, type "function", function:
 * {name, arguments}} with arguments a JSON object's text (OpenAI's form) or an object, kept
 * with arguments as objects: the form the templates render. */
static int take_tool_calls(const cJSON *calls, int mi, chat_turn_in *t, chat_fail *f) {
    if (!cJSON_IsArray(calls) || !calls->child) {
        BAD("invalid_tool_calls", "messages[%d].tool_calls must be a non-empty array", mi);
        return -1;
    }
    cJSON *out = cJSON_CreateArray();
    if (!out) goto oom;
    int k = 0;
    for (const cJSON *c = calls->child; c; c = c->next, k++) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        const cJSON *args = cJSON_GetObjectItemCaseSensitive(fn, "arguments");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
        if (!cJSON_IsObject(fn) || !cJSON_IsString(name) || !name->valuestring[0]) {
            BAD("invalid_tool_calls", "messages[%d].tool_calls[%d] needs \"function\": "
                "{\"name\": ..., \"arguments\": ...}", mi, k);
            goto fail;
        }
        cJSON *a = NULL;
        if (cJSON_IsString(args))
            a = fe_json_parse_text(args->valuestring, strlen(args->valuestring), NULL);
        else if (cJSON_IsObject(args))
            a = cJSON_Duplicate(args, 1);
        else if (!args || cJSON_IsNull(args))
            a = cJSON_CreateObject();
        if (!cJSON_IsObject(a)) {
            cJSON_Delete(a);
            BAD("invalid_tool_calls", "messages[%d].tool_calls[%d].function.arguments must be a "
                "JSON object (as text, the way the API returns it)", mi, k);
            goto fail;
        }
        cJSON *o = cJSON_CreateObject(), *of = o ? cJSON_AddObjectToObject(o, "function") : NULL;
        if (!o || !cJSON_AddItemToArray(out, o) || !of ||
            (cJSON_IsString(id) && !cJSON_AddStringToObject(o, "id", id->valuestring)) ||
            !cJSON_AddStringToObject(o, "type", "function") ||
            !cJSON_AddStringToObject(of, "name", name->valuestring) ||
            !cJSON_AddItemToObject(of, "arguments", a)) {
            cJSON_Delete(a);
            goto oom;
        }
    }
    t->tool_calls = cJSON_PrintUnformatted(out);
    cJSON_Delete(out);
    if (!t->tool_calls) goto oom_only;
    return 0;
oom:
    cJSON_Delete(out);
oom_only:
    OOM(f);
    return -1;
fail:
    cJSON_Delete(out);
    return -1;
}

/* The final assistant message as the answer's start: its thought (closed, as Gemma 4's
 * template writes an answer's thought after the last user turn) and its text, verbatim. The
 * turn's strings go. */
static int take_prefill(chat_job *j, chat_turn_in *t, chat_fail *f) {
    const char *text = t->text ? t->text : "";
    size_t n = strlen(text) + (t->reasoning ? strlen(t->reasoning) + 32 : 0) + 1;
    if (!(j->prefill = malloc(n))) {
        OOM(f);
        return -1;
    }
    if (t->reasoning)
        snprintf(j->prefill, n, "<|channel>thought\n%s\n<channel|>%s", t->reasoning, text);
    else
        snprintf(j->prefill, n, "%s", text);
    free(t->text);
    for (int k = 0; k < t->n_parts; k++)
        free(t->parts[k].text);
    free(t->parts);
    free(t->reasoning);
    memset(t, 0, sizeof *t);
    return 0;
}

static int take_messages(server *s, chat_job *j, const cJSON *msgs, chat_fail *f) {
    if (!cJSON_IsArray(msgs) || !msgs->child) {
        BAD("invalid_messages", "\"messages\" must be a non-empty array");
        return -1;
    }
    int n = cJSON_GetArraySize(msgs);
    if (n > s->a.max_messages) {
        BAD("too_many_messages", "%d messages: above this server's limit of %d (--max-messages)",
            n, s->a.max_messages);
        return -1;
    }
    j->turns = calloc((size_t)n, sizeof *j->turns);
    if (!j->turns) {
        chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
        return -1;
    }
    int mi = 0, seen_turn = 0;
    for (const cJSON *m = msgs->child; m; m = m->next, mi++) {
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        const char *r = cJSON_IsString(role) ? role->valuestring : "";
        if (!strcmp(r, "system") || !strcmp(r, "developer")) {
            if (seen_turn) { /* later on: a system turn where it stands (text only) */
                chat_turn_in *t = &j->turns[j->n_turns++];
                t->role = CHAT_ROLE_SYSTEM;
                t->msg = mi;
                if (take_content(s, j, content, CHAT_ROLE_ASSISTANT, mi, t, f)) return -1;
                continue;
            }
            chat_turn_in tmp = {0};
            tmp.text = j->system;
            int bad = take_content(s, j, content, CHAT_ROLE_ASSISTANT, mi, &tmp, f);
            j->system = tmp.text; /* the system prompt is its text: the parts go */
            for (int k = 0; k < tmp.n_parts; k++)
                free(tmp.parts[k].text);
            free(tmp.parts);
            if (bad) return -1;
            continue;
        }
        int ro = !strcmp(r, "user")        ? CHAT_ROLE_USER
                 : !strcmp(r, "assistant") ? CHAT_ROLE_ASSISTANT
                 : !strcmp(r, "tool")      ? CHAT_ROLE_TOOL
                                           : -1;
        if (ro < 0) {
            BAD("invalid_messages", "messages[%d]: role '%.40s' is not served (system, developer, "
                                    "user, assistant, tool)", mi, r);
            return -1;
        }
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        int has_calls = ro == CHAT_ROLE_ASSISTANT && calls && !cJSON_IsNull(calls);
        if (ro == CHAT_ROLE_TOOL) { /* a turn of its own: the result of one call */
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "tool_call_id");
            int prev = seen_turn ? j->turns[j->n_turns - 1].role : -1;
            if (prev != CHAT_ROLE_TOOL && !(prev == CHAT_ROLE_ASSISTANT &&
                                            j->turns[j->n_turns - 1].tool_calls)) {
                BAD("invalid_messages", "messages[%d]: a tool message answers an assistant "
                                        "message's tool_calls, and must follow it (or another "
                                        "tool message)", mi);
                return -1;
            }
            chat_turn_in *t = &j->turns[j->n_turns++];
            t->role = ro;
            t->msg = mi;
            if (take_content(s, j, content, CHAT_ROLE_ASSISTANT, mi, t, f)) return -1;
            if (cJSON_IsString(id) && !(t->tool_call_id = strdup(id->valuestring))) {
                OOM(f);
                return -1;
            }
            continue;
        }
        if (ro == CHAT_ROLE_ASSISTANT && j->n_turns &&
            j->turns[j->n_turns - 1].role == CHAT_ROLE_ASSISTANT &&
            j->turns[j->n_turns - 1].tool_calls) {
            BAD("invalid_messages", "messages[%d]: an assistant message after messages[%d]'s "
                "tool_calls: send each call's result as a tool message first", mi,
                j->turns[j->n_turns - 1].msg);
            return -1;
        }
        seen_turn = 1;
        /* consecutive messages of one role are one turn; an answer that calls tools is one */
        if (!j->n_turns || j->turns[j->n_turns - 1].role != ro || has_calls ||
            j->turns[j->n_turns - 1].tool_calls) {
            j->turns[j->n_turns].msg = mi;
            j->turns[j->n_turns++].role = ro;
        }
        chat_turn_in *t = &j->turns[j->n_turns - 1];
        if (take_content(s, j, content, ro, mi, t, f)) return -1;
        if (has_calls && take_tool_calls(calls, mi, t, f)) return -1;
        const cJSON *rc = cJSON_GetObjectItemCaseSensitive(m, "reasoning_content");
        if (ro == CHAT_ROLE_ASSISTANT && rc && !cJSON_IsNull(rc)) {
            if (!cJSON_IsString(rc)) {
                BAD("invalid_messages", "messages[%d]: \"reasoning_content\" must be a string",
                    mi);
                return -1;
            }
            if (!(t->reasoning = append_text(t->reasoning, rc->valuestring))) {
                chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
                return -1;
            }
        }
    }
    if (!j->n_turns && !j->system) {
        BAD("invalid_messages", "\"messages\" holds no message with content");
        return -1;
    }
    /* a final assistant message is the start of the answer, which the model continues */
    chat_turn_in *last = j->n_turns ? &j->turns[j->n_turns - 1] : NULL;
    if (last && last->role == CHAT_ROLE_ASSISTANT) {
        if (last->tool_calls) {
            BAD("invalid_messages", "messages[%d]: a final assistant message with tool_calls "
                "cannot be continued: send each call's result after it as a tool message",
                mi - 1);
            return -1;
        }
        if (take_prefill(j, last, f)) return -1;
        j->n_turns--;
    }
    for (int t = 0; t < j->n_turns; t++)
        if (!j->turns[t].text && !(j->turns[t].text = strdup(""))) {
            chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
            return -1;
        }
    return 0;
}

/* A boolean field into *v (absent or null: untouched). */
static int take_bool(const cJSON *o, const char *name, int *v, const char *form, chat_fail *f) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsBool(x)) {
        BAD("invalid_parameter", "%s", form);
        return -1;
    }
    *v = cJSON_IsTrue(x);
    return 0;
}

/* Thinking, as the OpenAI API (reasoning_effort) and llama-server / vLLM
 * (chat_template_kwargs.enable_thinking) ask for it. Gemma 4 has no effort levels: any effort but
 * "none" turns it on. */
static int take_thinking(const cJSON *o, chat_job *j, chat_fail *f) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "reasoning_effort");
    if (e && !cJSON_IsNull(e)) {
        static const char *const levels[] = {"none", "minimal", "low", "medium", "high"};
        int k = -1;
        for (int i = 0; cJSON_IsString(e) && i < 5; i++)
            if (!strcmp(e->valuestring, levels[i])) k = i;
        if (k < 0) {
            BAD("invalid_parameter", "\"reasoning_effort\" must be one of none, minimal, low, "
                                     "medium, high (Gemma 4 thinks or not: any but none turns "
                                     "thinking on)");
            return -1;
        }
        j->params.think = k > 0;
    }
    const cJSON *kw = cJSON_GetObjectItemCaseSensitive(o, "chat_template_kwargs");
    if (kw && !cJSON_IsNull(kw)) {
        if (!cJSON_IsObject(kw)) {
            BAD("invalid_parameter", "\"chat_template_kwargs\" must be an object");
            return -1;
        }
        if (take_bool(kw, "enable_thinking", &j->params.think,
                      "\"chat_template_kwargs\": {\"enable_thinking\": true|false}", f))
            return -1;
    }
    return 0;
}

/* response_format: {"type": "text"}, {"type": "json_object"} (any JSON object), or
 * {"type": "json_schema", "json_schema": {"name", "description", "schema", "strict"}}, no other
 * key: the schema kept as text; it is checked and made a grammar before the request waits
 * (chat_precheck.c), where the grammar layer is. */
static int take_response_format(const cJSON *o, chat_job *j, chat_fail *f) {
    const cJSON *rf = cJSON_GetObjectItemCaseSensitive(o, "response_format");
    if (!rf || cJSON_IsNull(rf)) return 0;
    const cJSON *ty = cJSON_GetObjectItemCaseSensitive(rf, "type");
    const char *t = cJSON_IsString(ty) ? ty->valuestring : "";
    if (!cJSON_IsObject(rf) ||
        (strcmp(t, "text") && strcmp(t, "json_object") && strcmp(t, "json_schema"))) {
        BAD("invalid_response_format", "\"response_format\": {\"type\": \"text\"}, "
            "{\"type\": \"json_object\"} or {\"type\": \"json_schema\", \"json_schema\": "
            "{\"name\": ..., \"schema\": {...}}}");
        return -1;
    }
    /* a key of another server's format (llama-server's {"type": "json_object", "schema": ...})
     * is refused, named, rather than answered as if it were not there */
    static const char *const inner[] = {"name", "description", "schema", "strict", NULL};
    const cJSON *js = cJSON_GetObjectItemCaseSensitive(rf, "json_schema");
    for (const cJSON *x = rf->child; x; x = x->next) {
        if (x->string && (!strcmp(x->string, "type") ||
                          (!strcmp(x->string, "json_schema") && !strcmp(t, "json_schema"))))
            continue;
        BAD("invalid_response_format", "\"response_format\": {\"type\": \"%s\"} takes no "
            "\"%.64s\" (a schema goes in {\"type\": \"json_schema\", \"json_schema\": "
            "{\"schema\": {...}}})", t, x->string ? x->string : "");
        return -1;
    }
    for (const cJSON *x = cJSON_IsObject(js) ? js->child : NULL; x; x = x->next) {
        int known = 0;
        for (int i = 0; inner[i] && !known; i++)
            known = x->string && !strcmp(x->string, inner[i]);
        if (known) continue;
        BAD("invalid_response_format", "\"response_format\": \"json_schema\" takes \"name\", "
            "\"description\", \"schema\" and \"strict\", not \"%.64s\"",
            x->string ? x->string : "");
        return -1;
    }
    if (!strcmp(t, "text")) return 0;
    if (!strcmp(t, "json_object")) {
        if (!(j->schema = strdup("{\"type\":\"object\"}"))) {
            OOM(f);
            return -1;
        }
        return 0;
    }
    const cJSON *sc = cJSON_GetObjectItemCaseSensitive(js, "schema");
    if (!cJSON_IsObject(js) || !cJSON_IsObject(sc)) {
        BAD("invalid_response_format",
            "\"response_format\": {\"type\": \"json_schema\"} needs \"json_schema\": "
            "{\"name\": ..., \"schema\": {a JSON Schema object}}");
        return -1;
    }
    if (!(j->schema = cJSON_PrintUnformatted(sc))) {
        OOM(f);
        return -1;
    }
    return 0;
}

/* tools, tool_choice, parallel_tool_calls: the tools kept as text (checked against the schema
 * subset by the slot), the choice parsed here. */
static int take_tools(const cJSON *o, chat_job *j, chat_fail *f) {
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(o, "tools");
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(o, "tool_choice");
    j->parallel_tool_calls = 1;
    if (take_bool(o, "parallel_tool_calls", &j->parallel_tool_calls,
                  "\"parallel_tool_calls\" must be true or false", f))
        return -1;
    j->tool_choice = CHAT_TOOLS_NONE;
    if (!tools || cJSON_IsNull(tools) || (cJSON_IsArray(tools) && !tools->child)) {
        if (tc && !cJSON_IsNull(tc) && !(cJSON_IsString(tc) && !strcmp(tc->valuestring, "none"))) {
            BAD("invalid_tool_choice", "\"tool_choice\" without \"tools\"");
            return -1;
        }
        return 0;
    }
    if (!cJSON_IsArray(tools) || cJSON_GetArraySize(tools) > CHAT_MAX_TOOLS) {
        BAD("invalid_tools", "\"tools\" must be an array of at most %d functions",
            CHAT_MAX_TOOLS);
        return -1;
    }
    j->tool_choice = CHAT_TOOLS_AUTO;
    if (cJSON_IsString(tc)) {
        const char *v = tc->valuestring;
        j->tool_choice = !strcmp(v, "auto")       ? CHAT_TOOLS_AUTO
                         : !strcmp(v, "none")     ? CHAT_TOOLS_NONE
                         : !strcmp(v, "required") ? CHAT_TOOLS_REQUIRED
                                                  : -1;
    } else if (cJSON_IsObject(tc)) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tc, "function");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(fn, "name");
        j->tool_choice = -1;
        if (cJSON_IsString(nm) && strlen(nm->valuestring) < sizeof j->tool_name) {
            snprintf(j->tool_name, sizeof j->tool_name, "%s", nm->valuestring);
            j->tool_choice = CHAT_TOOLS_NAMED;
        }
    } else if (tc && !cJSON_IsNull(tc)) {
        j->tool_choice = -1;
    }
    if (j->tool_choice < 0) {
        BAD("invalid_tool_choice", "\"tool_choice\": \"auto\", \"none\", \"required\" or "
            "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        return -1;
    }
    if (j->tool_choice == CHAT_TOOLS_NAMED) {
        int found = 0;
        for (const cJSON *t = tools->child; t && !found; t = t->next) {
            const cJSON *nm = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(t, "function"), "name");
            found = cJSON_IsString(nm) && !strcmp(nm->valuestring, j->tool_name);
        }
        if (!found) {
            BAD("invalid_tool_choice", "\"tool_choice\" names the function '%.64s', which "
                "\"tools\" does not declare", j->tool_name);
            return -1;
        }
    }
    if (!(j->tools = cJSON_PrintUnformatted(tools))) {
        OOM(f);
        return -1;
    }
    if (j->schema && j->tool_choice != CHAT_TOOLS_NONE) {
        BAD("invalid_response_format", "\"response_format\" with \"tools\" is served only with "
            "\"tool_choice\": \"none\" (one grammar constrains an answer)");
        return -1;
    }
    return 0;
}

/* A number field in [lo, hi] into *v (absent or null: untouched). */
static int take_number(const cJSON *o, const char *name, double lo, double hi, double *v,
                       chat_fail *f) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsNumber(x) || x->valuedouble < lo || x->valuedouble > hi) {
        BAD("invalid_parameter", "\"%s\" must be a number from %g to %g", name, lo, hi);
        return -1;
    }
    *v = x->valuedouble;
    return 0;
}

/* The request's fields: each either served, or accepted because it cannot change the answer
 * (docs/CHAT_API.md §1, "Accepted and not used"); any other field is refused, named, rather than
 * silently ignored (OpenAI answers unknown arguments with 400). */
static const char *const served_fields[] = {
    "messages", "model", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
    "min_p", "seed", "stop", "stream", "stream_options", "n", "reasoning_effort",
    "chat_template_kwargs", "response_format", "tools", "tool_choice", "parallel_tool_calls",
    "g4v", "logit_bias", "logprobs", "top_logprobs",
    /* accepted, not used: they do not change the answer */
    "user", "metadata", "store", "service_tier", "safety_identifier", "prompt_cache_key",
    /* accepted only at the value that changes nothing (checked in take_neutral) */
    "frequency_penalty", "presence_penalty", "modalities", NULL};

static int take_unknown(const cJSON *o, chat_fail *f) {
    char names[400] = "";
    size_t at = 0;
    int n = 0;
    for (const cJSON *x = o->child; x; x = x->next) {
        int known = 0;
        for (int i = 0; served_fields[i] && !known; i++)
            known = x->string && !strcmp(x->string, served_fields[i]);
        if (known) continue;
        if (at < sizeof names - 80)
            at += (size_t)snprintf(names + at, sizeof names - at, "%s\"%.64s\"", n ? ", " : "",
                                   x->string ? x->string : "");
        n++;
    }
    if (!n) return 0;
    chat_fail_set(f, 400, "invalid_request_error", "unsupported_parameter",
                  "%s %s not supported by this server (docs/CHAT_API.md lists the fields served "
                  "and those accepted unused); remove %s", names, n > 1 ? "are" : "is",
                  n > 1 ? "them" : "it");
    return -1;
}

/* Fields accepted only at the value that leaves the answer as it is: the penalties at 0,
 * modalities ["text"]. */
static int take_neutral(const cJSON *o, chat_fail *f) {
    static const char *const pen[] = {"frequency_penalty", "presence_penalty"};
    for (int i = 0; i < 2; i++) {
        const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, pen[i]);
        if (!x || cJSON_IsNull(x) || (cJSON_IsNumber(x) && x->valuedouble == 0)) continue;
        chat_fail_set(f, 400, "invalid_request_error", "unsupported_parameter",
                      "\"%s\" is not supported by this server (only 0, which changes nothing)",
                      pen[i]);
        return -1;
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "modalities");
    if (m && !cJSON_IsNull(m)) {
        int ok = cJSON_IsArray(m);
        for (const cJSON *x = ok ? m->child : NULL; x; x = x->next)
            ok = ok && cJSON_IsString(x) && !strcmp(x->valuestring, "text");
        if (!ok) {
            chat_fail_set(f, 400, "invalid_request_error", "unsupported_parameter",
                          "\"modalities\": this server answers [\"text\"] only");
            return -1;
        }
    }
    return 0;
}

/* logit_bias: {"token id": bias}, ids as decimal strings, biases from -100 to 100 (the ids are
 * checked against the vocabulary before the request waits, chat_precheck); logprobs and
 * top_logprobs (0 to 20, with logprobs). */
static int take_logit_params(const cJSON *o, chat_job *j, chat_fail *f) {
    const cJSON *lb = cJSON_GetObjectItemCaseSensitive(o, "logit_bias");
    if (lb && !cJSON_IsNull(lb)) {
        int n = cJSON_IsObject(lb) ? cJSON_GetArraySize(lb) : -1;
        if (n < 0 || n > CHAT_MAX_BIAS) {
            BAD("invalid_logit_bias", "\"logit_bias\" must be an object of at most %d "
                "\"token id\": bias entries", CHAT_MAX_BIAS);
            return -1;
        }
        j->bias_ids = malloc((size_t)(n ? n : 1) * sizeof *j->bias_ids);
        j->bias = malloc((size_t)(n ? n : 1) * sizeof *j->bias);
        if (!j->bias_ids || !j->bias) {
            OOM(f);
            return -1;
        }
        for (const cJSON *x = lb->child; x; x = x->next) {
            char *end = NULL;
            long id = x->string && *x->string ? strtol(x->string, &end, 10) : -1;
            if (!end || *end || id < 0 || id > INT32_MAX) {
                BAD("invalid_logit_bias", "logit_bias: the key \"%.40s\" is not a token id (a "
                    "whole number, as text)", x->string ? x->string : "");
                return -1;
            }
            if (!cJSON_IsNumber(x) || x->valuedouble < -100 || x->valuedouble > 100) {
                BAD("invalid_logit_bias", "logit_bias[\"%ld\"] must be a number from -100 to "
                    "100", id);
                return -1;
            }
            j->bias_ids[j->params.n_bias] = (int32_t)id;
            j->bias[j->params.n_bias++] = (float)x->valuedouble;
        }
        j->params.bias_ids = j->bias_ids;
        j->params.bias = j->bias;
    }
    if (take_bool(o, "logprobs", &j->params.logprobs, "\"logprobs\" must be true or false", f))
        return -1;
    double v = -1;
    if (take_number(o, "top_logprobs", 0, CHAT_MAX_TOP_LOGPROBS, &v, f)) return -1;
    if (v >= 0) {
        if (v != (int)v) {
            BAD("invalid_parameter", "\"top_logprobs\" must be a whole number from 0 to %d",
                CHAT_MAX_TOP_LOGPROBS);
            return -1;
        }
        if (!j->params.logprobs) {
            BAD("invalid_parameter", "\"top_logprobs\" needs \"logprobs\": true");
            return -1;
        }
        j->params.top_logprobs = (int)v;
    }
    return 0;
}

static int take_params(server *s, chat_job *j, const cJSON *o, chat_fail *f) {
    double v;
    v = j->params.max_tokens;
    if (take_number(o, "max_tokens", 1, s->a.lm_ctx, &v, f) ||
        take_number(o, "max_completion_tokens", 1, s->a.lm_ctx, &v, f))
        return -1;
    j->params.max_tokens = (int)v;
    v = j->params.temp;
    if (take_number(o, "temperature", 0, 2, &v, f)) return -1;
    j->params.temp = (float)v;
    v = j->params.top_p;
    if (take_number(o, "top_p", 0, 1, &v, f)) return -1;
    j->params.top_p = (float)v;
    v = j->params.top_k; /* 0: off (llama.cpp's and vLLM's top_k; -1 also means off there) */
    if (take_number(o, "top_k", -1, 1000, &v, f)) return -1;
    if (v != (int)v) {
        BAD("invalid_parameter", "\"top_k\" must be a whole number from -1 to 1000");
        return -1;
    }
    j->params.top_k = (int)v;
    v = j->params.min_p;
    if (take_number(o, "min_p", 0, 1, &v, f)) return -1;
    j->params.min_p = (float)v;
    v = j->params.seed;
    if (take_number(o, "seed", 0, 4294967295.0, &v, f)) return -1;
    j->params.seed = (uint32_t)v;
    v = 1;
    if (take_number(o, "n", 1, CHAT_MAX_N, &v, f)) return -1;
    if (v != (int)v) {
        BAD("invalid_parameter", "\"n\" must be a whole number from 1 to %d", CHAT_MAX_N);
        return -1;
    }
    j->n_choices = (int)v;
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, "stream");
    if (x && !cJSON_IsNull(x) && !cJSON_IsBool(x)) {
        BAD("invalid_parameter", "\"stream\" must be true or false");
        return -1;
    }
    j->stream = cJSON_IsTrue(x);
    x = cJSON_GetObjectItemCaseSensitive(o, "stream_options");
    if (cJSON_IsObject(x))
        j->include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x, "include_usage"));
    x = cJSON_GetObjectItemCaseSensitive(o, "stop");
    if (x && !cJSON_IsNull(x)) {
        const cJSON *one = cJSON_IsString(x) ? x : NULL;
        const cJSON *it = one ? one : (cJSON_IsArray(x) ? x->child : NULL);
        if (!one && !cJSON_IsArray(x)) {
            BAD("invalid_stop", "\"stop\" must be a string or an array of strings");
            return -1;
        }
        for (; it; it = one ? NULL : it->next) {
            if (!cJSON_IsString(it) || !it->valuestring[0] ||
                strlen(it->valuestring) > CHAT_MAX_STOP_LEN || j->n_stop >= CHAT_MAX_STOP) {
                BAD("invalid_stop", "\"stop\": at most %d non-empty strings of at most %d bytes",
                    CHAT_MAX_STOP, CHAT_MAX_STOP_LEN);
                return -1;
            }
            if (!(j->stop[j->n_stop++] = strdup(it->valuestring))) return -1;
        }
    }
    x = cJSON_GetObjectItemCaseSensitive(o, "g4v");
    if (x && !cJSON_IsNull(x)) {
        if (take_budget(x, &j->params.budget, "", f)) return -1;
        if (take_bool(x, "think", &j->params.think, "\"g4v\": {\"think\": true|false}", f) ||
            take_bool(x, "debug_prompt", &j->debug_prompt,
                      "\"g4v\": {\"debug_prompt\": true|false}", f))
            return -1;
    }
    return take_thinking(o, j, f) || take_response_format(o, j, f) || take_tools(o, j, f) ||
                   take_logit_params(o, j, f) || take_neutral(o, f)
               ? -1
               : 0;
}

chat_job *chat_request_parse(server *s, const char *body, size_t len, chat_fail *f) {
    cJSON *o = fe_json_parse_text(body, len, NULL); /* under libg4v's cJSON lock */
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        BAD("invalid_json", "the body is not a JSON object");
        return NULL;
    }
    chat_job *j = calloc(1, sizeof *j);
    if (!j) {
        cJSON_Delete(o);
        chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
        return NULL;
    }
    pthread_mutex_init(&j->mu, NULL);
    j->refs = 1;
    j->s = s;
    j->fd = -1;
    /* the defaults: Gemma 4's generation_config.json, as g4v chat */
    chat_params_init(&j->params);
    if (s->a.lm_ctx < j->params.max_tokens) j->params.max_tokens = s->a.lm_ctx;
    j->created = (long)time(NULL);
    static unsigned long counter;
    snprintf(j->id, sizeof j->id, "chatcmpl-%lx%lx", (unsigned long)j->created,
             __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED));
    if (take_unknown(o, f) ||
        take_messages(s, j, cJSON_GetObjectItemCaseSensitive(o, "messages"), f) ||
        take_params(s, j, o, f)) {
        cJSON_Delete(o);
        chat_job_unref(j);
        return NULL;
    }
    cJSON_Delete(o);
    /* the job's own strings, as the session is given them */
    j->params.system = j->system;
    j->params.prefill = j->prefill;
    j->params.tools = j->tool_choice != CHAT_TOOLS_NONE ? j->tools : NULL;
    chat_job_keys(j);
    return j;
}
