/* chat_template.c - the conversation rendered by the model's Jinja template, or by our Gemma 4
 * format (chat_template.h) */
#include "chat_template.h"
#include "chat_error.h"
#include "frontend.h"
#ifdef G4V_HAVE_CHAT_JINJA
#include "chat_jinja.h"
#else
typedef struct chat_jinja chat_jinja;
#endif

#include <cjson/cJSON.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static char *read_file(const char *path, char *err, size_t errsz) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        seterr(err, errsz, "cannot read the chat template %s", path);
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (size_t k; b && (k = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += k;
        if (n + 1 == cap) {
            char *b2 = realloc(b, cap *= 2);
            if (!b2) {
                free(b);
                b = NULL;
            }
            b = b2;
        }
    }
    fclose(f);
    if (!b) {
        seterr(err, errsz, "out of memory reading %s", path);
        return NULL;
    }
    b[n] = 0;
    return b;
}

static int is_dir(const char *p) {
    struct stat st;
    return p && !stat(p, &st) && S_ISDIR(st.st_mode);
}

#ifndef G4V_HAVE_CHAT_JINJA /* built without a C++ compiler (cmake/ChatJinja.cmake) */
static chat_jinja *chat_jinja_compile(const char *source, char *err, size_t errsz) {
    (void)source;
    seterr(err, errsz, "this g4v was built without a Jinja engine (no C++ compiler): give "
                       "--chat-template builtin for g4v's own Gemma 4 format");
    return NULL;
}
static char *chat_jinja_render(const chat_jinja *t, const char *c, char *err, size_t errsz) {
    (void)t;
    (void)c;
    seterr(err, errsz, "no Jinja engine");
    return NULL;
}
static void chat_jinja_free(chat_jinja *t) { (void)t; }
#endif

static int compile(chat_template *t, const char *src, const char *origin, char *err,
                   size_t errsz) {
    char msg[1024];
    t->jinja = chat_jinja_compile(src, msg, sizeof msg);
    if (!t->jinja) {
        seterr(err, errsz, "the chat template (%s) does not compile: %s", origin, msg);
        return -1;
    }
    snprintf(t->origin, sizeof t->origin, "%.590s", origin);
    /* The July 2026 templates match a tool's result to its call by tool_call_id; the older ones
     * know no role "tool" (llama.cpp's chat.cpp tells them apart the same way, by a marker). */
    t->tool_role = strstr(src, "tool_call_id") != NULL;
    return 0;
}

static int compile_file(chat_template *t, const char *path, char *err, size_t errsz) {
    char *src = read_file(path, err, errsz);
    if (!src) return -1;
    char origin[4200];
    snprintf(origin, sizeof origin, "file %.4000s", path);
    int rc = compile(t, src, origin, err, errsz);
    free(src);
    return rc;
}

int chat_template_init(chat_template *t, const struct llama_model *model, const char *override,
                       const char *hf_dir, char *err, size_t errsz) {
    memset(t, 0, sizeof *t);
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    char piece[64];
    int n = llama_token_to_piece(vocab, llama_vocab_bos(vocab), piece, (int32_t)sizeof piece - 1,
                                 0, true);
    t->bos_text = xstrdup(n > 0 ? (piece[n] = 0, piece) : "");
    if (!t->bos_text) goto oom;
    if (override && strcmp(override, "builtin")) return compile_file(t, override, err, errsz);
    const char *gguf = override ? NULL : llama_model_chat_template(model, NULL);
    if (gguf && *gguf) return compile(t, gguf, "the text model's tokenizer.chat_template", err, errsz);
    if (!override && is_dir(hf_dir)) {
        char path[4096];
        snprintf(path, sizeof path, "%s/chat_template.jinja", hf_dir);
        struct stat st;
        if (!stat(path, &st)) return compile_file(t, path, err, errsz);
    }
    /* ours: E2B/E4B (per-layer inputs) leave the thought block out, 26B/31B write it empty */
    char v[32];
    t->builtin = 1;
    t->empty_thought =
        llama_model_meta_val_str(model, "gemma4.embedding_length_per_layer_input", v, sizeof v) < 0 ||
        atoi(v) <= 0;
    snprintf(t->origin, sizeof t->origin, "built-in Gemma 4 format (%s family)",
             t->empty_thought ? "26B/31B" : "E2B/E4B");
    return 0;
oom:
    seterr(err, errsz, "out of memory");
    return -1;
}

static void msg_free(chat_msg *m) {
    free(m->text);
    free(m->reasoning);
    free(m->tool_calls);
    free(m->tool_call_id);
    for (int k = 0; k < m->n_parts; k++)
        free(m->parts[k].text);
    free(m->parts);
}

void chat_template_reset(chat_template *t) {
    for (int i = 0; i < t->n_msgs; i++)
        msg_free(&t->msgs[i]);
    t->n_msgs = 0;
}

void chat_template_free(chat_template *t) {
    if (!t) return;
    chat_template_reset(t);
    free(t->msgs);
    free(t->tools);
    chat_jinja_free(t->jinja);
    free(t->bos_text);
    memset(t, 0, sizeof *t);
}

static chat_msg *push_msg(chat_template *t) {
    if (t->n_msgs == t->cap_msgs) {
        int cap = t->cap_msgs ? 2 * t->cap_msgs : 8;
        chat_msg *v = realloc(t->msgs, (size_t)cap * sizeof *v);
        if (!v) return NULL;
        t->msgs = v;
        t->cap_msgs = cap;
    }
    chat_msg *m = &t->msgs[t->n_msgs];
    memset(m, 0, sizeof *m);
    return m; /* counted by the caller once filled */
}

int chat_template_add_user(chat_template *t, const chat_msg_part *parts, int n_parts) {
    chat_msg *m = push_msg(t);
    if (!m) return -1;
    m->parts = calloc((size_t)(n_parts > 0 ? n_parts : 1), sizeof *m->parts);
    if (!m->parts) return -1;
    for (int k = 0; k < n_parts; k++) {
        m->parts[m->n_parts].kind = parts[k].kind;
        m->parts[m->n_parts].medium = parts[k].medium;
        if (parts[k].kind == CHAT_PART_TEXT &&
            !(m->parts[m->n_parts].text = xstrdup(parts[k].text ? parts[k].text : ""))) {
            msg_free(m);
            return -1;
        }
        m->n_parts++;
    }
    t->n_msgs++;
    return 0;
}

int chat_template_add_answer(chat_template *t, const char *text, const char *reasoning) {
    chat_msg *m = push_msg(t);
    if (!m) return -1;
    m->assistant = 1;
    m->text = xstrdup(text ? text : "");
    m->reasoning = reasoning && *reasoning ? xstrdup(reasoning) : NULL;
    if (!m->text || (reasoning && *reasoning && !m->reasoning)) {
        msg_free(m);
        return -1;
    }
    t->n_msgs++;
    return 0;
}

int chat_template_add_tool_calls(chat_template *t, const char *text, const char *reasoning,
                                 const char *tool_calls) {
    if (chat_template_add_answer(t, text, reasoning)) return -1;
    chat_msg *m = &t->msgs[t->n_msgs - 1];
    if (tool_calls && !(m->tool_calls = xstrdup(tool_calls))) {
        chat_template_pop(t);
        return -1;
    }
    return 0;
}

int chat_template_add_tool_result(chat_template *t, const char *tool_call_id,
                                  const char *content) {
    chat_msg *m = push_msg(t);
    if (!m) return -1;
    m->tool = 1;
    m->text = xstrdup(content ? content : "");
    m->tool_call_id = tool_call_id ? xstrdup(tool_call_id) : NULL;
    if (!m->text || (tool_call_id && !m->tool_call_id)) {
        msg_free(m);
        return -1;
    }
    t->n_msgs++;
    return 0;
}

int chat_template_add_system(chat_template *t, const char *text) {
    chat_msg *m = push_msg(t);
    if (!m) return -1;
    m->system = 1;
    if (!(m->text = xstrdup(text ? text : ""))) return -1;
    t->n_msgs++;
    return 0;
}

int chat_template_set_tools(chat_template *t, const char *tools) {
    free(t->tools);
    t->tools = NULL;
    return tools && !(t->tools = xstrdup(tools)) ? -1 : 0;
}

void chat_template_pop(chat_template *t) {
    if (t->n_msgs) msg_free(&t->msgs[--t->n_msgs]);
}

/* ---- our rendering ---------------------------------------------------------------------- */

/* A growing string; ok turns 0 once an allocation failed. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
    int ok;
} sbuf;

static void put_n(sbuf *b, const char *s, size_t n) {
    if (!b->ok) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (b->n + n + 1 > cap) cap *= 2;
        char *v = realloc(b->s, cap);
        if (!v) {
            b->ok = 0;
            return;
        }
        b->s = v;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void put(sbuf *b, const char *s) { put_n(b, s, strlen(s)); }

/* Length of the whitespace character at s (Python's str.isspace, which Jinja's |trim uses), or
 * 0. Only s[0..avail) is looked at. */
static size_t space_at(const unsigned char *s, size_t avail) {
    if (!avail) return 0;
    if ((*s >= 0x09 && *s <= 0x0d) || (*s >= 0x1c && *s <= 0x20)) return 1;
    uint32_t c;
    size_t k;
    if ((*s & 0xe0) == 0xc0 && avail >= 2) {
        c = ((uint32_t)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
        k = 2;
    } else if ((*s & 0xf0) == 0xe0 && avail >= 3) {
        c = ((uint32_t)(s[0] & 0x0f) << 12) | ((uint32_t)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
        k = 3;
    } else {
        return 0;
    }
    int sp = c == 0x85 || c == 0xa0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200a) ||
             c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
    return sp ? k : 0;
}

/* Jinja's |trim (Python's str.strip()): [*start, *start + *len) without the whitespace. */
static void trim_span(const char *s, size_t *start, size_t *len) {
    const unsigned char *u = (const unsigned char *)s;
    size_t a = 0, z = strlen(s), k;
    while (a < z && (k = space_at(u + a, z - a))) a += k;
    for (;;) { /* the last character: step back over UTF-8 continuation bytes */
        if (z <= a) break;
        size_t b = z - 1;
        while (b > a && (u[b] & 0xc0) == 0x80 && z - b < 3) b--;
        k = space_at(u + b, z - b);
        if (k && b + k == z) {
            z = b;
            continue;
        }
        break;
    }
    *start = a;
    *len = z - a;
}

static void put_trimmed(sbuf *b, const char *s) {
    size_t a, n;
    trim_span(s, &a, &n);
    put_n(b, s + a, n);
}

/* The template's strip_thinking: each "<|channel>...<channel|>" block out, then trimmed. */
static void put_stripped(sbuf *b, const char *s) {
    sbuf t = {.ok = 1};
    put(&t, "");
    const char *open = "<|channel>", *close = "<channel|>";
    for (const char *p = s;;) {
        const char *e = strstr(p, close);
        size_t len = e ? (size_t)(e - p) : strlen(p);
        const char *o = NULL;
        for (const char *q = p; (q = strstr(q, open)) && q < p + len; q++) {
            o = q;
            break;
        }
        put_n(&t, p, o ? (size_t)(o - p) : len);
        if (!e) break;
        p = e + strlen(close);
    }
    if (!t.ok) {
        b->ok = 0;
    } else {
        put_trimmed(b, t.s);
    }
    free(t.s);
}

char *chat_template_render_builtin(const chat_template *t, const char *system,
                                   int enable_thinking, int add_generation_prompt) {
    sbuf b = {.ok = 1};
    put(&b, "");
    if (enable_thinking || system) {
        put(&b, "<|turn>system\n");
        if (enable_thinking) put(&b, "<|think|>\n");
        if (system) put_trimmed(&b, system);
        put(&b, "<turn|>\n");
    }
    int last_user = -1;
    for (int i = 0; i < t->n_msgs; i++)
        if (!t->msgs[i].assistant && !t->msgs[i].system) last_user = i;
    for (int i = 0; i < t->n_msgs; i++) {
        const chat_msg *m = &t->msgs[i];
        if (m->system) { /* a system turn of its own, as the official templates write it */
            put(&b, "<|turn>system\n");
            put_trimmed(&b, m->text);
            put(&b, "<turn|>\n");
            continue;
        }
        /* an answer right after an answer continues the same model turn */
        if (!(m->assistant && i > 0 && t->msgs[i - 1].assistant))
            put(&b, m->assistant ? "<|turn>model\n" : "<|turn>user\n");
        if (m->assistant && m->reasoning && i > last_user) {
            put(&b, "<|channel>thought\n");
            put(&b, m->reasoning);
            put(&b, "\n<channel|>");
        }
        if (m->assistant) {
            put_stripped(&b, m->text);
        } else { /* the parts in order: each text trimmed, each medium a placeholder */
            for (int k = 0; k < m->n_parts; k++) {
                if (m->parts[k].kind == CHAT_PART_TEXT)
                    put_trimmed(&b, m->parts[k].text);
                else
                    put(&b, CHAT_MEDIA_MARKER);
            }
        }
        if (!(m->assistant && i + 1 < t->n_msgs && t->msgs[i + 1].assistant))
            put(&b, "<turn|>\n");
    }
    if (add_generation_prompt) {
        put(&b, "<|turn>model\n");
        if (t->empty_thought && !enable_thinking) put(&b, "<|channel>thought\n<channel|>");
    }
    if (!b.ok) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

/* ---- the model's template -------------------------------------------------------------- */

/* A tool's result as the older templates take it: {name, response} in tool_responses of the
 * answer that called (the name is its call's: by tool_call_id, else by position; the content as
 * JSON when it parses as an object, else the text), as llama.cpp renders them. */
static int fold_tool_result(cJSON *answer, const cJSON *calls, const chat_msg *x) {
    cJSON *list = cJSON_GetObjectItemCaseSensitive(answer, "tool_responses");
    if (!list && !(list = cJSON_AddArrayToObject(answer, "tool_responses"))) return 0;
    int k = cJSON_GetArraySize(list), i = 0;
    const char *name = NULL;
    for (const cJSON *c = calls ? calls->child : NULL; c; c = c->next, i++) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(fn, "name");
        int by_id = x->tool_call_id && cJSON_IsString(id) && !strcmp(id->valuestring, x->tool_call_id);
        if (cJSON_IsString(nm) && (by_id || (!name && i == k))) name = nm->valuestring;
        if (by_id) break;
    }
    cJSON *r = cJSON_CreateObject();
    if (!r || !cJSON_AddItemToArray(list, r)) {
        cJSON_Delete(r);
        return 0;
    }
    cJSON *v = fe_json_parse_text(x->text, strlen(x->text), NULL);
    if (!cJSON_IsObject(v)) {
        cJSON_Delete(v);
        v = cJSON_CreateString(x->text);
    }
    return v && cJSON_AddStringToObject(r, "name", name ? name : "unknown") &&
           cJSON_AddItemToObject(r, "response", v);
}

/* The context transformers gives the template, as JSON text. */
static char *context_json(const chat_template *t, const char *system, int enable_thinking,
                          int add_generation_prompt) {
    cJSON *c = cJSON_CreateObject(), *msgs = cJSON_AddArrayToObject(c, "messages");
    int ok = c && msgs;
    if (ok && system) {
        cJSON *m = cJSON_CreateObject();
        ok = m && cJSON_AddItemToArray(msgs, m) && cJSON_AddStringToObject(m, "role", "system") &&
             cJSON_AddStringToObject(m, "content", system);
    }
    cJSON *calls = NULL; /* the tool calls of the answer the next tool results answer */
    cJSON *folded = NULL; /* older templates: that answer, which takes them as tool_responses */
    for (int i = 0; ok && i < t->n_msgs; i++) {
        const chat_msg *x = &t->msgs[i];
        if (x->tool && !t->tool_role) { /* folded into the answer that called */
            if (!folded) continue; /* a result without a call: nothing renders it */
            ok = fold_tool_result(folded, calls, x);
            continue;
        }
        if (x->assistant && !x->tool_calls && folded && x->text[0]) { /* its final words */
            cJSON_DeleteItemFromObjectCaseSensitive(folded, "content");
            ok = cJSON_AddStringToObject(folded, "content", x->text) != NULL;
            folded = NULL;
            continue;
        }
        if (!x->tool) folded = NULL;
        cJSON *m = cJSON_CreateObject();
        ok = m && cJSON_AddItemToArray(msgs, m) &&
             cJSON_AddStringToObject(m, "role", x->tool        ? "tool"
                                                : x->assistant ? "assistant"
                                                : x->system    ? "system"
                                                               : "user");
        if (!ok) break;
        if (x->system) {
            ok = cJSON_AddStringToObject(m, "content", x->text) != NULL;
        } else if (x->tool) {
            ok = cJSON_AddStringToObject(m, "content", x->text) &&
                 (!x->tool_call_id ||
                  cJSON_AddStringToObject(m, "tool_call_id", x->tool_call_id));
        } else if (x->assistant) {
            ok = cJSON_AddStringToObject(m, "content", x->text) != NULL;
            if (ok && x->tool_calls) {
                cJSON *tc = fe_json_parse_text(x->tool_calls, strlen(x->tool_calls), NULL);
                ok = tc && cJSON_AddItemToObject(m, "tool_calls", tc);
                if (!ok) cJSON_Delete(tc);
                calls = tc;
                if (ok && !t->tool_role) folded = m;
            }
        } else if (x->n_parts == 1 && x->parts[0].kind == CHAT_PART_TEXT) { /* as a string */
            ok = cJSON_AddStringToObject(m, "content", x->parts[0].text) != NULL;
        } else { /* content parts, in order */
            cJSON *parts = cJSON_AddArrayToObject(m, "content");
            ok = parts != NULL;
            for (int k = 0; ok && k < x->n_parts; k++) {
                const chat_msg_part *q = &x->parts[k];
                cJSON *p = cJSON_CreateObject();
                ok = p && cJSON_AddItemToArray(parts, p);
                if (!ok) break;
                if (q->kind != CHAT_PART_TEXT)
                    ok = cJSON_AddStringToObject(p, "type", fe_medium_name(q->medium)) != NULL;
                else
                    ok = cJSON_AddStringToObject(p, "type", "text") &&
                         cJSON_AddStringToObject(p, "text", q->text);
            }
        }
        /* an answer's thought under each name transformers gives it (_alias_reasoning_fields) */
        if (ok && x->assistant && x->reasoning)
            ok = cJSON_AddStringToObject(m, "thinking", x->reasoning) &&
                 cJSON_AddStringToObject(m, "reasoning_content", x->reasoning);
    }
    cJSON *tools = ok && t->tools ? fe_json_parse_text(t->tools, strlen(t->tools), NULL) : NULL;
    if (tools)
        ok = cJSON_AddItemToObject(c, "tools", tools);
    else
        ok = ok && !t->tools && cJSON_AddNullToObject(c, "tools");
    ok = ok && cJSON_AddNullToObject(c, "documents") &&
         cJSON_AddBoolToObject(c, "add_generation_prompt", add_generation_prompt) &&
         cJSON_AddBoolToObject(c, "enable_thinking", enable_thinking) &&
         cJSON_AddStringToObject(c, "bos_token", t->bos_text) &&
         cJSON_AddStringToObject(c, "eos_token", "<eos>");
    char *s = ok ? cJSON_PrintUnformatted(c) : NULL;
    cJSON_Delete(c);
    return s;
}

const char *chat_medium_placeholder(fe_medium m) {
    static const char *const placeholder[FE_MEDIUM_COUNT] = {
        [FE_MEDIUM_IMAGE] = "<|image|>",
        [FE_MEDIUM_VIDEO] = "<|video|>",
    };
    return (unsigned)m < FE_MEDIUM_COUNT ? placeholder[m] : NULL;
}

/* The media placeholders of the template's output, in order, as CHAT_MEDIA_MARKER; each must be
 * the kind of the next medium of the conversation. */
static char *mark_media(const chat_template *t, const char *out, char *err, size_t errsz) {
    int total = 0;
    for (int i = 0; i < t->n_msgs; i++)
        for (int j = 0; j < t->msgs[i].n_parts; j++) total += t->msgs[i].parts[j].kind != CHAT_PART_TEXT;
    fe_medium *kinds = malloc((size_t)(total ? total : 1) * sizeof *kinds);
    if (!kinds) goto oom;
    int k = 0;
    for (int i = 0; i < t->n_msgs; i++)
        for (int j = 0; j < t->msgs[i].n_parts; j++)
            if (t->msgs[i].parts[j].kind != CHAT_PART_TEXT)
                kinds[k++] = t->msgs[i].parts[j].medium;
    sbuf b = {.ok = 1};
    put(&b, "");
    int seen = 0;
    for (const char *p = out;;) {
        /* the first placeholder of any kind */
        const char *hit = NULL;
        fe_medium kind = FE_MEDIUM_IMAGE;
        for (int m = 0; m < FE_MEDIUM_COUNT; m++) {
            const char *x = strstr(p, chat_medium_placeholder((fe_medium)m));
            if (x && (!hit || x < hit)) {
                hit = x;
                kind = (fe_medium)m;
            }
        }
        if (!hit) {
            put(&b, p);
            break;
        }
        if (seen >= total || kinds[seen] != kind) {
            seterr(err, errsz,
                   "the prompt holds more %s placeholders than media given, or in another "
                   "order: a text may not hold \"%s\" itself",
                   fe_medium_name(kind), chat_medium_placeholder(kind));
            free(b.s);
            free(kinds);
            return NULL;
        }
        put_n(&b, p, (size_t)(hit - p));
        put(&b, CHAT_MEDIA_MARKER);
        seen++;
        p = hit + strlen(chat_medium_placeholder(kind));
    }
    free(kinds);
    if (!b.ok) {
        free(b.s);
        goto oom;
    }
    if (seen != total) {
        seterr(err, errsz, "the chat template (%s) rendered %d of the %d media", t->origin, seen,
               total);
        free(b.s);
        return NULL;
    }
    return b.s;
oom:
    seterr(err, errsz, "out of memory");
    return NULL;
}

char *chat_template_render(const chat_template *t, const char *system, int enable_thinking,
                           int add_generation_prompt, char *err, size_t errsz) {
    if (t->builtin) {
        int tools = t->tools != NULL;
        for (int i = 0; i < t->n_msgs; i++) tools |= t->msgs[i].tool || t->msgs[i].tool_calls;
        if (tools) {
            seterr(err, errsz, "tools, tool calls and tool results need the model's own chat "
                               "template (Gemma 4's tool format is the template's); these files "
                               "carry none: give one with --chat-template FILE");
            return NULL;
        }
        char *s = chat_template_render_builtin(t, system, enable_thinking, add_generation_prompt);
        if (!s) seterr(err, errsz, "out of memory");
        return s;
    }
    char *ctx = context_json(t, system, enable_thinking, add_generation_prompt);
    if (!ctx) {
        seterr(err, errsz, "out of memory");
        return NULL;
    }
    char msg[512];
    char *out = chat_jinja_render(t->jinja, ctx, msg, sizeof msg);
    free(ctx);
    if (!out) {
        seterr(err, errsz, "the chat template (%s): %s", t->origin, msg);
        return NULL;
    }
    /* BOS is added by the tokenizer (as transformers' processor tokenizes the rendering with
     * add_special_tokens=False after a template that writes bos_token: the same ids) */
    size_t nb = strlen(t->bos_text);
    const char *body = nb && !strncmp(out, t->bos_text, nb) ? out + nb : out;
    char *marked = mark_media(t, body, err, errsz);
    free(out);
    return marked;
}
