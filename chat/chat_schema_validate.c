/* chat_schema_validate.c - a JSON value checked against a schema of the subset chat_grammar.h
 * supports (chat_schema_validate). The server checks tool arguments and structured answers with
 * it after generation: the grammars leave some keywords to it (number bounds; for tool calls
 * also pattern, lengths, formats), and a generation cut by max_tokens is incomplete anyway. */
#include "chat_grammar.h"
#include "chat_error.h"
#include "frontend.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#define VPATH_CAP 512

typedef struct vctx {
    const cJSON *root;
    char path[VPATH_CAP];
    char *err;
    size_t errsz;
    int steps; /* bounds the work on hostile input ($ref recursion over a deep value) */
} vctx;

static int invalid(vctx *v, const char *why) {
    seterr(v->err, v->errsz, "%s: %s", *v->path ? v->path : "/ (the value)", why);
    return 1;
}

static size_t push(vctx *v, const char *seg) {
    size_t n = strlen(v->path);
    snprintf(v->path + n, VPATH_CAP - n, "/%s", seg);
    return n;
}

static int is_type(const cJSON *x, const char *t) {
    if (!strcmp(t, "null")) return cJSON_IsNull(x);
    if (!strcmp(t, "boolean")) return cJSON_IsBool(x);
    if (!strcmp(t, "number")) return cJSON_IsNumber(x);
    if (!strcmp(t, "integer")) return cJSON_IsNumber(x) && x->valuedouble == floor(x->valuedouble);
    if (!strcmp(t, "string")) return cJSON_IsString(x);
    if (!strcmp(t, "array")) return cJSON_IsArray(x);
    if (!strcmp(t, "object")) return cJSON_IsObject(x);
    return 0;
}

static size_t utf8_len(const char *s) {
    size_t n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static int digits(const char *s, int n) {
    for (int i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

static int is_date(const char *s) {
    return strlen(s) == 10 && digits(s, 4) && s[4] == '-' && digits(s + 5, 2) && s[7] == '-' &&
           digits(s + 8, 2) && atoi(s + 5) >= 1 && atoi(s + 5) <= 12 && atoi(s + 8) >= 1 &&
           atoi(s + 8) <= 31;
}

/* hh:mm:ss[.sss](Z|+hh:mm|-hh:mm), as the converter's grammar writes it */
static int is_time(const char *s) {
    if (!(digits(s, 2) && s[2] == ':' && digits(s + 3, 2) && s[5] == ':' && digits(s + 6, 2)))
        return 0;
    if (atoi(s) > 23 || atoi(s + 3) > 59 || atoi(s + 6) > 59) return 0;
    s += 8;
    if (*s == '.') {
        if (!digits(s + 1, 3)) return 0;
        s += 4;
    }
    if (!strcmp(s, "Z")) return 1;
    return (*s == '+' || *s == '-') && digits(s + 1, 2) && s[3] == ':' && digits(s + 4, 2) &&
           !s[6];
}

static int is_uuid(const char *s) {
    static const int groups[] = {8, 4, 4, 4, 12};
    for (int g = 0; g < 5; g++) {
        for (int i = 0; i < groups[g]; i++, s++)
            if (!strchr("0123456789abcdefABCDEF", *s) || !*s) return 0;
        if (g < 4 && *s++ != '-') return 0;
    }
    return !*s;
}

/* The pattern through POSIX extended regexes ("(?:" read as "("); 1 matches, 0 not, -1 when
 * regcomp refuses it (not checked then: the structured-output grammar enforced it). */
static int pattern_matches(const char *pattern, const char *s) {
    size_t n = strlen(pattern);
    char *p = malloc(n + 1);
    if (!p) return -1;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (pattern[i] == '\\' && i + 1 < n) {
            p[j++] = pattern[i++];
            p[j++] = pattern[i];
        } else if (pattern[i] == '(' && pattern[i + 1] == '?' && pattern[i + 2] == ':') {
            p[j++] = '(';
            i += 2;
        } else {
            p[j++] = pattern[i];
        }
    }
    p[j] = 0;
    regex_t re;
    int rc = regcomp(&re, p, REG_EXTENDED | REG_NOSUB);
    free(p);
    if (rc) return -1;
    rc = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return rc;
}

static const cJSON *ref_target(const cJSON *root, const char *ref) {
    const char *where = NULL, *name = NULL;
    if (!strncmp(ref, "#/$defs/", 8)) where = "$defs", name = ref + 8;
    else if (!strncmp(ref, "#/definitions/", 14)) where = "definitions", name = ref + 14;
    if (!name) return NULL;
    return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, where), name);
}

static int validate(vctx *v, const cJSON *s, const cJSON *x, int depth);

/* Whether x validates, without leaving a message or a path behind. */
static int quietly(vctx *v, const cJSON *s, const cJSON *x, int depth) {
    char saved[VPATH_CAP];
    memcpy(saved, v->path, sizeof saved);
    char *err = v->err;
    v->err = NULL;
    int rc = validate(v, s, x, depth);
    v->err = err;
    memcpy(v->path, saved, sizeof saved);
    return rc;
}

static int validate(vctx *v, const cJSON *s, const cJSON *x, int depth) {
    if (depth > 4 * CHAT_SCHEMA_MAX_DEPTH + 64 || ++v->steps > 1000000) return -1;
    if (cJSON_IsBool(s)) return cJSON_IsTrue(s) ? 0 : invalid(v, "no value is allowed here");
    if (!cJSON_IsObject(s)) return -1;
    const cJSON *k;
    int rc;

    if ((k = cJSON_GetObjectItemCaseSensitive(s, "$ref"))) {
        const cJSON *t = cJSON_IsString(k) ? ref_target(v->root, k->valuestring) : NULL;
        if (!t) return -1;
        if ((rc = validate(v, t, x, depth + 1))) return rc;
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "type"))) {
        int ok = 0;
        if (cJSON_IsString(k)) ok = is_type(x, k->valuestring);
        const cJSON *t;
        if (cJSON_IsArray(k)) cJSON_ArrayForEach(t, k) ok |= cJSON_IsString(t) && is_type(x, t->valuestring);
        if (!ok) {
            char *want = cJSON_PrintUnformatted(k), why[160];
            snprintf(why, sizeof why, "not of type %s", want ? want : "?");
            free(want);
            return invalid(v, why);
        }
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "const")) && !cJSON_Compare(k, x, 1))
        return invalid(v, "not the const value");
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "enum"))) {
        const cJSON *e;
        int ok = 0;
        cJSON_ArrayForEach(e, k) ok |= cJSON_Compare(e, x, 1);
        if (!ok) return invalid(v, "not one of the enum values");
    }
    static const char *const ALT[] = {"anyOf", "oneOf"};
    for (int a = 0; a < 2; a++) {
        if (!(k = cJSON_GetObjectItemCaseSensitive(s, ALT[a]))) continue;
        const cJSON *e;
        int matches = 0;
        cJSON_ArrayForEach(e, k) {
            rc = quietly(v, e, x, depth + 1);
            if (rc < 0) return -1;
            matches += rc == 0;
        }
        if (a == 0 && !matches) return invalid(v, "matches none of anyOf");
        if (a == 1 && matches != 1)
            return invalid(v, matches ? "matches more than one of oneOf" : "matches none of oneOf");
    }
    if ((k = cJSON_GetObjectItemCaseSensitive(s, "allOf"))) {
        const cJSON *e;
        cJSON_ArrayForEach(e, k) if ((rc = validate(v, e, x, depth + 1))) return rc;
    }

    if (cJSON_IsObject(x)) {
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
        const cJSON *add = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
        const cJSON *e;
        cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(s, "required")) {
            if (cJSON_IsString(e) && !cJSON_GetObjectItemCaseSensitive(x, e->valuestring)) {
                char why[128];
                snprintf(why, sizeof why, "the required key \"%.64s\" is missing", e->valuestring);
                return invalid(v, why);
            }
        }
        cJSON_ArrayForEach(e, x) {
            const cJSON *ps = cJSON_GetObjectItemCaseSensitive(props, e->string);
            size_t n = push(v, e->string);
            if (ps) {
                if ((rc = validate(v, ps, e, depth + 1))) return rc;
            } else if (cJSON_IsFalse(add)) {
                return invalid(v, "this key is not allowed (additionalProperties is false)");
            } else if (cJSON_IsObject(add)) {
                if ((rc = validate(v, add, e, depth + 1))) return rc;
            }
            v->path[n] = 0;
        }
    }
    if (cJSON_IsArray(x)) {
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
        const cJSON *prefix = cJSON_GetObjectItemCaseSensitive(s, "prefixItems");
        const cJSON *mn = cJSON_GetObjectItemCaseSensitive(s, "minItems");
        const cJSON *mx = cJSON_GetObjectItemCaseSensitive(s, "maxItems");
        int count = cJSON_GetArraySize(x);
        if (cJSON_IsNumber(mn) && count < mn->valuedouble) return invalid(v, "too few items (minItems)");
        if (cJSON_IsNumber(mx) && count > mx->valuedouble) return invalid(v, "too many items (maxItems)");
        if (cJSON_IsArray(prefix) && count != cJSON_GetArraySize(prefix))
            return invalid(v, "not as many items as prefixItems");
        int i = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, x) {
            char seg[16];
            snprintf(seg, sizeof seg, "%d", i);
            size_t n = push(v, seg);
            const cJSON *is = cJSON_IsArray(prefix) ? cJSON_GetArrayItem(prefix, i) : items;
            if (is && (rc = validate(v, is, e, depth + 1))) return rc;
            v->path[n] = 0;
            i++;
        }
    }
    if (cJSON_IsString(x)) {
        const char *str = x->valuestring;
        const cJSON *mn = cJSON_GetObjectItemCaseSensitive(s, "minLength");
        const cJSON *mx = cJSON_GetObjectItemCaseSensitive(s, "maxLength");
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(s, "pattern");
        const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(s, "format");
        size_t len = utf8_len(str);
        if (cJSON_IsNumber(mn) && len < mn->valuedouble) return invalid(v, "shorter than minLength");
        if (cJSON_IsNumber(mx) && len > mx->valuedouble) return invalid(v, "longer than maxLength");
        if (cJSON_IsString(pat) && pattern_matches(pat->valuestring, str) == 0)
            return invalid(v, "does not match the pattern");
        if (cJSON_IsString(fmt)) {
            const char *f = fmt->valuestring;
            int ok = 1;
            if (!strcmp(f, "date")) ok = is_date(str);
            else if (!strcmp(f, "time")) ok = is_time(str);
            else if (!strcmp(f, "date-time")) {
                char date[11] = {0};
                if (strlen(str) > 11) memcpy(date, str, 10);
                ok = str[0] && strlen(str) > 11 && str[10] == 'T' && is_date(date) &&
                     is_time(str + 11);
            }
            else if (!strncmp(f, "uuid", 4)) ok = is_uuid(str);
            if (!ok) return invalid(v, "not of the format");
        }
    }
    if (cJSON_IsNumber(x)) {
        double d = x->valuedouble;
        const cJSON *b;
        if ((b = cJSON_GetObjectItemCaseSensitive(s, "minimum")) && cJSON_IsNumber(b) && d < b->valuedouble)
            return invalid(v, "below minimum");
        if ((b = cJSON_GetObjectItemCaseSensitive(s, "maximum")) && cJSON_IsNumber(b) && d > b->valuedouble)
            return invalid(v, "above maximum");
        if ((b = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMinimum")) && cJSON_IsNumber(b) && d <= b->valuedouble)
            return invalid(v, "not above exclusiveMinimum");
        if ((b = cJSON_GetObjectItemCaseSensitive(s, "exclusiveMaximum")) && cJSON_IsNumber(b) && d >= b->valuedouble)
            return invalid(v, "not below exclusiveMaximum");
    }
    return 0;
}

int chat_schema_validate(const char *schema, const char *value_json, char *err, size_t errsz) {
    if (!schema || !value_json) {
        seterr(err, errsz, "no schema or no value");
        return -1;
    }
    cJSON *s = fe_json_parse_text(schema, strlen(schema), NULL);
    if (!s) {
        seterr(err, errsz, "the schema is not valid JSON");
        return -1;
    }
    cJSON *x = fe_json_parse_text(value_json, strlen(value_json), NULL);
    if (!x) {
        cJSON_Delete(s);
        seterr(err, errsz, "the value is not valid JSON");
        return -1;
    }
    vctx *v = calloc(1, sizeof *v);
    int rc = -1;
    if (v) {
        v->root = s, v->err = err, v->errsz = errsz;
        rc = validate(v, s, x, 0);
        if (rc < 0) seterr(err, errsz, "the schema is not one chat_schema_check accepts (or "
                                       "recurses without end)");
        free(v);
    }
    cJSON_Delete(s);
    cJSON_Delete(x);
    return rc < 0 ? -1 : rc;
}
