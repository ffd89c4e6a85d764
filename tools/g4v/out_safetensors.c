/* out_safetensors.c - the streaming .safetensors writer (see out_safetensors.h). Uses cJSON for
 * the header so names and metadata are escaped correctly. Host must be little endian (x86-64,
 * aarch64), as the data is written as it lies in memory. */
#include "out_safetensors.h"

#include "frontend.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct out_st_writer {
    char *path, *tmp_data, *tmp_out;
    FILE *data;
    uint64_t offset;
    cJSON *header, *meta;
};

static char *fmt_path(const char *path, const char *suffix) {
    size_t n = strlen(path) + strlen(suffix) + 32;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s%s%ld", path, suffix, (long)getpid());
    return p;
}

static void out_st_free(out_st_writer *w) {
    if (!w) return;
    if (w->data) fclose(w->data);
    if (w->tmp_data) unlink(w->tmp_data);
    cJSON_Delete(w->header);
    free(w->path);
    free(w->tmp_data);
    free(w->tmp_out);
    free(w);
}

out_st_writer *out_st_open(const char *path) {
    out_st_writer *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    w->path = strdup(path);
    w->tmp_data = fmt_path(path, ".tmp-data-");
    w->tmp_out = fmt_path(path, ".tmp-");
    w->header = cJSON_CreateObject();
    w->meta = cJSON_CreateObject();
    if (!w->path || !w->tmp_data || !w->tmp_out || !w->header || !w->meta) {
        cJSON_Delete(w->meta);
        out_st_free(w);
        errno = ENOMEM;
        return NULL;
    }
    cJSON_AddItemToObject(w->header, "__metadata__", w->meta);
    if (!(w->data = fopen(w->tmp_data, "wb"))) {
        int e = errno;
        free(w->tmp_data);
        w->tmp_data = NULL; /* nothing to unlink */
        out_st_free(w);
        errno = e;
        return NULL;
    }
    return w;
}

int out_st_add(out_st_writer *w, const char *name, const char *dtype, const void *data, long rows,
               long cols, const char *const *meta, char *final_name, size_t cap) {
    /* The header is JSON, which readers take as strict UTF-8: a name from a file name that is not
     * UTF-8 gets '?' for the bad bytes, before the check for names already taken. */
    char base[1000], unique[1024];
    snprintf(base, sizeof base, "%s", name);
    fe_utf8_sanitize(base);
    snprintf(unique, sizeof unique, "%s", base);
    for (int k = 2;
         cJSON_GetObjectItemCaseSensitive(w->header, unique) || !strcmp(unique, "__metadata__");
         k++)
        snprintf(unique, sizeof unique, "%s#%d", base, k);
    size_t elem = !strcmp(dtype, "F32") ? 4 : 2;
    size_t bytes = (size_t)rows * (size_t)cols * elem;
    if (fwrite(data, 1, bytes, w->data) != bytes) return -1;
    cJSON *t = cJSON_CreateObject();
    double shape[2] = {(double)rows, (double)cols};
    double offs[2] = {(double)w->offset, (double)(w->offset + bytes)};
    if (!t || !cJSON_AddStringToObject(t, "dtype", dtype) ||
        !cJSON_AddItemToObject(t, "shape", cJSON_CreateDoubleArray(shape, 2)) ||
        !cJSON_AddItemToObject(t, "data_offsets", cJSON_CreateDoubleArray(offs, 2))) {
        cJSON_Delete(t);
        errno = ENOMEM;
        return -1;
    }
    cJSON_AddItemToObject(w->header, unique, t);
    for (int i = 0; meta && meta[i] && meta[i + 1]; i += 2) {
        char key[1200];
        snprintf(key, sizeof key, "%s.%s", unique, meta[i]);
        cJSON_AddStringToObject(w->meta, key, meta[i + 1]);
    }
    w->offset += bytes;
    if (final_name && cap) snprintf(final_name, cap, "%s", unique);
    return 0;
}

int out_st_close(out_st_writer *w, int ok) {
    if (!w) return -1;
    if (!ok) {
        out_st_free(w);
        return 0;
    }
    int rc = -1, e = 0;
    char *json = cJSON_PrintUnformatted(w->header);
    FILE *out = NULL;
    if (!json) {
        e = ENOMEM;
        goto done;
    }
    fe_utf8_sanitize(json); /* metadata values quote input paths */
    if (fflush(w->data) || fclose(w->data)) {
        w->data = NULL;
        e = errno;
        goto done;
    }
    w->data = NULL;
    size_t len = strlen(json), padded = (len + 7) / 8 * 8;
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++)
        lenb[i] = (unsigned char)((uint64_t)padded >> (8 * i));
    FILE *in = fopen(w->tmp_data, "rb");
    if (!in || !(out = fopen(w->tmp_out, "wb"))) {
        e = errno;
        if (in) fclose(in);
        goto done;
    }
    int good = fwrite(lenb, 1, 8, out) == 8 && fwrite(json, 1, len, out) == len;
    for (size_t i = len; good && i < padded; i++)
        good = fputc(' ', out) != EOF;
    char buf[1 << 16];
    size_t got;
    while (good && (got = fread(buf, 1, sizeof buf, in)) > 0)
        good = fwrite(buf, 1, got, out) == got;
    good = good && !ferror(in);
    fclose(in);
    if (!good) e = errno ? errno : EIO;
    if (fclose(out) && good) {
        good = 0;
        e = errno;
    }
    out = NULL;
    if (good && rename(w->tmp_out, w->path) == 0)
        rc = 0;
    else {
        if (good) e = errno;
        unlink(w->tmp_out);
    }
done:
    if (out) {
        fclose(out);
        unlink(w->tmp_out);
    }
    cJSON_free(json);
    out_st_free(w);
    if (rc) errno = e;
    return rc;
}
