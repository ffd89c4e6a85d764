/* hub_parse.c - the Hub client's parsers of hostile bytes (hub_parse.h): the API listing and a
 * safetensors header fetched by Range, with every rule of docs/LIMITS.md "Hub answers" that can be
 * checked before a byte of a file is asked for. Numbers from JSON are taken only when integral and
 * below 2^53 (exact as a double); names twice, and a file that is also another's folder, are
 * found by sorting (10,000 files or 1,000,000 tensors stay fast). Shared with fuzz/fuzz_hub_*.c. */
#define _GNU_SOURCE
#include "hub_internal.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend.h"

#define EXACT_MAX 9007199254740992.0 /* 2^53: integers below it are exact as doubles */

/* An integral JSON number in [0, max]. */
static int json_u64(const cJSON *v, double max, uint64_t *out) {
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!(d >= 0 && d <= max && d < EXACT_MAX) || floor(d) != d) return 0;
    *out = (uint64_t)d;
    return 1;
}

static int hexlen(const char *s, size_t n) {
    size_t k = 0;
    for (; s[k]; k++)
        if (!isxdigit((unsigned char)s[k])) return 0;
    return k == n;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void hub_files_free(hub_file *f, int n) {
    for (int i = 0; i < n; i++) free(f[i].path);
    free(f);
}

/* A name twice, or a file whose name is another's folder ("dir" and "dir/file"): the offending
 * name, else NULL. names: n strings, sorted here. */
static const char *name_clash(const char **names, size_t n) {
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(names[i - 1], names[i])) return names[i];
    char pre[1100];
    for (size_t i = 0; i < n; i++)
        for (const char *sl = strchr(names[i], '/'); sl; sl = strchr(sl + 1, '/')) {
            size_t k = (size_t)(sl - names[i]);
            if (k >= sizeof pre) break;
            memcpy(pre, names[i], k);
            pre[k] = 0;
            const char *key = pre;
            if (bsearch(&key, names, n, sizeof *names, cmp_str)) return names[i];
        }
    return NULL;
}

int hub_parse_listing(const char *text, size_t n, const char *what, const char *rev,
                      char commit[41], hub_file **files, int *nfiles, char *err, size_t ecap) {
    cJSON *j = fe_json_parse_text(text, n, NULL);
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(j, "sha");
    const cJSON *sib = cJSON_GetObjectItemCaseSensitive(j, "siblings");
    if (!cJSON_IsObject(j) || !cJSON_IsString(sha) || !hub_is_commit(sha->valuestring) ||
        !cJSON_IsArray(sib)) {
        cJSON_Delete(j);
        snprintf(err, ecap, "%s: the Hub's listing has no commit sha or no siblings; refused",
                 what);
        return HUB_ERR_INTEGRITY;
    }
    if (hub_is_commit(rev) && strcmp(rev, sha->valuestring)) {
        snprintf(err, ecap, "%s: the listing is of commit %s, not the one asked; refused", what,
                 sha->valuestring);
        cJSON_Delete(j);
        return HUB_ERR_INTEGRITY;
    }
    memcpy(commit, sha->valuestring, 41);
    int cnt = cJSON_GetArraySize(sib);
    if (cnt > HUB_MAX_FILES) {
        cJSON_Delete(j);
        snprintf(err, ecap, "%s: %d files listed, more than %d (docs/LIMITS.md)", what, cnt,
                 HUB_MAX_FILES);
        return HUB_ERR_INTEGRITY;
    }
    hub_file *f = calloc((size_t)cnt + 1, sizeof *f);
    if (!f) return cJSON_Delete(j), snprintf(err, ecap, "out of memory"), HUB_ERR_NOMEM;
    int k = 0, rc = HUB_OK;
    const cJSON *it;
    cJSON_ArrayForEach(it, sib) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, "rfilename");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(it, "size");
        const cJSON *blob = cJSON_GetObjectItemCaseSensitive(it, "blobId");
        const cJSON *lfs = cJSON_GetObjectItemCaseSensitive(it, "lfs");
        const cJSON *lsha = cJSON_GetObjectItemCaseSensitive(lfs, "sha256");
        const cJSON *lsize = cJSON_GetObjectItemCaseSensitive(lfs, "size");
        if (!cJSON_IsString(name) || !hub_path_safe(name->valuestring)) {
            snprintf(err, ecap, "%s: the listing names a file %s%.1100s%s, which would land "
                     "outside the model's folder (absolute, '..', '.', empty part or "
                     "backslash); refused", what, cJSON_IsString(name) ? "\"" : "",
                     cJSON_IsString(name) ? name->valuestring : "without a name",
                     cJSON_IsString(name) ? "\"" : "");
            rc = HUB_ERR_INTEGRITY;
            break;
        }
        const cJSON *sz = lfs ? lsize : size;
        uint64_t bytes;
        if (!json_u64(sz, HUB_MAX_FILE_SIZE, &bytes) ||
            (lfs ? !cJSON_IsString(lsha) || !hexlen(lsha->valuestring, 64)
                 : !cJSON_IsString(blob) || !hexlen(blob->valuestring, 40))) {
            snprintf(err, ecap, "%s: the listing gives %s no size or no %s; refused", what,
                     name->valuestring, lfs ? "sha256" : "blobId");
            rc = HUB_ERR_INTEGRITY;
            break;
        }
        f[k].path = strdup(name->valuestring);
        if (!f[k].path) {
            rc = HUB_ERR_NOMEM;
            snprintf(err, ecap, "out of memory");
            break;
        }
        f[k].size = bytes;
        f[k].lfs = lfs != NULL;
        snprintf(f[k].etag, sizeof f[k].etag, "%s", lfs ? lsha->valuestring : blob->valuestring);
        for (char *c = f[k].etag; *c; c++) *c = (char)tolower((unsigned char)*c);
        k++;
    }
    cJSON_Delete(j);
    if (!rc && k > 1) {
        const char **names = malloc((size_t)k * sizeof *names);
        if (!names) {
            rc = HUB_ERR_NOMEM;
            snprintf(err, ecap, "out of memory");
        } else {
            for (int i = 0; i < k; i++) names[i] = f[i].path;
            const char *bad = name_clash(names, (size_t)k);
            if (bad) {
                snprintf(err, ecap, "%s: the listing names %s twice or as a folder; refused",
                         what, bad);
                rc = HUB_ERR_INTEGRITY;
            }
            free(names);
        }
    }
    if (rc) {
        hub_files_free(f, k);
        return rc;
    }
    *files = f;
    *nfiles = k;
    return HUB_OK;
}

/* ---- safetensors headers ------------------------------------------------------------------- */

int hub_is_vision_tensor(const char *name) {
    if (!strncmp(name, "model.", 6)) name += 6;
    return !strncmp(name, "vision_tower.", 13) || !strncmp(name, "vision_embedder.", 16) ||
           !strncmp(name, "embed_vision.", 13);
}

static int dtype_bytes(const char *d) {
    static const struct {
        const char *name;
        int bytes;
    } t[] = {{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"I32", 4},
             {"I16", 2}, {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"U16", 2}, {"U32", 4},
             {"U64", 8}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(d, t[i].name)) return t[i].bytes;
    return 0;
}

/* by begin, then end, then name: the same header always sorts the same way */
static int cmp_tensor(const void *a, const void *b) {
    const hub_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

int hub_st_length(const uint8_t len8[8], const char *path, uint64_t size, uint64_t *hlen,
                  char *err, size_t ecap) {
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--) h = h << 8 | len8[i];
    if (size < 8 || h > HUB_MAX_HEADER || h > size - 8) {
        snprintf(err, ecap, "%s: its header is %llu bytes, beyond the file's %llu or the limit "
                 "of %u (docs/LIMITS.md); refused", path, (unsigned long long)h,
                 (unsigned long long)size, HUB_MAX_HEADER);
        return HUB_ERR_INTEGRITY;
    }
    *hlen = h;
    return HUB_OK;
}

void hub_st_free(hub_st *s) {
    cJSON_Delete(s->header);
    free(s->t);
    s->header = NULL;
    s->t = NULL;
    s->nt = 0;
}

/* elements x dtype bytes of one entry: 1 and *bytes, or 0 (a dimension that is no integer >= 0,
 * or a product beyond 2^64) */
static int entry_bytes(const cJSON *shape, int eb, uint64_t *bytes) {
    uint64_t n = 1;
    int zero = 0, over = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, shape) {
        uint64_t v;
        if (!json_u64(d, EXACT_MAX, &v)) return 0;
        if (!v) zero = 1;
        else if (n > UINT64_MAX / v) over = 1;
        else n *= v;
    }
    if (zero) return *bytes = 0, 1;
    if (over || n > UINT64_MAX / (uint64_t)eb) return 0;
    *bytes = n * (uint64_t)eb;
    return 1;
}

int hub_st_parse(hub_st *s, const char *path, uint64_t size, const char *text, uint64_t hlen,
                 char *err, size_t ecap) {
    memset(s, 0, sizeof *s);
    s->size = size;
    s->hlen = hlen;
    if (size < 8 || hlen > size - 8) {
        snprintf(err, ecap, "%s: its header is beyond the file; refused", path);
        return HUB_ERR_INTEGRITY;
    }
    s->header = fe_json_parse_text(text, (size_t)hlen, NULL);
    if (!cJSON_IsObject(s->header)) {
        snprintf(err, ecap, "%s: its header is not a JSON object; refused", path);
        return HUB_ERR_INTEGRITY;
    }
    const uint64_t data = size - 8 - hlen;
    int cap = cJSON_GetArraySize(s->header);
    s->t = calloc((size_t)cap + 1, sizeof *s->t);
    const char **names = calloc((size_t)cap + 1, sizeof *names);
    if (!s->t || !names) {
        free(names);
        return snprintf(err, ecap, "out of memory"), HUB_ERR_NOMEM;
    }
    size_t nn = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, s->header) {
        names[nn++] = it->string;
        if (!strcmp(it->string, "__metadata__")) {
            if (cJSON_IsObject(it)) continue;
            snprintf(err, ecap, "%s: its __metadata__ is not an object; refused", path);
            free(names);
            return HUB_ERR_INTEGRITY;
        }
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(it, "dtype");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(it, "shape");
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
        uint64_t a, b;
        if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off) ||
            cJSON_GetArraySize(off) != 2 || !json_u64(cJSON_GetArrayItem(off, 0), EXACT_MAX, &a) ||
            !json_u64(cJSON_GetArrayItem(off, 1), EXACT_MAX, &b) || b < a || b > data) {
            snprintf(err, ecap, "%s: tensor %.200s: data_offsets outside the file's %llu data "
                     "bytes (or no dtype/shape); refused", path, it->string,
                     (unsigned long long)data);
            free(names);
            return HUB_ERR_INTEGRITY;
        }
        int eb = dtype_bytes(dt->valuestring);
        uint64_t want = 0;
        if (!entry_bytes(sh, eb ? eb : 1, &want) || (eb && want != b - a)) {
            snprintf(err, ecap, "%s: tensor %.200s: shape and dtype disagree with its %llu "
                     "bytes; refused", path, it->string, (unsigned long long)(b - a));
            free(names);
            return HUB_ERR_INTEGRITY;
        }
        if (!hub_is_vision_tensor(it->string)) continue;
        hub_tensor *t = &s->t[s->nt++];
        t->name = it->string;
        t->item = it;
        t->begin = a;
        t->end = b;
    }
    qsort(names, nn, sizeof *names, cmp_str);
    for (size_t i = 1; i < nn; i++)
        if (!strcmp(names[i - 1], names[i])) {
            snprintf(err, ecap, "%s: the header names %.200s twice; refused", path, names[i]);
            free(names);
            return HUB_ERR_INTEGRITY;
        }
    free(names);
    qsort(s->t, (size_t)s->nt, sizeof *s->t, cmp_tensor);
    for (int i = 0; i < s->nt; i++) {
        if (i && s->t[i].begin < s->t[i - 1].end) {
            snprintf(err, ecap, "%s: tensors %.200s and %.200s overlap; refused", path,
                     s->t[i - 1].name, s->t[i].name);
            return HUB_ERR_INTEGRITY;
        }
        s->t[i].dst = s->bytes;
        s->bytes += s->t[i].end - s->t[i].begin;
    }
    return HUB_OK;
}

char *hub_st_cut_header(const hub_st *s, uint64_t *len) {
    cJSON *o = cJSON_CreateObject();
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(s->header, "__metadata__");
    int bad = !o || (meta && !cJSON_AddItemToObject(o, "__metadata__", cJSON_Duplicate(meta, 1)));
    for (int i = 0; !bad && i < s->nt; i++) {
        const hub_tensor *t = &s->t[i];
        cJSON *e = cJSON_CreateObject(), *off = cJSON_CreateArray();
        cJSON *dt = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t->item, "dtype"), 1);
        cJSON *sh = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(t->item, "shape"), 1);
        cJSON *a = cJSON_CreateNumber((double)t->dst);
        cJSON *b = cJSON_CreateNumber((double)(t->dst + t->end - t->begin));
        if (!e || !off || !dt || !sh || !a || !b) {
            cJSON_Delete(e), cJSON_Delete(off), cJSON_Delete(dt), cJSON_Delete(sh);
            cJSON_Delete(a), cJSON_Delete(b);
            bad = 1;
            break;
        }
        cJSON_AddItemToArray(off, a);
        cJSON_AddItemToArray(off, b);
        cJSON_AddItemToObject(e, "dtype", dt);
        cJSON_AddItemToObject(e, "shape", sh);
        cJSON_AddItemToObject(e, "data_offsets", off);
        cJSON_AddItemToObject(o, t->name, e);
    }
    char *text = bad ? NULL : cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return NULL;
    size_t n = strlen(text), p = (n + 7) / 8 * 8;
    char *out = realloc(text, p + 1);
    if (!out) return free(text), NULL;
    memset(out + n, ' ', p - n);
    out[p] = 0;
    *len = p;
    return out;
}
