/* chat_tool_call.c - the request's tools checked, and the GBNF grammar of Gemma 4 calls to them
 * (chat_tool_call.h). Our own generator: llama.cpp's converter writes JSON, and Gemma's call
 * syntax is not JSON (bare keys, <|"|> strings).
 *
 * Special tokens against text: llama.cpp's grammar matches each token's text, and a special
 * token's text is its name (<|"|> is the five characters < | " | >), so a character rule like
 * "any text" would also take special tokens. The grammar therefore names the structural tokens
 * as tokens (<|tool_call>, <|"|>: exactly that token, not its characters spelled by ordinary
 * tokens), and a string's content is text that does not contain the characters <|"|> at all
 * (g-text): neither the special token nor ordinary tokens spelling it, so the parser, which
 * reads text, ends the string where the grammar did. Other special tokens may appear in a
 * string as their text. A thought's content is any token but <channel|> (!<channel|>): the
 * thought is split off by token id (chat_thought.c), not by text. */
#include "chat_tool_call.h"
#include "chat_error.h"
#include "chat_grammar.h"
#include "frontend.h"

#include <cjson/cJSON.h>

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct sbuf {
    char *s;
    size_t n, cap;
    int oom;
} sbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf(sbuf *b, const char *fmt, ...) {
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) { b->oom = 1; return; }
        if (b->s && b->n + (size_t)k < b->cap) { b->n += (size_t)k; return; }
        size_t cap = (b->cap ? b->cap : 256) * 2 + (size_t)k;
        char *s = realloc(b->s, cap);
        if (!s) { b->oom = 1; return; }
        b->s = s, b->cap = cap;
    }
}

/* A GBNF literal: "..." with ", \ and control characters escaped (UTF-8 passes as is). */
static void sb_literal(sbuf *b, const char *s) {
    sb_printf(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') sb_printf(b, "\\%c", c);
        else if (c == '\n') sb_printf(b, "\\n");
        else if (c == '\r') sb_printf(b, "\\r");
        else if (c == '\t') sb_printf(b, "\\t");
        else if (c < 0x20 || c == 0x7f) sb_printf(b, "\\x%02X", c);
        else sb_printf(b, "%c", c);
    }
    sb_printf(b, "\"");
}

/* The Gemma value of any type, and its parts (always in the grammar; rules are named g-*). */
static const char GENERIC_RULES[] =
    "g-value ::= g-string | g-number | \"true\" | \"false\" | \"null\" | g-object | g-array\n"
    "g-string ::= <|\"|> g-text <|\"|>\n"
    /* text without <|"|> in it, also not spelled by ordinary tokens (nor the special token
     * itself, whose text it is): runs of "<" end either back in plain text or, cut short
     * before the quote's last character, only before another "<" or the closing token */
    "g-text ::= [^<]* g-run*\n"
    "g-run ::= \"<\"+ ( [^<|] [^<]* | \"|\" ( [^<\"] [^<]* | \"\\\"\" ( [^<|] [^<]* | "
    "\"|\" ( [^<>] [^<]* )? )? )? )\n"
    "g-integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{0,15} )\n"
    "g-number ::= g-integer ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?\n"
    "g-boolean ::= \"true\" | \"false\"\n"
    "g-key ::= [^\\x00-\\x20:,{}<>\\[\\]\"\\\\|]+\n"
    "g-object ::= \"{\" ( g-key \":\" g-value ( \",\" g-key \":\" g-value )* )? \"}\"\n"
    "g-array ::= \"[\" ( g-value ( \",\" g-value )* )? \"]\"\n";

typedef struct gen {
    sbuf *b;           /* the expression being written */
    sbuf *rules;       /* the rule definitions (nested rules are defined here, not inline) */
    const cJSON *root; /* the function's parameters: $ref resolves here */
    int next;          /* rule counter */
    const cJSON *ref_node[CHAT_SCHEMA_MAX_NODES];
    int ref_rule[CHAT_SCHEMA_MAX_NODES];
    int n_refs;
    int fn; /* the function's index, in rule names */
} gen;

/* A new rule's number: the rule is named "fF-N" (F the function's index). */
static int new_rule(gen *g) { return g->next++; }

static void rule_ref(gen *g, int r) { sb_printf(g->b, "f%d-%d", g->fn, r); }

static const cJSON *ref_target(const cJSON *root, const char *ref) {
    const char *where = NULL, *name = NULL;
    if (!strncmp(ref, "#/$defs/", 8)) where = "$defs", name = ref + 8;
    else if (!strncmp(ref, "#/definitions/", 14)) where = "definitions", name = ref + 14;
    if (!name) return NULL;
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, where), name);
}

/* Appends to g->b the expression of a value matching s. The rules it needs are defined in
 * g->rules; each one's body is collected in its own buffer first, so expressions can nest. */
static int gen_value(gen *g, const cJSON *s, int depth);

/* A rule whose body is the value expression of s; returns its number. */
static int gen_rule(gen *g, const cJSON *s, int depth) {
    int r = new_rule(g);
    sbuf body = {0};
    sbuf *outer = g->b;
    g->b = &body;
    int rc = gen_value(g, s, depth);
    g->b = outer;
    if (rc || body.oom) { free(body.s); return -1; }
    sb_printf(g->rules, "f%d-%d ::= %s\n", g->fn, r, body.s ? body.s : "\"\"");
    free(body.s);
    return r;
}

static int enum_literal(gen *g, const cJSON *v) {
    if (cJSON_IsString(v) && strstr(v->valuestring, "<|\"|>")) {
        sb_printf(g->b, "g-string"); /* a value the call syntax cannot hold: any string */
    } else if (cJSON_IsString(v)) {
        sb_printf(g->b, "<|\"|> ");
        sb_literal(g->b, v->valuestring);
        sb_printf(g->b, " <|\"|>");
    } else if (cJSON_IsNumber(v) || cJSON_IsBool(v) || cJSON_IsNull(v)) {
        char *t = cJSON_PrintUnformatted(v);
        if (!t) return -1;
        sb_literal(g->b, t);
        free(t);
    } else {
        sb_printf(g->b, "g-value"); /* an object or array value: any value (see the header) */
    }
    return 0;
}

typedef struct prop {
    const char *name;
    const cJSON *schema;
    int required, index;
} prop;

/* The template's dictsort: case-insensitive (Python's str.lower()), stable. */
static int prop_cmp(const void *a, const void *b) {
    const prop *x = a, *y = b;
    for (const unsigned char *p = (const unsigned char *)x->name,
                             *q = (const unsigned char *)y->name;; p++, q++) {
        int c = tolower(*p) - tolower(*q);
        if (c) return c;
        if (!*p) break;
    }
    return x->index - y->index;
}

static int in_required(const cJSON *req, const char *name) {
    const cJSON *r;
    cJSON_ArrayForEach(r, req) if (cJSON_IsString(r) && !strcmp(r->valuestring, name)) return 1;
    return 0;
}

/* {k:v,...} over the properties in sorted order, required ones present, optional ones not,
 * commas between: A_i (nothing written yet) and B_i (something written) for properties i.. */
static int gen_object(gen *g, const cJSON *s, int depth) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    int n = cJSON_GetArraySize(props);
    if (!cJSON_IsObject(props) || n == 0) {
        const cJSON *add = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
        sb_printf(g->b, cJSON_IsFalse(add) ? "\"{}\"" : "g-object");
        return 0;
    }
    prop *p = calloc((size_t)n, sizeof *p);
    int *kv = calloc((size_t)n, sizeof *kv);
    if (!p || !kv) { free(p); free(kv); return -1; }
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, props) {
        p[i].name = e->string, p[i].schema = e, p[i].required = in_required(req, e->string);
        p[i].index = i;
        i++;
    }
    qsort(p, (size_t)n, sizeof *p, prop_cmp);
    int rc = 0;
    for (i = 0; i < n && !rc; i++) { /* key:value of each property */
        int r = new_rule(g);
        sbuf body = {0};
        sbuf *outer = g->b;
        g->b = &body;
        sb_literal(g->b, p[i].name);
        sb_printf(g->b, " \":\" ");
        rc = gen_value(g, p[i].schema, depth + 1);
        g->b = outer;
        if (!rc && !body.oom) sb_printf(g->rules, "f%d-%d ::= %s\n", g->fn, r, body.s);
        else rc = -1;
        free(body.s);
        kv[i] = r;
    }
    if (rc) { free(p); free(kv); return -1; }
    /* A_i and B_i for i = n-1 .. 0; A_n, B_n are empty */
    int base = g->next;
    g->next += 2 * n;
    sbuf *outer = g->b;
    g->b = g->rules;
    for (i = n - 1; i >= 0; i--) {
        int a = base + 2 * i, bb = a + 1;
        int an = base + 2 * (i + 1), bn = an + 1;
        int last = i == n - 1;
        sb_printf(g->rules, "f%d-%d ::= ", g->fn, a);
        rule_ref(g, kv[i]);
        if (!last) sb_printf(g->b, " "), rule_ref(g, bn);
        if (!p[i].required) {
            sb_printf(g->b, " | ");
            if (last) sb_printf(g->b, "\"\"");
            else rule_ref(g, an);
        }
        sb_printf(g->b, "\n");
        sb_printf(g->rules, "f%d-%d ::= ", g->fn, bb);
        if (p[i].required) sb_printf(g->b, "\",\" "), rule_ref(g, kv[i]);
        else sb_printf(g->b, "( \",\" "), rule_ref(g, kv[i]), sb_printf(g->b, " )?");
        if (!last) sb_printf(g->b, " "), rule_ref(g, bn);
        sb_printf(g->b, "\n");
    }
    g->b = outer;
    sb_printf(g->b, "\"{\" ");
    rule_ref(g, base);
    sb_printf(g->b, " \"}\"");
    free(p);
    free(kv);
    return 0;
}

static int gen_array(gen *g, const cJSON *s, int depth) {
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(s, "minItems");
    if (!cJSON_IsObject(items)) {
        sb_printf(g->b, "g-array");
        return 0;
    }
    int it = gen_rule(g, items, depth + 1);
    if (it < 0) return -1;
    int need = cJSON_IsNumber(mn) && mn->valuedouble >= 1;
    /* maxItems bounds the repetition (the checked schema keeps it <= CHAT_SCHEMA_MAX_REPEAT) */
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(s, "maxItems");
    int max = cJSON_IsNumber(mx) && mx->valuedouble >= 0 && mx->valuedouble <= CHAT_SCHEMA_MAX_REPEAT
                  ? (int)mx->valuedouble
                  : -1;
    if (max == 0) {
        sb_printf(g->b, "\"[]\"");
        return 0;
    }
    sb_printf(g->b, need ? "\"[\" " : "\"[\" ( ");
    rule_ref(g, it);
    sb_printf(g->b, " ( \",\" ");
    rule_ref(g, it);
    if (max > 0)
        sb_printf(g->b, " ){0,%d}", max - 1);
    else
        sb_printf(g->b, " )*");
    sb_printf(g->b, need ? " \"]\"" : " )? \"]\"");
    return 0;
}

/* An integer between the schema's bounds when both are given and the range is small: its
 * values as alternatives (a wider range stays any integer, checked by the validator). */
enum { INT_RANGE_MAX = 256 };
static int gen_integer(gen *g, const cJSON *s) {
    const cJSON *lo = cJSON_GetObjectItemCaseSensitive(s, "minimum");
    const cJSON *hi = cJSON_GetObjectItemCaseSensitive(s, "maximum");
    const cJSON *xlo = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMinimum");
    const cJSON *xhi = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMaximum");
    double a = cJSON_IsNumber(lo) ? ceil(lo->valuedouble) : -1e300;
    double b = cJSON_IsNumber(hi) ? floor(hi->valuedouble) : 1e300;
    if (cJSON_IsNumber(xlo) && floor(xlo->valuedouble) + 1 > a) a = floor(xlo->valuedouble) + 1;
    if (cJSON_IsNumber(xhi) && ceil(xhi->valuedouble) - 1 < b) b = ceil(xhi->valuedouble) - 1;
    if (!(a <= b && b - a < INT_RANGE_MAX)) {
        sb_printf(g->b, "g-integer");
        return 0;
    }
    sb_printf(g->b, "( ");
    for (double v = a; v <= b; v++)
        sb_printf(g->b, "%s\"%.0f\"", v > a ? " | " : "", v);
    sb_printf(g->b, " )");
    return 0;
}

static int gen_typed(gen *g, const cJSON *s, const char *type, int depth) {
    if (!strcmp(type, "string")) sb_printf(g->b, "g-string");
    else if (!strcmp(type, "integer")) return gen_integer(g, s);
    else if (!strcmp(type, "number")) sb_printf(g->b, "g-number");
    else if (!strcmp(type, "boolean")) sb_printf(g->b, "g-boolean");
    else if (!strcmp(type, "null")) sb_printf(g->b, "\"null\"");
    else if (!strcmp(type, "object")) return gen_object(g, s, depth);
    else if (!strcmp(type, "array")) return gen_array(g, s, depth);
    else sb_printf(g->b, "g-value");
    return 0;
}

static int gen_value(gen *g, const cJSON *s, int depth) {
    if (depth > CHAT_SCHEMA_MAX_DEPTH * 2 || !cJSON_IsObject(s)) {
        sb_printf(g->b, "g-value");
        return 0;
    }
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    if (cJSON_IsString(ref)) {
        const cJSON *t = ref_target(g->root, ref->valuestring);
        if (!t) { sb_printf(g->b, "g-value"); return 0; }
        for (int i = 0; i < g->n_refs; i++)
            if (g->ref_node[i] == t) { rule_ref(g, g->ref_rule[i]); return 0; }
        if (g->n_refs >= CHAT_SCHEMA_MAX_NODES) return -1;
        /* named before its body is generated, so a recursive $ref finds it */
        int r = new_rule(g);
        int slot = g->n_refs++;
        g->ref_node[slot] = t, g->ref_rule[slot] = r;
        sbuf body = {0};
        sbuf *outer = g->b;
        g->b = &body;
        int rc = gen_value(g, t, depth + 1);
        g->b = outer;
        if (!rc && !body.oom) sb_printf(g->rules, "f%d-%d ::= %s\n", g->fn, r, body.s);
        free(body.s);
        if (rc || body.oom) return -1;
        rule_ref(g, r);
        return 0;
    }
    const cJSON *alts = cJSON_GetObjectItemCaseSensitive(s, "anyOf");
    if (!alts) alts = cJSON_GetObjectItemCaseSensitive(s, "oneOf");
    if (cJSON_IsArray(alts)) {
        const cJSON *e;
        int first = 1;
        sb_printf(g->b, "( ");
        cJSON_ArrayForEach(e, alts) {
            int r = gen_rule(g, e, depth + 1);
            if (r < 0) return -1;
            if (!first) sb_printf(g->b, " | ");
            rule_ref(g, r);
            first = 0;
        }
        sb_printf(g->b, " )");
        return 0;
    }
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    const cJSON *cn = cJSON_GetObjectItemCaseSensitive(s, "const");
    if (cJSON_IsArray(en) || cn) {
        const cJSON *e;
        int first = 1;
        sb_printf(g->b, "( ");
        if (cn) return enum_literal(g, cn) ? -1 : (sb_printf(g->b, " )"), 0);
        cJSON_ArrayForEach(e, en) {
            if (!first) sb_printf(g->b, " | ");
            if (enum_literal(g, e)) return -1;
            first = 0;
        }
        sb_printf(g->b, " )");
        return 0;
    }
    if (cJSON_GetObjectItemCaseSensitive(s, "allOf")) {
        sb_printf(g->b, "g-value"); /* not merged here (see the header) */
        return 0;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (cJSON_IsString(type)) return gen_typed(g, s, type->valuestring, depth);
    if (cJSON_IsArray(type)) {
        const cJSON *t;
        int first = 1;
        sb_printf(g->b, "( ");
        cJSON_ArrayForEach(t, type) {
            if (!cJSON_IsString(t)) continue;
            int r = new_rule(g);
            sbuf body = {0};
            sbuf *outer = g->b;
            g->b = &body;
            int rc = gen_typed(g, s, t->valuestring, depth);
            g->b = outer;
            if (!rc && !body.oom) sb_printf(g->rules, "f%d-%d ::= %s\n", g->fn, r, body.s);
            free(body.s);
            if (rc || body.oom) return -1;
            if (!first) sb_printf(g->b, " | ");
            rule_ref(g, r);
            first = 0;
        }
        sb_printf(g->b, " )");
        return 0;
    }
    if (cJSON_GetObjectItemCaseSensitive(s, "properties")) return gen_object(g, s, depth);
    if (cJSON_GetObjectItemCaseSensitive(s, "items")) return gen_array(g, s, depth);
    sb_printf(g->b, "g-value");
    return 0;
}

/* ---- the tools checked ------------------------------------------------------------------- */

static int name_ok(const char *s) {
    size_t n = strlen(s);
    if (n < 1 || n > CHAT_TOOL_NAME_MAX) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-') return 0;
    return 1;
}

/* Property names (at any depth) a bare Gemma key can hold. */
static const char *bad_key(const cJSON *s, int depth) {
    if (!cJSON_IsObject(s) && !cJSON_IsArray(s)) return NULL;
    if (depth > CHAT_SCHEMA_MAX_DEPTH * 4) return NULL;
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *e;
    if (cJSON_IsObject(s) && cJSON_IsObject(props))
        cJSON_ArrayForEach(e, props) {
            if (!*e->string) return "";
            for (const unsigned char *c = (const unsigned char *)e->string; *c; c++)
                if (*c <= 0x20 || strchr(":,{}[]<>\"\\|", *c)) return e->string;
        }
    cJSON_ArrayForEach(e, s) {
        const char *b = bad_key(e, depth + 1);
        if (b) return b;
    }
    return NULL;
}

static int tools_check_parsed(const cJSON *tools, char *err, size_t errsz) {
    if (!cJSON_IsArray(tools)) {
        seterr(err, errsz, "tools must be an array of {\"type\": \"function\", \"function\": {...}}");
        return -1;
    }
    int n = cJSON_GetArraySize(tools);
    if (n > CHAT_TOOLS_MAX) {
        seterr(err, errsz, "tools has %d entries, over the limit of %d", n, CHAT_TOOLS_MAX);
        return -1;
    }
    int i = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(t, "type");
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "function") || !cJSON_IsObject(fn)) {
            seterr(err, errsz, "tools[%d]: each tool must be {\"type\": \"function\", "
                               "\"function\": {\"name\": ..., \"parameters\": {...}}}", i);
            return -1;
        }
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(fn, "name");
        if (!cJSON_IsString(name) || !name_ok(name->valuestring)) {
            seterr(err, errsz, "tools[%d].function.name must be 1 to %d of a-z, A-Z, 0-9, _ "
                               "and -", i, CHAT_TOOL_NAME_MAX);
            return -1;
        }
        for (const cJSON *u = tools->child; u != t; u = u->next) {
            const cJSON *un = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(u, "function"), "name");
            if (!strcmp(un->valuestring, name->valuestring)) {
                seterr(err, errsz, "tools[%d]: the function name \"%s\" is declared twice", i,
                       name->valuestring);
                return -1;
            }
        }
        const cJSON *desc = cJSON_GetObjectItemCaseSensitive(fn, "description");
        if (desc && !cJSON_IsString(desc)) {
            seterr(err, errsz, "tools[%d].function.description must be a string", i);
            return -1;
        }
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        if (params && !(cJSON_IsObject(params) && !params->child)) { /* {}: no declaration */
            const cJSON *pt = cJSON_GetObjectItemCaseSensitive(params, "type");
            if (!cJSON_IsObject(params) || !cJSON_IsString(pt) || strcmp(pt->valuestring, "object")) {
                seterr(err, errsz, "tools[%d].function.parameters must be an object schema "
                                   "({\"type\": \"object\", \"properties\": {...}})", i);
                return -1;
            }
            char prefix[64];
            snprintf(prefix, sizeof prefix, "tools[%d].function.parameters", i);
            char *text = cJSON_PrintUnformatted(params);
            if (!text) {
                seterr(err, errsz, "out of memory");
                return -1;
            }
            int rc = chat_schema_check(text, strlen(text), prefix, err, errsz);
            free(text);
            if (rc) return -1;
            const char *bad = bad_key(params, 0);
            if (bad) {
                seterr(err, errsz, "%s: the property name \"%.64s\" cannot be a Gemma 4 call's "
                                   "bare key (empty, or has a space, a control character or one "
                                   "of : , { } [ ] < > \" \\ |)", prefix, bad);
                return -1;
            }
        }
        i++;
    }
    return 0;
}

int chat_tools_check(const char *tools_json, char *err, size_t errsz) {
    if (!tools_json) {
        seterr(err, errsz, "no tools");
        return -1;
    }
    size_t len = strlen(tools_json);
    if (len > CHAT_SCHEMA_MAX_BYTES * 4) {
        seterr(err, errsz, "tools is %zu bytes, over the limit of %d", len, CHAT_SCHEMA_MAX_BYTES * 4);
        return -1;
    }
    cJSON *tools = fe_json_parse_text(tools_json, len, NULL);
    if (!tools) {
        seterr(err, errsz, "tools is not valid JSON");
        return -1;
    }
    int rc = tools_check_parsed(tools, err, errsz);
    cJSON_Delete(tools);
    return rc;
}

/* ---- the grammar ------------------------------------------------------------------------- */

int chat_tool_grammar(const char *tools_json, const chat_tool_grammar_opts *o, char **gbnf,
                      char *err, size_t errsz) {
    if (gbnf) *gbnf = NULL;
    if (!gbnf || !o) {
        seterr(err, errsz, "no output");
        return -1;
    }
    if (o->min_calls < 0 || (o->max_calls >= 0 && o->max_calls < o->min_calls) ||
        o->max_calls == 0) {
        seterr(err, errsz, "tool calls: min_calls %d and max_calls %d make no call possible",
               o->min_calls, o->max_calls);
        return -1;
    }
    if (chat_tools_check(tools_json, err, errsz)) return -1;
    cJSON *tools = fe_json_parse_text(tools_json, strlen(tools_json), NULL);
    if (!tools) {
        seterr(err, errsz, "tools is not valid JSON");
        return -1;
    }
    sbuf b = {0};
    gen *g = calloc(1, sizeof *g);
    int rc = g ? 0 : -1, fi = 0, n_alt = 0;
    sbuf alts = {0};
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        if (rc) break;
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        const char *name = cJSON_GetObjectItemCaseSensitive(fn, "name")->valuestring;
        if (o->only_name && strcmp(o->only_name, name)) { fi++; continue; }
        const cJSON *params = cJSON_GetObjectItemCaseSensitive(fn, "parameters");
        memset(g, 0, sizeof *g);
        g->b = &b, g->rules = &b, g->root = params, g->fn = fi;
        int r = new_rule(g);
        sbuf body = {0};
        g->b = &body;
        if (!params) sb_printf(&body, "\"{}\"");
        else if (!params->child) sb_printf(&body, "g-object"); /* {}: any arguments */
        else rc = gen_value(g, params, 0);
        g->b = &b;
        if (!rc && !body.oom) {
            sb_printf(&b, "f%d-%d ::= ", fi, r);
            char lit[CHAT_TOOL_NAME_MAX + 8];
            snprintf(lit, sizeof lit, "call:%s", name);
            sb_literal(&b, lit);
            sb_printf(&b, " %s\n", body.s);
            sb_printf(&alts, "%sf%d-%d", n_alt ? " | " : "", fi, r);
            n_alt++;
        } else {
            rc = -1;
        }
        free(body.s);
        fi++;
    }
    if (!rc && !n_alt) {
        seterr(err, errsz, "tool_choice names the function \"%.64s\", which tools does not "
                           "declare", o->only_name ? o->only_name : "");
        rc = 1;
    }
    if (!rc) {
        char rep[48];
        if (o->max_calls < 0)
            snprintf(rep, sizeof rep, o->min_calls == 0 ? "*" : o->min_calls == 1 ? "+" : "{%d,}",
                     o->min_calls);
        else
            snprintf(rep, sizeof rep, "{%d,%d}", o->min_calls, o->max_calls);
        sb_printf(&b, "call ::= <|tool_call> ( %s ) <tool_call|>\n", alts.s);
        sb_printf(&b, "root ::= %scall%s <|tool_response>?\n",
                  o->allow_thought ? "thought? " : "", rep);
        if (o->allow_thought)
            sb_printf(&b, "thought ::= <|channel> ( !<channel|> )* <channel|>\n");
        sb_printf(&b, "%s", GENERIC_RULES);
    }
    free(alts.s);
    free(g);
    cJSON_Delete(tools);
    if (rc || b.oom) {
        if (rc != 1) seterr(err, errsz, "out of memory");
        free(b.s);
        return -1;
    }
    if (b.n > CHAT_SCHEMA_MAX_GRAMMAR) {
        seterr(err, errsz, "the tools' grammar would be %zu bytes, over the limit of %d: fewer "
                           "or simpler tools", b.n, CHAT_SCHEMA_MAX_GRAMMAR);
        free(b.s);
        return -1;
    }
    *gbnf = b.s;
    return 0;
}
