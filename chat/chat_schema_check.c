/* chat_schema_check.c - a JSON Schema checked against what the grammar layer enforces
 * (chat_grammar.h), before llama.cpp's converter sees it; chat_schema_grammar = check + convert.
 *
 * The converter (llama.cpp/common/json-schema.cpp) ignores keywords it does not know and, for
 * several combinations, honours one keyword and drops the other ($ref with siblings, oneOf with
 * anyOf, allOf with properties, pattern with minLength, a type with keywords of another type,
 * minimum without a type). A grammar looser than the schema is a silent wrong answer, so each of
 * these is refused here with the keyword and its JSON pointer path. Sizes are bounded first (bytes,
 * depth, subschemas, enum sizes, repetition counts: llama.cpp's grammar parser expands x{0,n} into
 * n rules), and a $ref chain that comes back to itself without consuming a token ({"$ref":"#"},
 * a -> b -> a, a -> anyOf[a]) is refused: its grammar would be left-recursive. */
#include "chat_grammar.h"
#include "chat_error.h"
#include "frontend.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define PATH_CAP 512

enum { FAM_NONE = 0, FAM_OBJECT = 1, FAM_ARRAY = 2, FAM_STRING = 4, FAM_NUMBER = 8 };

typedef struct kw {
    const char *name;
    int family;     /* FAM_*; FAM_NONE for the core keywords */
    int annotation; /* no effect on what is valid */
} kw;

static const kw KEYWORDS[] = {
    {"type", FAM_NONE, 0},           {"enum", FAM_NONE, 0},
    {"const", FAM_NONE, 0},          {"anyOf", FAM_NONE, 0},
    {"oneOf", FAM_NONE, 0},          {"allOf", FAM_NONE, 0},
    {"$ref", FAM_NONE, 0},           {"$defs", FAM_NONE, 1},
    {"definitions", FAM_NONE, 1},    {"properties", FAM_OBJECT, 0},
    {"required", FAM_OBJECT, 0},     {"additionalProperties", FAM_OBJECT, 0},
    {"items", FAM_ARRAY, 0},         {"prefixItems", FAM_ARRAY, 0},
    {"minItems", FAM_ARRAY, 0},      {"maxItems", FAM_ARRAY, 0},
    {"pattern", FAM_STRING, 0},      {"minLength", FAM_STRING, 0},
    {"maxLength", FAM_STRING, 0},    {"format", FAM_STRING, 0},
    {"minimum", FAM_NUMBER, 0},      {"maximum", FAM_NUMBER, 0},
    {"exclusiveMinimum", FAM_NUMBER, 0}, {"exclusiveMaximum", FAM_NUMBER, 0},
    {"title", FAM_NONE, 1},          {"description", FAM_NONE, 1},
    {"default", FAM_NONE, 1},        {"examples", FAM_NONE, 1},
    {"$schema", FAM_NONE, 1},        {"$id", FAM_NONE, 1},
    {"$comment", FAM_NONE, 1},       {"strict", FAM_NONE, 1},
};
#define N_KEYWORDS (sizeof KEYWORDS / sizeof KEYWORDS[0])

static const char SUPPORTED[] =
    "type, properties, required, additionalProperties, items, prefixItems, minItems, maxItems, "
    "enum, const, anyOf, oneOf, allOf, $ref, $defs, definitions, pattern, minLength, maxLength, "
    "format, minimum, maximum, exclusiveMinimum, exclusiveMaximum, and the annotations title, "
    "description, default, examples, $schema, $id, $comment, strict";

typedef struct chk {
    const cJSON *root;
    const char *prefix;
    int nodes;
    char *err;
    size_t errsz;
} chk;

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(chk *c, const char *path, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    seterr(c->err, c->errsz, "%s: %s at %s", c->prefix, msg, *path ? path : "/ (the root)");
    return -1;
}

static const kw *keyword(const char *name) {
    for (size_t i = 0; i < N_KEYWORDS; i++)
        if (!strcmp(KEYWORDS[i].name, name))
            return &KEYWORDS[i];
    return NULL;
}

/* path + "/" + seg, seg escaped as a JSON pointer (~0 ~1); cut at PATH_CAP. */
static void path_push(char *path, const char *seg) {
    size_t n = strlen(path);
    if (n + 2 >= PATH_CAP)
        return;
    path[n++] = '/';
    for (; *seg && n + 3 < PATH_CAP; seg++) {
        if (*seg == '~' || *seg == '/') {
            path[n++] = '~';
            path[n++] = *seg == '~' ? '0' : '1';
        } else {
            path[n++] = *seg;
        }
    }
    path[n] = 0;
}

static void path_push_index(char *path, int i) {
    char b[16];
    snprintf(b, sizeof b, "%d", i);
    path_push(path, b);
}

static int type_family(const char *t) {
    if (!strcmp(t, "object")) return FAM_OBJECT;
    if (!strcmp(t, "array")) return FAM_ARRAY;
    if (!strcmp(t, "string")) return FAM_STRING;
    if (!strcmp(t, "integer") || !strcmp(t, "number")) return FAM_NUMBER;
    return FAM_NONE;
}

static int known_type(const char *t) {
    static const char *const T[] = {"null", "boolean", "integer", "number", "string", "array",
                                    "object"};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (!strcmp(T[i], t))
            return 1;
    return 0;
}

/* Does the JSON value v have one of the types named in `type` (a string or an array)? */
static int value_has_type(const cJSON *v, const cJSON *type) {
    const cJSON *t;
    if (cJSON_IsString(type)) {
        const char *n = type->valuestring;
        if (!strcmp(n, "null")) return cJSON_IsNull(v);
        if (!strcmp(n, "boolean")) return cJSON_IsBool(v);
        if (!strcmp(n, "number")) return cJSON_IsNumber(v);
        if (!strcmp(n, "integer"))
            return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
        if (!strcmp(n, "string")) return cJSON_IsString(v);
        if (!strcmp(n, "array")) return cJSON_IsArray(v);
        if (!strcmp(n, "object")) return cJSON_IsObject(v);
        return 0;
    }
    cJSON_ArrayForEach(t, type) if (value_has_type(v, t)) return 1;
    return 0;
}

static int hexdigits(const char *s, int n) {
    for (int i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
              (s[i] >= 'A' && s[i] <= 'F')))
            return 0;
    return 1;
}

/* The length of a GBNF escape at s ("\x41", "\n", ...) or 0: the escapes the converter copies
 * into the grammar (llama-grammar.cpp parse_char knows no others). */
static int gbnf_escape(const char *s) {
    if (s[0] != '\\' || !s[1]) return 0;
    switch (s[1]) {
    case 'x': return hexdigits(s + 2, 2) ? 4 : 0;
    case 'u': return hexdigits(s + 2, 4) ? 6 : 0;
    case 'U': return hexdigits(s + 2, 8) ? 10 : 0;
    case 't': case 'r': case 'n': case '\\': case '"': case '[': case ']': case '-': return 2;
    default: return 0;
    }
}

/* NULL when llama.cpp's converter translates the pattern into grammar rules, else why not. The
 * converter's regex subset: anchored ^...$, literals, ., [classes] with GBNF escapes only,
 * groups (and (?:...)), |, * + ?, {m}, {m,}, {m,n}; no \d \w \s, no lookaround, no backrefs. */
static const char *pattern_problem(const char *p, char *why, size_t whysz) {
    size_t n = strlen(p);
    if (n < 2 || p[0] != '^' || p[n - 1] != '$' || (n >= 3 && p[n - 2] == '\\'))
        return "it is not anchored with ^ at the start and $ at the end";
    int depth = 0, atom = 0;
    for (size_t i = 1; i < n - 1;) {
        char ch = p[i];
        if (ch == '.') {
            atom = 1, i++;
        } else if (ch == '(') {
            if (p[i + 1] == '?' && p[i + 2] != ':')
                return "lookaround, named groups and inline flags have no grammar equivalent";
            i += p[i + 1] == '?' ? 3 : 1;
            if (++depth > 100) return "groups nest too deep";
            atom = 0;
        } else if (ch == ')') {
            if (--depth < 0) return "its parentheses are unbalanced";
            atom = 1, i++;
        } else if (ch == '^' || ch == '$') {
            return "an anchor inside the pattern has no grammar equivalent";
        } else if (ch == '[') {
            for (i++; i < n - 1 && p[i] != ']';) {
                if (p[i] == '\\') {
                    int e = gbnf_escape(p + i);
                    if (!e) {
                        snprintf(why, whysz, "the escape \\%c in a character class is not "
                                 "supported (write the characters out, e.g. [0-9] for \\d)", p[i + 1]);
                        return why;
                    }
                    i += (size_t)e;
                } else {
                    i++;
                }
            }
            if (i >= n - 1) return "a character class is not closed";
            atom = 1, i++;
        } else if (ch == '|') {
            atom = 0, i++;
        } else if (ch == '*' || ch == '+' || ch == '?') {
            if (!atom) return "a quantifier has nothing to repeat";
            i++;
        } else if (ch == '{') {
            size_t j = i + 1;
            long a = -1, b = -1;
            int comma = 0;
            for (; j < n - 1 && p[j] != '}'; j++) {
                if (p[j] == ',' && !comma) {
                    comma = 1;
                } else if (p[j] >= '0' && p[j] <= '9') {
                    long *d = comma ? &b : &a;
                    *d = (*d < 0 ? 0 : *d) * 10 + (p[j] - '0');
                    if (*d > CHAT_SCHEMA_MAX_REPEAT) {
                        snprintf(why, whysz, "a repetition count is over %d",
                                 CHAT_SCHEMA_MAX_REPEAT);
                        return why;
                    }
                } else {
                    return "a {m,n} repetition is malformed";
                }
            }
            if (j >= n - 1) return "a {m,n} repetition is not closed";
            if (a < 0 && !comma) return "a {m,n} repetition is malformed";
            if (!atom) return "a quantifier has nothing to repeat";
            i = j + 1;
        } else if (ch == ']' || ch == '}') {
            return "it has an unescaped ] or }";
        } else if (ch == '\\') {
            char nx = p[i + 1];
            if (nx && strchr("^$.[]()|{}*+?", nx)) {
                i += 2;
            } else {
                int e = gbnf_escape(p + i);
                if (!e) {
                    snprintf(why, whysz, "the escape \\%c is not supported (write a class, e.g. "
                             "[0-9] for \\d, [a-zA-Z0-9_] for \\w)", nx ? nx : ' ');
                    return why;
                }
                i += (size_t)e;
            }
            atom = 1;
        } else {
            atom = 1, i++;
        }
    }
    return depth ? "its parentheses are unbalanced" : NULL;
}

static int check_node(chk *c, const cJSON *s, char *path, int depth);

static int check_count(chk *c, const cJSON *v, const char *key, char *path, long *out) {
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble != floor(v->valuedouble))
        return fail(c, path, "%s must be a non-negative integer", key);
    if (v->valuedouble > CHAT_SCHEMA_MAX_REPEAT)
        return fail(c, path, "%s %.0f is over the limit of %d", key, v->valuedouble,
                    CHAT_SCHEMA_MAX_REPEAT);
    *out = (long)v->valuedouble;
    return 0;
}

static int check_sub(chk *c, const cJSON *s, char *path, const char *seg, int depth) {
    size_t n = strlen(path);
    path_push(path, seg);
    int rc = check_node(c, s, path, depth);
    path[n] = 0;
    return rc;
}

static int check_list(chk *c, const cJSON *arr, const char *key, char *path, int depth) {
    size_t n = strlen(path);
    path_push(path, key);
    if (!cJSON_IsArray(arr) || !cJSON_GetArraySize(arr))
        return fail(c, path, "%s must be a non-empty array of schemas", key);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        size_t m = strlen(path);
        path_push_index(path, i++);
        if (check_node(c, e, path, depth + 1))
            return -1;
        path[m] = 0;
    }
    path[n] = 0;
    return 0;
}

/* "#/$defs/NAME" or "#/definitions/NAME" naming a member of the root's $defs/definitions. */
static const cJSON *ref_target(const cJSON *root, const char *ref) {
    const char *name = NULL, *where = NULL;
    if (!strncmp(ref, "#/$defs/", 8)) where = "$defs", name = ref + 8;
    else if (!strncmp(ref, "#/definitions/", 14)) where = "definitions", name = ref + 14;
    if (!name || !*name || strchr(name, '/') || strchr(name, '~'))
        return NULL;
    const cJSON *defs = cJSON_GetObjectItemCaseSensitive(root, where);
    return cJSON_IsObject(defs) ? cJSON_GetObjectItemCaseSensitive(defs, name) : NULL;
}

/* A schema every value of whose type is an object (allOf merges their properties). */
static int object_like(const cJSON *root, const cJSON *s, int hops) {
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    if (cJSON_IsString(ref)) {
        const cJSON *t = ref_target(root, ref->valuestring);
        return t && hops < 64 && object_like(root, t, hops + 1);
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (type) return cJSON_IsString(type) && !strcmp(type->valuestring, "object");
    return cJSON_GetObjectItemCaseSensitive(s, "properties") != NULL;
}

static int check_enum_values(chk *c, const cJSON *s, const cJSON *vals, const char *key,
                             char *path) {
    char *text = cJSON_PrintUnformatted(vals);
    size_t len = text ? strlen(text) : 0;
    free(text);
    if (len > CHAT_SCHEMA_MAX_ENUM_TEXT)
        return fail(c, path, "%s is %zu bytes of JSON, over the limit of %d", key, len,
                    CHAT_SCHEMA_MAX_ENUM_TEXT);
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (!type) return 0;
    if (!strcmp(key, "const")) {
        if (!value_has_type(vals, type))
            return fail(c, path, "the const value is not of the schema's type");
        return 0;
    }
    const cJSON *v;
    int i = 0;
    cJSON_ArrayForEach(v, vals) {
        if (!value_has_type(v, type))
            return fail(c, path, "enum value %d is not of the schema's type", i);
        i++;
    }
    return 0;
}

static int check_object_kw(chk *c, const cJSON *s, char *path, int depth) {
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (props) {
        if (!cJSON_IsObject(props)) return fail(c, path, "properties must be an object");
        if (cJSON_GetArraySize(props) > CHAT_SCHEMA_MAX_PROPERTIES)
            return fail(c, path, "properties has %d members, over the limit of %d",
                        cJSON_GetArraySize(props), CHAT_SCHEMA_MAX_PROPERTIES);
        size_t n = strlen(path);
        path_push(path, "properties");
        const cJSON *p;
        cJSON_ArrayForEach(p, props) if (check_sub(c, p, path, p->string, depth + 1)) return -1;
        path[n] = 0;
    }
    if (req) {
        if (!cJSON_IsArray(req)) return fail(c, path, "required must be an array of names");
        const cJSON *r;
        cJSON_ArrayForEach(r, req) {
            if (!cJSON_IsString(r)) return fail(c, path, "required must be an array of names");
            if (!cJSON_GetObjectItemCaseSensitive(props, r->valuestring))
                return fail(c, path, "required names \"%s\", which properties does not define",
                            r->valuestring);
            for (const cJSON *q = req->child; q != r; q = q->next)
                if (!strcmp(q->valuestring, r->valuestring))
                    return fail(c, path, "required names \"%s\" twice", r->valuestring);
        }
    }
    if (add && !cJSON_IsBool(add)) {
        if (!cJSON_IsObject(add))
            return fail(c, path, "additionalProperties must be true, false or a schema");
        if (check_sub(c, add, path, "additionalProperties", depth + 1)) return -1;
    }
    return 0;
}

static int check_array_kw(chk *c, const cJSON *s, char *path, int depth) {
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(s, "prefixItems");
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(s, "minItems");
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(s, "maxItems");
    long lo = 0, hi = -1;
    if (items && prefix)
        return fail(c, path, "items together with prefixItems is not supported (the grammar "
                             "would drop one of them): use one");
    if (prefix && (mn || mx))
        return fail(c, path, "prefixItems makes a tuple of exactly its length: minItems/maxItems "
                             "cannot go with it");
    if (items) {
        if (!cJSON_IsObject(items))
            return fail(c, path, "items must be a schema (an object); for tuples use prefixItems");
        if (check_sub(c, items, path, "items", depth + 1)) return -1;
    }
    if (prefix && check_list(c, prefix, "prefixItems", path, depth)) return -1;
    if (mn && check_count(c, mn, "minItems", path, &lo)) return -1;
    if (mx && check_count(c, mx, "maxItems", path, &hi)) return -1;
    if (mx && lo > hi) return fail(c, path, "minItems is over maxItems");
    return 0;
}

static int check_string_kw(chk *c, const cJSON *s, char *path) {
    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(s, "pattern");
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(s, "format");
    const cJSON *mn = cJSON_GetObjectItemCaseSensitive(s, "minLength");
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(s, "maxLength");
    long lo = 0, hi = -1;
    if ((pat != NULL) + (fmt != NULL) + (mn || mx) > 1)
        return fail(c, path, "pattern, format and minLength/maxLength cannot be combined (the "
                             "grammar would honour only one): use one of them");
    if (pat) {
        char why[160];
        if (!cJSON_IsString(pat)) return fail(c, path, "pattern must be a string");
        if (strlen(pat->valuestring) > 4096) return fail(c, path, "pattern is over 4096 bytes");
        const char *p = pattern_problem(pat->valuestring, why, sizeof why);
        if (p) return fail(c, path, "the pattern \"%.200s\" is not supported: %s", pat->valuestring, p);
    }
    if (fmt) {
        const char *f = cJSON_IsString(fmt) ? fmt->valuestring : "";
        if (strcmp(f, "date") && strcmp(f, "time") && strcmp(f, "date-time") &&
            strcmp(f, "uuid") && !(strlen(f) == 5 && !strncmp(f, "uuid", 4) && f[4] >= '1' && f[4] <= '5'))
            return fail(c, path, "format \"%.80s\" is not supported (supported: date, time, "
                                 "date-time, uuid, uuid1..uuid5)", f);
    }
    if (mn && check_count(c, mn, "minLength", path, &lo)) return -1;
    if (mx && check_count(c, mx, "maxLength", path, &hi)) return -1;
    if (mx && lo > hi) return fail(c, path, "minLength is over maxLength");
    return 0;
}

static int check_number_kw(chk *c, const cJSON *s, char *path) {
    static const char *const K[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    double v[4];
    int has[4];
    for (int i = 0; i < 4; i++) {
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(s, K[i]);
        has[i] = b != NULL;
        if (!b) continue;
        if (!cJSON_IsNumber(b)) return fail(c, path, "%s must be a number", K[i]);
        if (fabs(b->valuedouble) > CHAT_SCHEMA_MAX_BOUND)
            return fail(c, path, "%s is beyond +-2^53", K[i]);
        v[i] = b->valuedouble;
    }
    double lo = has[0] ? v[0] : has[2] ? v[2] : -INFINITY;
    double hi = has[1] ? v[1] : has[3] ? v[3] : INFINITY;
    if (lo > hi) return fail(c, path, "the lower bound is over the upper bound");
    return 0;
}

static int check_node(chk *c, const cJSON *s, char *path, int depth) {
    if (depth > CHAT_SCHEMA_MAX_DEPTH)
        return fail(c, path, "the schema nests deeper than %d levels", CHAT_SCHEMA_MAX_DEPTH);
    if (++c->nodes > CHAT_SCHEMA_MAX_NODES)
        return fail(c, path, "the schema has more than %d subschemas", CHAT_SCHEMA_MAX_NODES);
    if (!cJSON_IsObject(s))
        return fail(c, path, "a schema must be a JSON object");

    int families = 0, constraints = 0;
    const cJSON *k;
    cJSON_ArrayForEach(k, s) {
        const kw *w = keyword(k->string);
        if (!w) {
            const char *at = *path ? path : "/ (the root)";
            if (!strcmp(k->string, "nullable"))
                seterr(c->err, c->errsz, "%s: the schema keyword \"nullable\" at %s is not "
                       "supported (write \"type\": [\"...\", \"null\"] or anyOf with "
                       "{\"type\": \"null\"})", c->prefix, at);
            else
                seterr(c->err, c->errsz, "%s: the schema keyword \"%.64s\" at %s is not "
                       "supported (supported: %s)", c->prefix, k->string, at, SUPPORTED);
            return -1;
        }
        families |= w->family;
        if (!w->annotation && strcmp(k->string, "type")) constraints++;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    const cJSON *any = cJSON_GetObjectItemCaseSensitive(s, "anyOf");
    const cJSON *one = cJSON_GetObjectItemCaseSensitive(s, "oneOf");
    const cJSON *all = cJSON_GetObjectItemCaseSensitive(s, "allOf");
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    const cJSON *cn = cJSON_GetObjectItemCaseSensitive(s, "const");

    static const char *const DEFS[] = {"$defs", "definitions"};
    for (int i = 0; i < 2; i++) {
        const cJSON *defs = cJSON_GetObjectItemCaseSensitive(s, DEFS[i]);
        if (!defs) continue;
        if (!cJSON_IsObject(defs)) return fail(c, path, "%s must be an object of schemas", DEFS[i]);
        size_t n = strlen(path);
        path_push(path, DEFS[i]);
        const cJSON *d;
        cJSON_ArrayForEach(d, defs) if (check_sub(c, d, path, d->string, depth + 1)) return -1;
        path[n] = 0;
    }

    int type_fams = 0;
    if (type) {
        if (cJSON_IsString(type)) {
            if (!known_type(type->valuestring))
                return fail(c, path, "type \"%.64s\" is unknown (null, boolean, integer, number, "
                                     "string, array, object)", type->valuestring);
            type_fams = type_family(type->valuestring);
        } else if (cJSON_IsArray(type) && cJSON_GetArraySize(type) > 0) {
            const cJSON *t;
            cJSON_ArrayForEach(t, type) {
                if (!cJSON_IsString(t) || !known_type(t->valuestring))
                    return fail(c, path, "type must name JSON types (null, boolean, integer, "
                                         "number, string, array, object)");
                for (const cJSON *q = type->child; q != t; q = q->next)
                    if (!strcmp(q->valuestring, t->valuestring))
                        return fail(c, path, "type names \"%s\" twice", t->valuestring);
                type_fams |= type_family(t->valuestring);
            }
        } else {
            return fail(c, path, "type must be a string or a non-empty array of strings");
        }
    }

    if (ref) {
        if (constraints > 1 || type)
            return fail(c, path, "$ref must stand alone (besides annotations): the grammar "
                                 "ignores keywords next to it; move them into the target");
        if (!cJSON_IsString(ref) || !ref_target(c->root, ref->valuestring))
            return fail(c, path, "the $ref \"%.200s\" does not resolve (supported: "
                                 "\"#/$defs/NAME\" or \"#/definitions/NAME\" of the root schema)",
                        cJSON_IsString(ref) ? ref->valuestring : "?");
        return 0;
    }
    if (any || one) {
        if (constraints > 1 || type)
            return fail(c, path, "%s must stand alone (besides annotations): the grammar ignores "
                                 "keywords next to it; move them into each alternative",
                        any ? "anyOf" : "oneOf");
        return check_list(c, any ? any : one, any ? "anyOf" : "oneOf", path, depth);
    }
    if (all) {
        if (constraints > 1 || (type && !(cJSON_IsString(type) && !strcmp(type->valuestring, "object"))))
            return fail(c, path, "allOf must stand alone (besides \"type\": \"object\" and "
                                 "annotations): the grammar merges only its objects' properties");
        if (check_list(c, all, "allOf", path, depth)) return -1;
        int i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, all) {
            if (!object_like(c->root, e, 0)) {
                size_t n = strlen(path);
                path_push(path, "allOf");
                path_push_index(path, i);
                int rc = fail(c, path, "allOf is supported over object schemas only (their "
                                       "properties are merged)");
                path[n] = 0;
                return rc;
            }
            i++;
        }
        return 0;
    }
    if (en || cn) {
        if (en && cn) return fail(c, path, "enum and const together: use one");
        if (constraints > 1)
            return fail(c, path, "%s goes with \"type\" and annotations only: the grammar "
                                 "ignores other keywords next to it", en ? "enum" : "const");
        if (en) {
            if (!cJSON_IsArray(en) || !cJSON_GetArraySize(en))
                return fail(c, path, "enum must be a non-empty array");
            if (cJSON_GetArraySize(en) > CHAT_SCHEMA_MAX_ENUM)
                return fail(c, path, "enum has %d values, over the limit of %d",
                            cJSON_GetArraySize(en), CHAT_SCHEMA_MAX_ENUM);
        }
        return check_enum_values(c, s, en ? en : cn, en ? "enum" : "const", path);
    }

    if (type) {
        const cJSON *kk;
        cJSON_ArrayForEach(kk, s) {
            const kw *w = keyword(kk->string);
            if (w->family && !(w->family & type_fams))
                return fail(c, path, "the keyword \"%s\" does not apply to this schema's type "
                                     "(the grammar would ignore it)", kk->string);
        }
    } else if (families & (families - 1)) {
        return fail(c, path, "keywords of several types without \"type\": say which type");
    } else if (families == FAM_NUMBER) {
        return fail(c, path, "minimum/maximum need \"type\": \"integer\" or \"number\"");
    }
    if ((families & FAM_OBJECT) && check_object_kw(c, s, path, depth)) return -1;
    if ((families & FAM_ARRAY) && check_array_kw(c, s, path, depth)) return -1;
    if ((families & FAM_STRING) && check_string_kw(c, s, path)) return -1;
    if ((families & FAM_NUMBER) && check_number_kw(c, s, path)) return -1;
    return 0;
}

/* ---- $ref cycles that consume nothing ---------------------------------------------------- */

typedef struct refwalk {
    chk *c;
    const cJSON *seen[CHAT_SCHEMA_MAX_NODES]; /* targets done (no cycle through them) */
    int n_seen;
    const cJSON *stack[CHAT_SCHEMA_MAX_DEPTH * 4 + 8]; /* targets being expanded */
    int depth;
} refwalk;

/* Follows what a schema matches without consuming a token first: $ref targets and the
 * alternatives of anyOf/oneOf/allOf (an object or an array starts with "{" or "["). */
static int walk_refs(refwalk *w, const cJSON *s, const char *path_hint) {
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    if (cJSON_IsString(ref)) {
        const cJSON *t = ref_target(w->c->root, ref->valuestring);
        if (!t) return 0;
        for (int i = 0; i < w->n_seen; i++)
            if (w->seen[i] == t) return 0;
        for (int i = 0; i < w->depth; i++)
            if (w->stack[i] == t)
                return fail(w->c, path_hint, "the $ref \"%.200s\" comes back to itself without "
                                             "any value in between (an endless recursion)",
                            ref->valuestring);
        if (w->depth >= (int)(sizeof w->stack / sizeof w->stack[0]))
            return fail(w->c, path_hint, "$ref chains are nested too deep");
        w->stack[w->depth++] = t;
        int rc = walk_refs(w, t, path_hint);
        w->depth--;
        if (!rc && w->n_seen < CHAT_SCHEMA_MAX_NODES) w->seen[w->n_seen++] = t;
        return rc;
    }
    static const char *const ALT[] = {"anyOf", "oneOf", "allOf"};
    for (int a = 0; a < 3; a++) {
        const cJSON *e, *arr = cJSON_GetObjectItemCaseSensitive(s, ALT[a]);
        cJSON_ArrayForEach(e, arr) if (walk_refs(w, e, path_hint)) return -1;
    }
    return 0;
}

static int check_ref_cycles(chk *c) {
    refwalk *w = calloc(1, sizeof *w);
    if (!w) return fail(c, "", "out of memory");
    w->c = c;
    int rc = walk_refs(w, c->root, "");
    static const char *const DEFS[] = {"$defs", "definitions"};
    for (int i = 0; i < 2 && !rc; i++) {
        const cJSON *d, *defs = cJSON_GetObjectItemCaseSensitive(c->root, DEFS[i]);
        char path[PATH_CAP] = "";
        cJSON_ArrayForEach(d, defs) {
            path[0] = 0;
            path_push(path, DEFS[i]);
            path_push(path, d->string);
            w->depth = 0;
            w->stack[w->depth++] = d;
            if ((rc = walk_refs(w, d, path))) break;
        }
    }
    free(w);
    return rc;
}

static int check_parsed(const cJSON *root, const char *prefix, char *err, size_t errsz) {
    chk c = {root, prefix ? prefix : "schema", 0, err, errsz};
    char path[PATH_CAP] = "";
    if (check_node(&c, root, path, 0)) return -1;
    return check_ref_cycles(&c);
}

int chat_schema_check(const char *schema, size_t len, const char *prefix, char *err, size_t errsz) {
    const char *pre = prefix ? prefix : "schema";
    if (!schema) {
        seterr(err, errsz, "%s: no schema", pre);
        return -1;
    }
    if (len > CHAT_SCHEMA_MAX_BYTES) {
        seterr(err, errsz, "%s: the schema is %zu bytes, over the limit of %d", pre, len,
               CHAT_SCHEMA_MAX_BYTES);
        return -1;
    }
    cJSON *root = fe_json_parse_text(schema, len, NULL);
    if (!root) {
        seterr(err, errsz, "%s: the schema is not valid JSON", pre);
        return -1;
    }
    int rc = check_parsed(root, pre, err, errsz);
    cJSON_Delete(root);
    return rc;
}

#ifndef G4V_HAVE_CHAT_SCHEMA /* built without a C++ compiler (cmake/ChatJinja.cmake) */
int chat_schema_convert(const char *schema, size_t len, char **gbnf, char *err, size_t errsz) {
    (void)schema;
    (void)len;
    if (gbnf) *gbnf = NULL;
    seterr(err, errsz, "this g4v was built without llama.cpp's JSON Schema converter (no C++ "
                       "compiler or no llama.cpp source tree): structured output is unavailable");
    return -1;
}
#endif

int chat_schema_grammar(const char *schema, size_t len, char **gbnf, char *err, size_t errsz) {
    if (gbnf) *gbnf = NULL;
    if (!gbnf) {
        seterr(err, errsz, "no output");
        return -1;
    }
    if (chat_schema_check(schema, len, "response_format", err, errsz)) return -1;
    char cerr[512];
    if (chat_schema_convert(schema, len, gbnf, cerr, sizeof cerr)) {
        seterr(err, errsz, "response_format: %s", cerr);
        return -1;
    }
    return 0;
}
