/* chat_tool_parse.c - Gemma 4 tool calls read back from the model's text (chat_tool_call.h):
 * <|tool_call>call:NAME{key:VALUE,...}<tool_call|> -> NAME and the arguments as JSON text.
 * The JSON is written directly (not through cJSON) so numbers keep the digits the model wrote
 * and keys their order. Strings between <|"|> are raw text: JSON-escaped here, invalid UTF-8
 * replaced (fe_utf8_copy), since OpenAI's function.arguments must be valid JSON text. */
#include "chat_tool_call.h"
#include "chat_error.h"
#include "frontend.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char QUOTE[] = "<|\"|>";
static const char CALL_OPEN[] = "<|tool_call>";
static const char CALL_CLOSE[] = "<tool_call|>";
static const char TURN_END[] = "<|tool_response>";
#define LIT(s) (sizeof(s) - 1)

typedef struct jbuf {
    char *s;
    size_t n, cap;
    int oom;
} jbuf;

static void jb_put(jbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 128) + n;
        char *p = realloc(b->s, cap);
        if (!p) { b->oom = 1; return; }
        b->s = p, b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}


/* s[0..n) as a JSON string (UTF-8 made valid first). */
static void jb_json_string(jbuf *b, const char *s, size_t n) {
    char *u = fe_utf8_copy(s, n);
    if (!u) { b->oom = 1; return; }
    jb_put(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)u; *c; c++) {
        char esc[8];
        switch (*c) {
        case '"': jb_put(b, "\\\"", 2); break;
        case '\\': jb_put(b, "\\\\", 2); break;
        case '\n': jb_put(b, "\\n", 2); break;
        case '\r': jb_put(b, "\\r", 2); break;
        case '\t': jb_put(b, "\\t", 2); break;
        case '\b': jb_put(b, "\\b", 2); break;
        case '\f': jb_put(b, "\\f", 2); break;
        default:
            if (*c < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *c);
                jb_put(b, esc, 6);
            } else {
                jb_put(b, (const char *)c, 1);
            }
        }
    }
    jb_put(b, "\"", 1);
    free(u);
}

typedef struct parser {
    const char *p, *end;
    jbuf out;
    char *err;
    size_t errsz;
    const char *name; /* the call being read, for messages */
} parser;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int perr(parser *ps, const char *fmt, ...) {
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    seterr(ps->err, ps->errsz, "the tool call to \"%s\" is malformed: %s", ps->name, msg);
    return -1;
}

static int starts(const parser *ps, const char *lit, size_t n) {
    return (size_t)(ps->end - ps->p) >= n && !memcmp(ps->p, lit, n);
}

static const char *find(const char *p, const char *end, const char *lit, size_t n) {
    for (; (size_t)(end - p) >= n; p++)
        if (*p == *lit && !memcmp(p, lit, n)) return p;
    return NULL;
}

/* A JSON number (what Python's str() of an int or a finite float also is: 1e-05, 1.5e+20). */
static int number(parser *ps) {
    const char *s = ps->p, *q = s;
    if (q < ps->end && *q == '-') q++;
    if (q < ps->end && *q == '0') q++;
    else if (q < ps->end && *q >= '1' && *q <= '9')
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
    else return perr(ps, "a value at \"%.16s\" is not a string, number, object or array", s);
    if (q < ps->end && *q == '.') {
        const char *d = ++q;
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
        if (q == d) return perr(ps, "the number \"%.*s\" has no digits after the point", (int)(q - s), s);
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < ps->end && (*q == '+' || *q == '-')) q++;
        const char *d = q;
        while (q < ps->end && *q >= '0' && *q <= '9') q++;
        if (q == d) return perr(ps, "the number \"%.*s\" has no exponent digits", (int)(q - s), s);
    }
    jb_put(&ps->out, s, (size_t)(q - s));
    ps->p = q;
    return 0;
}

static int value(parser *ps, int depth);

/* A key: bare up to ':', or between <|"|> (format_argument's escape_keys). */
static int key(parser *ps) {
    if (starts(ps, QUOTE, LIT(QUOTE))) {
        const char *s = ps->p + LIT(QUOTE), *e = find(s, ps->end, QUOTE, LIT(QUOTE));
        if (!e) return perr(ps, "a key's string is not closed with <|\"|>");
        jb_json_string(&ps->out, s, (size_t)(e - s));
        ps->p = e + LIT(QUOTE);
    } else {
        const char *s = ps->p, *q = s;
        while (q < ps->end && !strchr(":,{}[]<", *q)) q++;
        if (q == s) return perr(ps, "a key is missing at \"%.16s\"", s);
        jb_json_string(&ps->out, s, (size_t)(q - s));
        ps->p = q;
    }
    if (ps->p >= ps->end || *ps->p != ':') return perr(ps, "a key is not followed by ':'");
    ps->p++;
    jb_put(&ps->out, ":", 1);
    return 0;
}

static int container(parser *ps, int depth, char open, char close) {
    if (depth >= CHAT_TOOL_ARGS_MAX_DEPTH)
        return perr(ps, "the arguments nest deeper than %d levels", CHAT_TOOL_ARGS_MAX_DEPTH);
    jb_put(&ps->out, &open, 1);
    ps->p++;
    if (ps->p < ps->end && *ps->p == close) {
        jb_put(&ps->out, &close, 1);
        ps->p++;
        return 0;
    }
    for (;;) {
        if (open == '{' && key(ps)) return -1;
        if (value(ps, depth + 1)) return -1;
        if (ps->p >= ps->end) return perr(ps, "the arguments end before '%c'", close);
        if (*ps->p == ',') {
            jb_put(&ps->out, ",", 1);
            ps->p++;
        } else if (*ps->p == close) {
            jb_put(&ps->out, &close, 1);
            ps->p++;
            return 0;
        } else {
            return perr(ps, "expected ',' or '%c' at \"%.16s\"", close, ps->p);
        }
    }
}

static int value(parser *ps, int depth) {
    if (ps->p >= ps->end) return perr(ps, "a value is missing at the end");
    if (starts(ps, QUOTE, LIT(QUOTE))) {
        const char *s = ps->p + LIT(QUOTE), *e = find(s, ps->end, QUOTE, LIT(QUOTE));
        if (!e) return perr(ps, "a string is not closed with <|\"|>");
        jb_json_string(&ps->out, s, (size_t)(e - s));
        ps->p = e + LIT(QUOTE);
        return 0;
    }
    if (*ps->p == '{') return container(ps, depth, '{', '}');
    if (*ps->p == '[') return container(ps, depth, '[', ']');
    /* Python's spellings too: the first Gemma 4 template writes a nested null as None */
    static const char *const WORDS[] = {"true", "false", "null", "None", "True", "False"};
    static const char *const JSON[] = {"true", "false", "null", "null", "true", "false"};
    for (int i = 0; i < 6; i++) {
        size_t n = strlen(WORDS[i]);
        if (starts(ps, WORDS[i], n)) {
            jb_put(&ps->out, JSON[i], strlen(JSON[i]));
            ps->p += n;
            return 0;
        }
    }
    return number(ps);
}

static int add_call(chat_tool_call **calls, int *n, int *cap, char *name, char *args) {
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 4;
        chat_tool_call *p = realloc(*calls, (size_t)c * sizeof *p);
        if (!p) return -1;
        *calls = p, *cap = c;
    }
    (*calls)[*n].name = name;
    (*calls)[(*n)++].arguments_json = args;
    return 0;
}

int chat_tool_call_partial(const char *text, size_t len, char **name, char **args) {
    const char *p = text, *end = text + len;
    *name = *args = NULL;
    if ((size_t)(end - p) >= LIT(CALL_OPEN) && !memcmp(p, CALL_OPEN, LIT(CALL_OPEN)))
        p += LIT(CALL_OPEN);
    if ((size_t)(end - p) >= 5 && !memcmp(p, "call:", 5)) p += 5;
    const char *nm = p;
    while (p < end && *p != '{') p++;
    jbuf b = {0};
    jb_put(&b, "", 0);
    char stack[64]; /* '{' or '[' of each open level (deeper ones are copied as they are) */
    int depth = 0, want_key = 0;
    while (p < end && !b.oom) {
        if ((size_t)(end - p) >= LIT(QUOTE) && !memcmp(p, QUOTE, LIT(QUOTE))) { /* a string */
            const char *a = p + LIT(QUOTE), *z = a;
            while (z < end && !((size_t)(end - z) >= LIT(QUOTE) && !memcmp(z, QUOTE, LIT(QUOTE))))
                z++;
            size_t at = b.n;
            jb_json_string(&b, a, (size_t)(z - a));
            if (z >= end) { /* cut inside it: no closing quote */
                if (!b.oom && b.n > at) b.s[--b.n] = 0;
                break;
            }
            p = z + LIT(QUOTE);
            continue;
        }
        char c = *p;
        if (want_key && c != '}') { /* a bare key up to ':' */
            const char *k = p;
            while (p < end && *p != ':') p++;
            size_t at = b.n;
            jb_json_string(&b, k, (size_t)(p - k));
            if (p >= end) {
                if (!b.oom && b.n > at) b.s[--b.n] = 0;
                break;
            }
            jb_put(&b, ":", 1);
            p++;
            want_key = 0;
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth < (int)sizeof stack) stack[depth] = c;
            depth++;
            want_key = c == '{';
        } else if (c == '}' || c == ']') {
            if (depth > 0) depth--;
            want_key = 0;
        } else if (c == ',') {
            want_key = depth > 0 && depth <= (int)sizeof stack && stack[depth - 1] == '{';
        }
        jb_put(&b, p, 1);
        p++;
        if (depth == 0) break; /* the arguments' object closed */
    }
    size_t nl = (size_t)((nm < end ? (p > nm ? p : nm) : end) - nm);
    const char *brace = memchr(nm, '{', (size_t)(end - nm));
    if (brace) nl = (size_t)(brace - nm);
    *name = fe_utf8_copy(nm, nl);
    *args = b.oom ? NULL : b.s;
    if (b.oom) free(b.s);
    if (!*name || !*args) {
        free(*name);
        free(*args);
        *name = *args = NULL;
        return -1;
    }
    return 0;
}

int chat_tool_calls_parse(const char *text, size_t len, chat_tool_call **calls, int *n,
                          char **content_out, char *err, size_t errsz) {
    chat_tool_call *out = NULL;
    int count = 0, cap = 0, rc = 0;
    jbuf content = {0};
    if (calls) *calls = NULL;
    if (n) *n = 0;
    if (content_out) *content_out = NULL;
    if (!text || !calls || !n) {
        seterr(err, errsz, "no text");
        return -1;
    }
    const char *end = find(text, text + len, TURN_END, LIT(TURN_END));
    if (!end) end = text + len;
    jb_put(&content, "", 0);
    for (const char *p = text; p < end && !rc;) {
        const char *c = find(p, end, CALL_OPEN, LIT(CALL_OPEN));
        jb_put(&content, p, (size_t)((c ? c : end) - p));
        if (!c) break;
        parser ps = {c + LIT(CALL_OPEN), end, {0}, err, errsz, "?"};
        if (!starts(&ps, "call:", 5)) {
            seterr(err, errsz, "a tool call does not start with \"call:\" after <|tool_call>");
            rc = -1;
            break;
        }
        const char *nm = ps.p += 5;
        while (ps.p < end && *ps.p != '{' && ps.p - nm <= CHAT_TOOL_NAME_MAX) ps.p++;
        char *name = fe_utf8_copy(nm, (size_t)(ps.p - nm));
        ps.name = name ? name : "?";
        if (!name || ps.p >= end || *ps.p != '{' || ps.p == nm) {
            rc = name ? perr(&ps, "the function's name is not followed by its {arguments}") : -1;
            free(name);
            break;
        }
        if (container(&ps, 0, '{', '}') || ps.out.oom) {
            if (ps.out.oom) seterr(err, errsz, "out of memory");
            free(ps.out.s), free(name);
            rc = -1;
            break;
        }
        if (!starts(&ps, CALL_CLOSE, LIT(CALL_CLOSE))) {
            rc = perr(&ps, "the arguments are not followed by <tool_call|>");
            free(ps.out.s), free(name);
            break;
        }
        if (add_call(&out, &count, &cap, name, ps.out.s)) {
            seterr(err, errsz, "out of memory");
            free(ps.out.s), free(name);
            rc = -1;
            break;
        }
        p = ps.p + LIT(CALL_CLOSE);
    }
    if (!rc && content.oom) {
        seterr(err, errsz, "out of memory");
        rc = -1;
    }
    char *ctext = NULL;
    if (!rc && content_out && !(ctext = fe_utf8_copy(content.s, content.n))) {
        seterr(err, errsz, "out of memory");
        rc = -1;
    }
    free(content.s);
    if (rc) {
        chat_tool_calls_free(out, count);
        return -1;
    }
    if (content_out) *content_out = ctext;
    *calls = out;
    *n = count;
    return 0;
}

void chat_tool_calls_free(chat_tool_call *calls, int n) {
    for (int i = 0; i < n && calls; i++) {
        free(calls[i].name);
        free(calls[i].arguments_json);
    }
    free(calls);
}
