/* safetensors.c - header parsing, entry validation and range mapping (see safetensors.h).
 *
 * Every number from the header is checked before it is used as a size or an offset: header
 * length against the limit and the file, shape entries and their product for overflow,
 * data_offsets against the data section. Nothing is read outside [0, file size).
 */
#include "io/safetensors.h"

#include "base/alloc.h"
#include "io/fsutil.h"
#include "io/json_file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void g4v_shape_str(char *buf, size_t cap, int ndim, const int64_t *shape) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = -1; i <= ndim && used < cap; i++) {
        int n = i < 0          ? snprintf(buf + used, cap - used, "[")
                : i == ndim    ? snprintf(buf + used, cap - used, "]")
                : i + 1 < ndim ? snprintf(buf + used, cap - used, "%lld, ", (long long)shape[i])
                               : snprintf(buf + used, cap - used, "%lld", (long long)shape[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
}

static uint64_t load_le64(const unsigned char *b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | b[i];
    return v;
}

int g4v_st_open(const char *path, const g4v_checkpoint_limits *lim, g4v_st_file *f, g4v_err *err) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    size_t plen = strlen(path);
    if (plen >= sizeof f->path) return g4v_fail(err, G4V_ERR_IO, "path too long: %s", path);
    memcpy(f->path, path, plen + 1);

    uint64_t size;
    int st = g4v_open_regular(path, &f->fd, &size, err);
    if (st) return st;
    f->file_size = size;
    if (size < 8) {
        g4v_st_close(f);
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: file is %llu bytes, too short for a safetensors header", path,
                        (unsigned long long)size);
    }
    unsigned char lenbuf[8];
    if ((st = g4v_pread_full(f->fd, lenbuf, 8, 0, path, err))) {
        g4v_st_close(f);
        return st;
    }
    uint64_t n = load_le64(lenbuf);
    if (n > lim->max_header_bytes) {
        g4v_st_close(f);
        return g4v_fail(err, G4V_ERR_LIMIT,
                        "%s: safetensors header length %llu is above the limit of %llu bytes "
                        "(max_header_bytes)",
                        path, (unsigned long long)n, (unsigned long long)lim->max_header_bytes);
    }
    if (n > size - 8) {
        g4v_st_close(f);
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: safetensors header length %llu runs past the end of the file "
                        "(%llu bytes; truncated download?)",
                        path, (unsigned long long)n, (unsigned long long)size);
    }
    if (n < 2) {
        g4v_st_close(f);
        return g4v_fail(err, G4V_ERR_MODEL, "%s: safetensors header length %llu is too small", path,
                        (unsigned long long)n);
    }
    char *buf = g4v_malloc((size_t)n);
    if (!buf) {
        g4v_st_close(f);
        return g4v_fail(err, G4V_ERR_NOMEM, "%s: cannot allocate %llu bytes for the header", path,
                        (unsigned long long)n);
    }
    if ((st = g4v_pread_full(f->fd, buf, (size_t)n, 8, path, err))) {
        g4v_free(buf);
        g4v_st_close(f);
        return st;
    }
    if (buf[0] != '{') {
        g4v_free(buf);
        g4v_st_close(f);
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: not a safetensors file (header does not start with '{')", path);
    }
    char what[4200];
    snprintf(what, sizeof what, "%s: safetensors header", path);
    f->header = g4v_json_parse(buf, (size_t)n, what, err);
    g4v_free(buf);
    if (!f->header) {
        st = err ? err->status : G4V_ERR_MODEL;
        g4v_st_close(f);
        return st;
    }
    uint64_t count = 0;
    for (const cJSON *c = f->header->child; c; c = c->next)
        count++;
    if (count > lim->max_tensor_count) {
        g4v_st_close(f);
        return g4v_fail(err, G4V_ERR_LIMIT,
                        "%s: %llu header entries, above the limit of %llu (max_tensor_count)", path,
                        (unsigned long long)count, (unsigned long long)lim->max_tensor_count);
    }
    f->data_start = 8 + n;
    f->data_len = size - f->data_start;
    f->read_weights = lim->read_weights;
    return G4V_OK;
}

void g4v_st_release_header(g4v_st_file *f) {
    cJSON_Delete(f->header);
    f->header = NULL;
}

void g4v_st_close(g4v_st_file *f) {
    g4v_st_release_header(f);
    g4v_close_fd(f->fd);
    f->fd = -1;
}

static int parse_dtype(const char *s, g4v_dtype *dt) {
    if (!strcmp(s, "BF16"))
        *dt = G4V_DT_BF16;
    else if (!strcmp(s, "F16"))
        *dt = G4V_DT_F16;
    else if (!strcmp(s, "F32"))
        *dt = G4V_DT_F32;
    else
        return 0;
    return 1;
}

int g4v_st_entry_parse(const g4v_st_file *f, const cJSON *item, const char *name, g4v_st_entry *e,
                       g4v_err *err) {
    memset(e, 0, sizeof *e);
    const char *path = f->path;
    if (!cJSON_IsObject(item))
        return g4v_fail(err, G4V_ERR_MODEL, "%s: tensor %s: header entry is not an object", path,
                        name);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    if (!cJSON_IsString(dt))
        return g4v_fail(err, G4V_ERR_MODEL, "%s: tensor %s: missing or non-string dtype", path,
                        name);
    if (!parse_dtype(dt->valuestring, &e->dtype)) {
        int quant = !strcmp(dt->valuestring, "U32") || !strcmp(dt->valuestring, "U8") ||
                    !strcmp(dt->valuestring, "I8") || !strncmp(dt->valuestring, "F8", 2);
        char shown[40];
        snprintf(shown, sizeof shown, "%s", dt->valuestring);
        return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                        "%s: tensor %s: unsupported dtype '%s' (BF16, F16 and F32 are supported%s)",
                        path, name, shown, quant ? "; quantized vision weights are not" : "");
    }
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    if (!cJSON_IsArray(shape))
        return g4v_fail(err, G4V_ERR_MODEL, "%s: tensor %s: missing or non-array shape", path,
                        name);
    uint64_t nelem = 1;
    int nd = 0;
    for (const cJSON *s = shape->child; s; s = s->next, nd++) {
        if (nd >= G4V_ST_MAX_RANK)
            return g4v_fail(err, G4V_ERR_MODEL, "%s: tensor %s: rank above %d", path, name,
                            G4V_ST_MAX_RANK);
        int64_t v = g4v_json_uint(s);
        if (v < 0)
            return g4v_fail(err, G4V_ERR_MODEL,
                            "%s: tensor %s: shape entry %d is not a non-negative integer", path,
                            name, nd);
        if (v && nelem > (uint64_t)INT64_MAX / (uint64_t)v)
            return g4v_fail(err, G4V_ERR_MODEL, "%s: tensor %s: element count overflows", path,
                            name);
        nelem *= (uint64_t)v;
        e->shape[nd] = v;
    }
    e->ndim = nd;
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    int64_t b = -1, en = -1;
    if (cJSON_IsArray(off) && cJSON_GetArraySize(off) == 2) {
        b = g4v_json_uint(off->child);
        en = g4v_json_uint(off->child->next);
    }
    if (b < 0 || en < 0)
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: tensor %s: data_offsets must be two non-negative integers", path,
                        name);
    if (en < b)
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: tensor %s: data_offsets [%lld, %lld] end before begin", path, name,
                        (long long)b, (long long)en);
    if ((uint64_t)en > f->data_len)
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: tensor %s: data_offsets [%lld, %lld] lie outside the data section "
                        "(%llu bytes)",
                        path, name, (long long)b, (long long)en, (unsigned long long)f->data_len);
    size_t esz = g4v_dtype_size(e->dtype);
    uint64_t len = (uint64_t)(en - b);
    if (len % esz || len / esz != nelem) {
        char sh[160];
        g4v_shape_str(sh, sizeof sh, nd, e->shape);
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: tensor %s: data_offsets [%lld, %lld] hold %llu bytes, but shape %s of "
                        "%s needs %llu elements x %zu bytes",
                        path, name, (long long)b, (long long)en, (unsigned long long)len, sh,
                        g4v_dtype_name(e->dtype), (unsigned long long)nelem, esz);
    }
    e->begin = (uint64_t)b;
    e->end = (uint64_t)en;
    return G4V_OK;
}

/* read_weights: bytes [at, at + len) of the file into a new heap block. The header promised them
 * (every range was checked against the size at open), so a short read means the file shrank. */
static int read_span(const g4v_st_file *f, uint64_t at, size_t len, void **out, g4v_err *err) {
    unsigned char *buf = g4v_malloc_large(len);
    if (!buf)
        return g4v_fail(err, G4V_ERR_NOMEM, "%s: out of memory reading %zu bytes of weights",
                        f->path, len);
    for (size_t got = 0; got < len;) {
        ssize_t r = pread(f->fd, buf + got, len - got, (off_t)(at + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            g4v_free_large(buf);
            if (r == 0)
                return g4v_fail(err, G4V_ERR_IO,
                                "%s: ends at byte %llu, before the %llu its header promised: the "
                                "file changed while loading",
                                f->path, (unsigned long long)(at + got),
                                (unsigned long long)f->file_size);
            return g4v_fail(err, G4V_ERR_IO, "%s: cannot read bytes [%llu, %llu): %s", f->path,
                            (unsigned long long)at, (unsigned long long)(at + len),
                            strerror(errno));
        }
        got += (size_t)r;
    }
    *out = buf;
    return G4V_OK;
}

int g4v_st_map_ranges(const g4v_st_file *f, size_t n, const uint64_t *begin, const uint64_t *end,
                      uint64_t merge_gap, const void **ptrs, g4v_st_mapping **maps, size_t *nmaps,
                      g4v_err *err) {
    static const unsigned char empty[1];
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        uint64_t hi = end[i];
        while (j + 1 < n && begin[j + 1] <= hi + merge_gap) {
            j++;
            if (end[j] > hi) hi = end[j];
        }
        uint64_t flo = f->data_start + begin[i], fhi = f->data_start + hi;
        if (fhi == flo) { /* only empty tensors: nothing to map, any non-NULL address will do */
            for (size_t k = i; k <= j; k++)
                ptrs[k] = empty;
            i = j + 1;
            continue;
        }
        uint64_t at = flo - flo % page, len = fhi - at;
        if (len > SIZE_MAX)
            return g4v_fail(err, G4V_ERR_UNSUPPORTED, "%s: range too large to map on this host",
                            f->path);
        g4v_st_mapping *grown = g4v_realloc(*maps, (*nmaps + 1) * sizeof **maps);
        if (!grown) return g4v_fail(err, G4V_ERR_NOMEM, "%s: out of memory", f->path);
        *maps = grown;
        void *addr = NULL;
        if (f->read_weights) {
            int st = read_span(f, at, (size_t)len, &addr, err);
            if (st) return st;
        } else {
            addr = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, f->fd, (off_t)at);
            if (addr == MAP_FAILED)
                return g4v_fail(err, G4V_ERR_IO, "%s: cannot map bytes [%llu, %llu): %s", f->path,
                                (unsigned long long)at, (unsigned long long)fhi, strerror(errno));
        }
        (*maps)[*nmaps].addr = addr;
        (*maps)[*nmaps].len = (size_t)len;
        (*maps)[*nmaps].copied = f->read_weights;
        (*nmaps)++;
        for (size_t k = i; k <= j; k++)
            ptrs[k] = (const unsigned char *)addr + (f->data_start + begin[k] - at);
        i = j + 1;
    }
    return G4V_OK;
}

void g4v_st_unmap(g4v_st_mapping *maps, size_t nmaps) {
    for (size_t i = 0; i < nmaps; i++) {
        if (maps[i].copied)
            g4v_free_large(maps[i].addr);
        else
            munmap(maps[i].addr, maps[i].len);
    }
}
