/* gguf.c - GGUF header parsing and tensor entry validation (see gguf.h).
 *
 * The header is read through a cursor that preads more of the file only when a field needs it,
 * so a file's header costs what it holds (a few KB for an mmproj, some MB for a language model's
 * vocabulary) and never more than max_header_bytes. Every length read from the file is checked
 * against the bytes left in the file before it is used as a size, with overflow-safe arithmetic
 * (lengths are u64; nothing is added or multiplied before it is known to fit).
 */
#include "io/gguf.h"

#include "base/alloc.h"
#include "io/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GGUF_MAGIC "GGUF"
#define DEFAULT_ALIGNMENT 32
#define MAX_KEY_BYTES 65536 /* keys are short names; a longer one is malformed */

typedef struct cursor {
    g4v_gguf_file *f;
    uint64_t max_header; /* lim->max_header_bytes */
    size_t pos;          /* next byte to parse */
    size_t have;         /* bytes of the file held in f->hdr */
    char *pool;          /* growing string pool; entries are referred to by offset until the end */
    size_t pool_len, pool_cap;
    g4v_err *err;
} cursor;

static uint64_t le(const unsigned char *b, int n) {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | b[i];
    return v;
}

/* Makes bytes [pos, pos + n) available in f->hdr; what names the field for messages. */
static int need(cursor *c, uint64_t n, const char *what) {
    g4v_gguf_file *f = c->f;
    uint64_t size = f->io.file_size;
    if (n > size - c->pos)
        return g4v_fail(c->err, G4V_ERR_MODEL,
                        "%s: %s runs past the end of the file (needs %llu bytes at byte %zu; the "
                        "file has %llu: truncated download?)",
                        f->io.path, what, (unsigned long long)n, c->pos, (unsigned long long)size);
    if (n > c->max_header || c->pos > c->max_header - n)
        return g4v_fail(c->err, G4V_ERR_LIMIT,
                        "%s: %s ends past byte %llu: the GGUF header is above the limit of %llu "
                        "bytes (max_header_bytes)",
                        f->io.path, what, (unsigned long long)c->max_header,
                        (unsigned long long)c->max_header);
    uint64_t end = c->pos + n;
    if (end <= c->have) return G4V_OK;
    /* grow geometrically (at least 64 KiB), never past the file or the limit */
    uint64_t want = c->have * 2 > end ? c->have * 2 : end;
    if (want < 65536) want = 65536;
    if (want > size) want = size;
    if (want > c->max_header) want = c->max_header;
    if (want > SIZE_MAX)
        return g4v_fail(c->err, G4V_ERR_UNSUPPORTED, "%s: GGUF header too large for this host",
                        f->io.path);
    unsigned char *grown = g4v_realloc(f->hdr, (size_t)want);
    if (!grown)
        return g4v_fail(c->err, G4V_ERR_NOMEM, "%s: out of memory reading the GGUF header (%llu bytes)",
                        f->io.path, (unsigned long long)want);
    f->hdr = grown;
    int st = g4v_pread_full(f->io.fd, f->hdr + c->have, (size_t)(want - c->have), c->have,
                            f->io.path, c->err);
    if (st) return st;
    c->have = (size_t)want;
    f->hdr_len = c->have;
    return G4V_OK;
}

static int rd_u32(cursor *c, uint32_t *v, const char *what) {
    int st = need(c, 4, what);
    if (st) return st;
    *v = (uint32_t)le(c->f->hdr + c->pos, 4);
    c->pos += 4;
    return G4V_OK;
}

static int rd_u64(cursor *c, uint64_t *v, const char *what) {
    int st = need(c, 8, what);
    if (st) return st;
    *v = le(c->f->hdr + c->pos, 8);
    c->pos += 8;
    return G4V_OK;
}

/* A string (u64 length + bytes) copied NUL-terminated into the pool; *off is its pool offset.
 * max_len: longest accepted (G4V_ERR_MODEL above). NUL bytes inside are refused. */
static int rd_name(cursor *c, uint64_t max_len, size_t *off, const char *what) {
    uint64_t len;
    int st = rd_u64(c, &len, what);
    if (st) return st;
    if ((st = need(c, len, what))) return st;
    if (len > max_len)
        return g4v_fail(c->err, G4V_ERR_MODEL, "%s: %s is %llu bytes long (at most %llu allowed)",
                        c->f->io.path, what, (unsigned long long)len,
                        (unsigned long long)max_len);
    const unsigned char *s = c->f->hdr + c->pos;
    if (memchr(s, 0, (size_t)len))
        return g4v_fail(c->err, G4V_ERR_MODEL, "%s: %s contains a NUL byte", c->f->io.path, what);
    if (c->pool_len + len + 1 > c->pool_cap) {
        size_t cap = c->pool_cap ? c->pool_cap : 4096;
        while (cap < c->pool_len + len + 1)
            cap *= 2;
        char *grown = g4v_realloc(c->pool, cap);
        if (!grown) return g4v_fail(c->err, G4V_ERR_NOMEM, "%s: out of memory", c->f->io.path);
        c->pool = grown;
        c->pool_cap = cap;
    }
    memcpy(c->pool + c->pool_len, s, (size_t)len);
    c->pool[c->pool_len + len] = '\0';
    *off = c->pool_len;
    c->pool_len += (size_t)len + 1;
    c->pos += (size_t)len;
    return G4V_OK;
}

static size_t scalar_size(uint32_t type) {
    switch (type) {
    case G4V_GGUF_U8:
    case G4V_GGUF_I8:
    case G4V_GGUF_BOOL: return 1;
    case G4V_GGUF_U16:
    case G4V_GGUF_I16: return 2;
    case G4V_GGUF_U32:
    case G4V_GGUF_I32:
    case G4V_GGUF_F32: return 4;
    case G4V_GGUF_U64:
    case G4V_GGUF_I64:
    case G4V_GGUF_F64: return 8;
    default: return 0; /* STRING, ARRAY, unknown */
    }
}

/* Skips one value of type t (not ARRAY) after checking it is well formed. */
static int skip_value(cursor *c, uint32_t t, const char *key) {
    char what[200];
    snprintf(what, sizeof what, "the value of key '%.120s'", key);
    if (t == G4V_GGUF_STRING) {
        uint64_t len;
        int st = rd_u64(c, &len, what);
        if (!st) st = need(c, len, what);
        if (!st) c->pos += (size_t)len;
        return st;
    }
    size_t n = scalar_size(t);
    int st = need(c, n, what);
    if (st) return st;
    if (t == G4V_GGUF_BOOL && c->f->hdr[c->pos] > 1)
        return g4v_fail(c->err, G4V_ERR_MODEL, "%s: key '%.120s': bool value %u is not 0 or 1",
                        c->f->io.path, key, c->f->hdr[c->pos]);
    c->pos += n;
    return G4V_OK;
}

static int parse_kv(cursor *c, g4v_gguf_kv *kv, size_t *key_off, uint64_t i) {
    g4v_gguf_file *f = c->f;
    char what[64];
    snprintf(what, sizeof what, "the key of metadata pair %llu", (unsigned long long)i);
    int st = rd_name(c, MAX_KEY_BYTES, key_off, what);
    if (st) return st;
    const char *key = c->pool + *key_off;
    char vwhat[200];
    snprintf(vwhat, sizeof vwhat, "the type of key '%.120s'", key);
    uint32_t type;
    if ((st = rd_u32(c, &type, vwhat))) return st;
    kv->type = kv->elem = type;
    kv->count = 1;
    if (type >= G4V_GGUF_TYPE_COUNT)
        return g4v_fail(c->err, G4V_ERR_MODEL, "%s: key '%.120s' has unknown value type %u",
                        f->io.path, key, type);
    if (type != G4V_GGUF_ARRAY) {
        kv->at = c->pos;
        return skip_value(c, type, key);
    }
    uint32_t elem;
    uint64_t count;
    if ((st = rd_u32(c, &elem, vwhat)) || (st = rd_u64(c, &count, vwhat))) return st;
    if (elem == G4V_GGUF_ARRAY)
        return g4v_fail(c->err, G4V_ERR_MODEL,
                        "%s: key '%.120s' is an array of arrays (nested arrays are not GGUF)",
                        f->io.path, key);
    if (elem >= G4V_GGUF_TYPE_COUNT)
        return g4v_fail(c->err, G4V_ERR_MODEL, "%s: key '%.120s': array of unknown type %u",
                        f->io.path, key, elem);
    kv->elem = elem;
    kv->count = count;
    kv->at = c->pos;
    size_t esz = scalar_size(elem);
    uint64_t left = f->io.file_size - c->pos;
    /* each element takes at least esz bytes (strings: their 8-byte length) */
    uint64_t min_each = esz ? esz : 8;
    if (count > left / min_each) {
        char awhat[200];
        snprintf(awhat, sizeof awhat, "array '%.120s' (%llu elements)", key,
                 (unsigned long long)count);
        return need(c, left + 1, awhat); /* fails: past the end (or the limit) */
    }
    if (esz) {
        if ((st = need(c, count * esz, vwhat))) return st;
        if (elem == G4V_GGUF_BOOL)
            for (uint64_t j = 0; j < count; j++)
                if (f->hdr[c->pos + j] > 1)
                    return g4v_fail(c->err, G4V_ERR_MODEL,
                                    "%s: key '%.120s': bool element %llu is not 0 or 1",
                                    f->io.path, key, (unsigned long long)j);
        c->pos += (size_t)(count * esz);
        return G4V_OK;
    }
    for (uint64_t j = 0; j < count && !st; j++)
        st = skip_value(c, G4V_GGUF_STRING, key);
    return st;
}

static int parse_tensor(cursor *c, g4v_gguf_tensor *t, size_t *name_off, uint64_t i) {
    g4v_gguf_file *f = c->f;
    char what[64];
    snprintf(what, sizeof what, "the name of tensor info %llu", (unsigned long long)i);
    int st = rd_name(c, G4V_GGUF_MAX_NAME - 1, name_off, what);
    if (st) return st;
    const char *name = c->pool + *name_off;
    char twhat[120];
    snprintf(twhat, sizeof twhat, "the info of tensor %s", name);
    uint32_t nd;
    if ((st = rd_u32(c, &nd, twhat))) return st;
    if (nd > G4V_GGUF_MAX_DIMS)
        return g4v_fail(c->err, G4V_ERR_MODEL, "%s: tensor %s has %u dimensions (at most %d)",
                        f->io.path, name, nd, G4V_GGUF_MAX_DIMS);
    t->ndim = (int)nd;
    uint64_t nelem = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v;
        if ((st = rd_u64(c, &v, twhat))) return st;
        if (v > (uint64_t)INT64_MAX)
            return g4v_fail(c->err, G4V_ERR_MODEL, "%s: tensor %s: dimension %u is negative",
                            f->io.path, name, d);
        if (v && nelem > (uint64_t)INT64_MAX / v)
            return g4v_fail(c->err, G4V_ERR_MODEL, "%s: tensor %s: element count overflows",
                            f->io.path, name);
        nelem *= v;
        t->ne[d] = (int64_t)v;
    }
    for (uint32_t d = nd; d < G4V_GGUF_MAX_DIMS; d++)
        t->ne[d] = 1;
    if ((st = rd_u32(c, &t->type, twhat))) return st;
    return rd_u64(c, &t->offset, twhat);
}

static int cmp_kv_key(const void *a, const void *b) {
    return strcmp(((const g4v_gguf_kv *)a)->key, ((const g4v_gguf_kv *)b)->key);
}

static int cmp_tensor_ptr(const void *a, const void *b) {
    return strcmp((*(const g4v_gguf_tensor *const *)a)->name,
                  (*(const g4v_gguf_tensor *const *)b)->name);
}

/* Key lookup and duplicate detection: the pairs are sorted by key (their file order is not
 * needed), tensors are indexed through by_name. */
static int index_names(cursor *c) {
    g4v_gguf_file *f = c->f;
    qsort(f->kv, f->nkv, sizeof *f->kv, cmp_kv_key);
    for (size_t i = 1; i < f->nkv; i++)
        if (!strcmp(f->kv[i - 1].key, f->kv[i].key))
            return g4v_fail(c->err, G4V_ERR_MODEL, "%s: duplicate metadata key '%.120s'",
                            f->io.path, f->kv[i].key);
    if (!f->nt) return G4V_OK;
    f->by_name = g4v_malloc_array(f->nt, sizeof *f->by_name);
    if (!f->by_name) return g4v_fail(c->err, G4V_ERR_NOMEM, "%s: out of memory", f->io.path);
    for (size_t i = 0; i < f->nt; i++)
        f->by_name[i] = &f->t[i];
    qsort(f->by_name, f->nt, sizeof *f->by_name, cmp_tensor_ptr);
    for (size_t i = 1; i < f->nt; i++)
        if (!strcmp(f->by_name[i - 1]->name, f->by_name[i]->name))
            return g4v_fail(c->err, G4V_ERR_MODEL, "%s: duplicate tensor name %s", f->io.path,
                            f->by_name[i]->name);
    return G4V_OK;
}

static int read_alignment(cursor *c) {
    g4v_gguf_file *f = c->f;
    f->alignment = DEFAULT_ALIGNMENT;
    const g4v_gguf_kv *kv = g4v_gguf_find(f, "general.alignment");
    if (!kv) return G4V_OK;
    if (kv->type != G4V_GGUF_U32)
        return g4v_fail(c->err, G4V_ERR_MODEL, "%s: general.alignment must be a u32 (type %u found)",
                        f->io.path, kv->type);
    uint64_t a = le(f->hdr + kv->at, 4);
    if (!a || (a & (a - 1)))
        return g4v_fail(c->err, G4V_ERR_MODEL,
                        "%s: general.alignment %llu is not a power of two", f->io.path,
                        (unsigned long long)a);
    f->alignment = a;
    return G4V_OK;
}

static int parse(cursor *c, const g4v_checkpoint_limits *lim) {
    g4v_gguf_file *f = c->f;
    int st = need(c, 4, "the GGUF magic");
    if (st) return st;
    if (memcmp(f->hdr, GGUF_MAGIC, 4))
        return g4v_fail(c->err, G4V_ERR_MODEL, "%s: not a GGUF file (no \"GGUF\" magic)",
                        f->io.path);
    c->pos = 4;
    if ((st = rd_u32(c, &f->version, "the GGUF version"))) return st;
    if (f->version != 2 && f->version != 3)
        return g4v_fail(c->err, f->version == 1 ? G4V_ERR_UNSUPPORTED : G4V_ERR_MODEL,
                        "%s: GGUF version %u (2 and 3 are read%s)", f->io.path, f->version,
                        f->version > 0xffff ? "; a big-endian file?" : "");
    uint64_t nt, nkv;
    if ((st = rd_u64(c, &nt, "the tensor count")) || (st = rd_u64(c, &nkv, "the metadata count")))
        return st;
    if (nt > lim->max_tensor_count || nkv > lim->max_tensor_count)
        return g4v_fail(c->err, G4V_ERR_LIMIT,
                        "%s: %llu tensors and %llu metadata pairs: above the limit of %llu "
                        "(max_tensor_count)",
                        f->io.path, (unsigned long long)nt, (unsigned long long)nkv,
                        (unsigned long long)lim->max_tensor_count);
    uint64_t left = f->io.file_size - c->pos;
    /* a pair takes >= 13 bytes (key length, type, a u8), a tensor info >= 24 */
    if (nkv > left / 13 || nt > (left - nkv * 13) / 24)
        return g4v_fail(c->err, G4V_ERR_MODEL,
                        "%s: %llu metadata pairs and %llu tensor infos cannot fit in the %llu "
                        "bytes left in the file (corrupt or truncated)",
                        f->io.path, (unsigned long long)nkv, (unsigned long long)nt,
                        (unsigned long long)left);
    f->kv = g4v_calloc(nkv ? (size_t)nkv : 1, sizeof *f->kv);
    f->t = g4v_calloc(nt ? (size_t)nt : 1, sizeof *f->t);
    size_t *koff = g4v_malloc_array(nkv ? (size_t)nkv : 1, sizeof *koff);
    size_t *toff = g4v_malloc_array(nt ? (size_t)nt : 1, sizeof *toff);
    if (!f->kv || !f->t || !koff || !toff)
        st = g4v_fail(c->err, G4V_ERR_NOMEM, "%s: out of memory for the GGUF header", f->io.path);
    for (uint64_t i = 0; i < nkv && !st; i++, f->nkv++)
        st = parse_kv(c, &f->kv[i], &koff[i], i);
    for (uint64_t i = 0; i < nt && !st; i++, f->nt++)
        st = parse_tensor(c, &f->t[i], &toff[i], i);
    if (!st) { /* the pool is final: offsets become pointers */
        f->pool = c->pool;
        c->pool = NULL;
        for (size_t i = 0; i < f->nkv; i++)
            f->kv[i].key = f->pool + koff[i];
        for (size_t i = 0; i < f->nt; i++)
            f->t[i].name = f->pool + toff[i];
    }
    g4v_free(koff);
    g4v_free(toff);
    if (st) return st;
    if ((st = index_names(c)) || (st = read_alignment(c))) return st;
    uint64_t start = c->pos;
    if (f->nt) { /* the data section starts at the next multiple of the alignment */
        uint64_t a = f->alignment, pad = (a - start % a) % a;
        if (pad > f->io.file_size - start)
            return g4v_fail(c->err, G4V_ERR_MODEL,
                            "%s: the data section (at byte %llu, alignment %llu) starts past the "
                            "end of the file (%llu bytes: truncated?)",
                            f->io.path, (unsigned long long)start, (unsigned long long)a,
                            (unsigned long long)f->io.file_size);
        start += pad;
    }
    f->io.data_start = start;
    f->io.data_len = f->io.file_size - start;
    return G4V_OK;
}

int g4v_gguf_open(const char *path, const g4v_checkpoint_limits *lim, g4v_gguf_file *f,
                  g4v_err *err) {
    memset(f, 0, sizeof *f);
    f->io.fd = -1;
    size_t plen = strlen(path);
    if (plen >= sizeof f->io.path) return g4v_fail(err, G4V_ERR_IO, "path too long: %s", path);
    memcpy(f->io.path, path, plen + 1);
    uint64_t size;
    int st = g4v_open_regular(path, &f->io.fd, &size, err);
    if (st) return st;
    f->io.file_size = size;
    f->io.read_weights = lim->read_weights;
    cursor c = {.f = f, .max_header = lim->max_header_bytes, .err = err};
    st = parse(&c, lim);
    g4v_free(c.pool);
    if (st) g4v_gguf_close(f);
    return st;
}

void g4v_gguf_close(g4v_gguf_file *f) {
    g4v_free(f->hdr);
    g4v_free(f->pool);
    g4v_free(f->kv);
    g4v_free(f->t);
    g4v_free(f->by_name);
    f->hdr = NULL;
    f->pool = NULL;
    f->kv = NULL;
    f->t = NULL;
    f->by_name = NULL;
    f->nkv = f->nt = 0;
    g4v_st_close(&f->io);
}

const g4v_gguf_kv *g4v_gguf_find(const g4v_gguf_file *f, const char *key) {
    g4v_gguf_kv k = {.key = key};
    return f->nkv ? bsearch(&k, f->kv, f->nkv, sizeof *f->kv, cmp_kv_key) : NULL;
}

const g4v_gguf_tensor *g4v_gguf_tensor_find(const g4v_gguf_file *f, const char *name) {
    if (!f->nt) return NULL;
    g4v_gguf_tensor k = {.name = name};
    const g4v_gguf_tensor *kp = &k;
    const g4v_gguf_tensor *const *hit =
        bsearch(&kp, f->by_name, f->nt, sizeof *f->by_name, cmp_tensor_ptr);
    return hit ? *hit : NULL;
}

static int wrong_type(const g4v_gguf_file *f, const g4v_gguf_kv *kv, const char *want,
                      g4v_err *err) {
    return g4v_fail(err, G4V_ERR_MODEL, "%s: metadata %s must be %s (value type %u%s found)",
                    f->io.path, kv->key, want, kv->elem, kv->type == G4V_GGUF_ARRAY ? ", an array," : "");
}

int g4v_gguf_get_int(const g4v_gguf_file *f, const char *key, int64_t lo, int64_t hi,
                     int64_t *out, int *present, g4v_err *err) {
    const g4v_gguf_kv *kv = g4v_gguf_find(f, key);
    if (present) *present = kv != NULL;
    if (!kv) return G4V_OK;
    const unsigned char *p = f->hdr + kv->at;
    int64_t v;
    int neg_big = 0;
    switch (kv->type) {
    case G4V_GGUF_U8: v = p[0]; break;
    case G4V_GGUF_I8: v = (int8_t)p[0]; break;
    case G4V_GGUF_U16: v = (int64_t)le(p, 2); break;
    case G4V_GGUF_I16: v = (int16_t)le(p, 2); break;
    case G4V_GGUF_U32: v = (int64_t)le(p, 4); break;
    case G4V_GGUF_I32: v = (int32_t)le(p, 4); break;
    case G4V_GGUF_I64: v = (int64_t)le(p, 8); break;
    case G4V_GGUF_U64: {
        uint64_t u = le(p, 8);
        neg_big = u > (uint64_t)INT64_MAX;
        v = neg_big ? INT64_MAX : (int64_t)u;
        break;
    }
    default: return wrong_type(f, kv, "an integer", err);
    }
    if (neg_big || v < lo || v > hi)
        return g4v_fail(err, G4V_ERR_MODEL, "%s: metadata %s = %lld is outside [%lld, %lld]",
                        f->io.path, key, (long long)v, (long long)lo, (long long)hi);
    *out = v;
    return G4V_OK;
}

int g4v_gguf_get_float(const g4v_gguf_file *f, const char *key, double *out, int *is_f32,
                       int *present, g4v_err *err) {
    const g4v_gguf_kv *kv = g4v_gguf_find(f, key);
    if (present) *present = kv != NULL;
    if (!kv) return G4V_OK;
    const unsigned char *p = f->hdr + kv->at;
    if (kv->type == G4V_GGUF_F32) {
        uint32_t u = (uint32_t)le(p, 4);
        float x;
        memcpy(&x, &u, 4);
        *out = x;
        if (is_f32) *is_f32 = 1;
    } else if (kv->type == G4V_GGUF_F64) {
        uint64_t u = le(p, 8);
        memcpy(out, &u, 8);
        if (is_f32) *is_f32 = 0;
    } else
        return wrong_type(f, kv, "a float", err);
    return G4V_OK;
}

int g4v_gguf_get_bool(const g4v_gguf_file *f, const char *key, int *out, int *present,
                      g4v_err *err) {
    const g4v_gguf_kv *kv = g4v_gguf_find(f, key);
    if (present) *present = kv != NULL;
    if (!kv) return G4V_OK;
    if (kv->type != G4V_GGUF_BOOL) return wrong_type(f, kv, "a bool", err);
    *out = f->hdr[kv->at];
    return G4V_OK;
}

int g4v_gguf_get_str(const g4v_gguf_file *f, const char *key, char *buf, size_t cap, int *present,
                     g4v_err *err) {
    const g4v_gguf_kv *kv = g4v_gguf_find(f, key);
    if (present) *present = kv != NULL;
    if (!kv) return G4V_OK;
    if (kv->type != G4V_GGUF_STRING) return wrong_type(f, kv, "a string", err);
    uint64_t len = le(f->hdr + kv->at, 8);
    if (len >= cap)
        return g4v_fail(err, G4V_ERR_MODEL, "%s: metadata %s: string of %llu bytes is too long",
                        f->io.path, key, (unsigned long long)len);
    memcpy(buf, f->hdr + kv->at + 8, (size_t)len);
    buf[len] = '\0';
    return G4V_OK;
}

/* ggml.h's type names, by id (gaps are removed types). */
static const char *const type_names[] = {
    "F32",     "F16",    "Q4_0",  "Q4_1",   "Q4_2",   "Q4_3",   "Q5_0",  "Q5_1",
    "Q8_0",    "Q8_1",   "Q2_K",  "Q3_K",   "Q4_K",   "Q5_K",   "Q6_K",  "Q8_K",
    "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S",  "IQ2_S", "IQ4_XS",
    "I8",      "I16",    "I32",   "I64",    "F64",    "IQ1_M",  "BF16",  "Q4_0_4_4",
    "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8",
    "MXFP4",   "NVFP4",  "Q1_0",  "Q2_0"};

const char *g4v_ggml_type_name(uint32_t type, char buf[16]) {
    if (type < sizeof type_names / sizeof type_names[0]) return type_names[type];
    snprintf(buf, 16, "type %u", type);
    return buf;
}

const char *g4v_gguf_file_type_name(int64_t ftype, char buf[24]) {
    switch (ftype) {
    case 0: return "ALL_F32";
    case 1: return "MOSTLY_F16";
    case 7: return "MOSTLY_Q8_0";
    case 32: return "MOSTLY_BF16";
    default: snprintf(buf, 24, "file type %lld", (long long)ftype); return buf;
    }
}

int g4v_gguf_tensor_check(const g4v_gguf_file *f, const g4v_gguf_tensor *t, uint64_t *nbytes,
                          g4v_err *err) {
    uint64_t blck, size;
    switch (t->type) {
    case G4V_GGML_F32: blck = 1, size = 4; break;
    case G4V_GGML_F16:
    case G4V_GGML_BF16: blck = 1, size = 2; break;
    case G4V_GGML_Q8_0: blck = G4V_Q8_BLOCK, size = G4V_Q8_0_BLOCK_BYTES; break;
    default: {
        char b[16];
        return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                        "%s: tensor %s has ggml type %s; F32, F16, BF16 and Q8_0 are supported",
                        f->io.path, t->name, g4v_ggml_type_name(t->type, b));
    }
    }
    uint64_t nelem = 1;
    for (int d = 0; d < t->ndim; d++)
        nelem *= (uint64_t)t->ne[d]; /* checked against INT64_MAX at parse */
    if ((uint64_t)t->ne[0] % blck)
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: tensor %s: rows of %lld values are not a multiple of the %llu-value "
                        "blocks of its type",
                        f->io.path, t->name, (long long)t->ne[0], (unsigned long long)blck);
    uint64_t blocks = nelem / blck;
    if (blocks > UINT64_MAX / size)
        return g4v_fail(err, G4V_ERR_MODEL, "%s: tensor %s: byte size overflows", f->io.path,
                        t->name);
    uint64_t n = blocks * size;
    if (t->offset % f->alignment)
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: tensor %s: data offset %llu is not a multiple of the alignment %llu",
                        f->io.path, t->name, (unsigned long long)t->offset,
                        (unsigned long long)f->alignment);
    if (t->offset > f->io.data_len || n > f->io.data_len - t->offset)
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: tensor %s: data [%llu, +%llu) lies outside the data section (%llu "
                        "bytes: truncated?)",
                        f->io.path, t->name, (unsigned long long)t->offset,
                        (unsigned long long)n, (unsigned long long)f->io.data_len);
    *nbytes = n;
    return G4V_OK;
}
