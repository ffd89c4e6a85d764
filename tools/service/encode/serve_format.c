/* serve_format.c - response bodies of `g4v serve` (see serve_format.h). */
#include "encode/serve_format.h"

#include "npy.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *mime;
    serve_format f;
} mimes[] = {
    {"application/json", FMT_JSON},
    {"application/x-npy", FMT_NPY},
    {"application/npy", FMT_NPY},
    {"application/x-safetensors", FMT_SAFETENSORS},
    {"application/safetensors", FMT_SAFETENSORS},
    {"application/*", FMT_JSON},
    {"*/*", FMT_JSON},
};

int serve_format_from_accept(const char *accept) {
    if (!accept || !*accept) return FMT_JSON;
    /* media types in order; parameters (";q=...") ignored */
    const char *p = accept;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        size_t n = strcspn(p, ",;");
        while (n && p[n - 1] == ' ') n--;
        for (size_t i = 0; i < sizeof mimes / sizeof mimes[0]; i++)
            if (strlen(mimes[i].mime) == n && !strncasecmp(p, mimes[i].mime, n)) return mimes[i].f;
        p += strcspn(p, ",");
    }
    return -1;
}

int serve_format_from_name(const char *name) {
    if (!strcmp(name, "json")) return FMT_JSON;
    if (!strcmp(name, "npy")) return FMT_NPY;
    if (!strcmp(name, "safetensors")) return FMT_SAFETENSORS;
    return -1;
}

const char *serve_format_mime(serve_format f) {
    return f == FMT_NPY ? "application/x-npy"
           : f == FMT_SAFETENSORS ? "application/x-safetensors"
                                  : "application/json";
}

void serve_prompt_compact(const g4v_result *r, char *buf, size_t cap) {
    snprintf(buf, cap, "%d %dx%d %d", (int)r->boi_token_id, (int)r->image_token_id, r->n_tokens,
             (int)r->eoi_token_id);
}

void serve_base64(const unsigned char *in, size_t n, char *out) {
    static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i = 0, o = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = t[v >> 18];
        out[o++] = t[(v >> 12) & 63];
        out[o++] = t[(v >> 6) & 63];
        out[o++] = t[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = t[v >> 18];
        out[o++] = t[(v >> 12) & 63];
        out[o++] = i + 1 < n ? t[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
}

static char *npy_body(const g4v_result *r, int bf16, size_t *len) {
    size_t esz = bf16 ? 2 : 4, n = (size_t)r->n_tokens * (size_t)r->dim;
    char header[256];
    size_t hl = g4v_npy_header(header, bf16 ? "<u2" : "<f4", r->n_tokens, r->dim);
    char *b = malloc(hl + n * esz);
    if (!b) return NULL;
    memcpy(b, header, hl);
    memcpy(b + hl, bf16 ? (const void *)r->features_bf16 : (const void *)r->features, n * esz);
    *len = hl + n * esz;
    return b;
}

static char *safetensors_body(const g4v_result *r, int bf16, const char *cache,
                              const char *fingerprint, size_t *len) {
    size_t esz = bf16 ? 2 : 4, n = (size_t)r->n_tokens * (size_t)r->dim;
    char prompt[96], hdr[2048];
    serve_prompt_compact(r, prompt, sizeof prompt);
    int hn = snprintf(hdr, sizeof hdr,
                      "{\"__metadata__\":{\"tokens\":\"%d\",\"dim\":\"%d\",\"grid\":\"%dx%d\","
                      "\"budget\":\"%d\",\"original_size\":\"%dx%d\",\"target_size\":\"%dx%d\","
                      "\"prompt_ids\":\"%s\",\"boi_token_id\":\"%d\",\"image_token_id\":\"%d\","
                      "\"eoi_token_id\":\"%d\",\"cache\":\"%s\",\"fingerprint\":\"%s\"},"
                      "\"features\":{\"dtype\":\"%s\",\"shape\":[%d,%d],\"data_offsets\":[0,%zu]}}",
                      r->n_tokens, r->dim, r->grid_w, r->grid_h, r->budget, r->src_width,
                      r->src_height, r->width, r->height, prompt, (int)r->boi_token_id,
                      (int)r->image_token_id, (int)r->eoi_token_id, cache, fingerprint,
                      bf16 ? "BF16" : "F32", r->n_tokens, r->dim, n * esz);
    if (hn < 0 || (size_t)hn + 8 > sizeof hdr) return NULL;
    while (hn % 8) hdr[hn++] = ' ';
    char *b = malloc(8 + (size_t)hn + n * esz);
    if (!b) return NULL;
    for (int i = 0; i < 8; i++) b[i] = (char)((uint64_t)hn >> (8 * i));
    memcpy(b + 8, hdr, (size_t)hn);
    memcpy(b + 8 + hn, bf16 ? (const void *)r->features_bf16 : (const void *)r->features, n * esz);
    *len = 8 + (size_t)hn + n * esz;
    return b;
}

static cJSON *pair(int a, int b) {
    int v[2] = {a, b};
    return cJSON_CreateIntArray(v, 2);
}

static char *json_body(const g4v_result *r, int bf16, const char *cache, const char *fingerprint,
                       size_t *len) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "tokens", r->n_tokens);
    cJSON_AddNumberToObject(o, "dim", r->dim);
    cJSON_AddItemToObject(o, "grid", pair(r->grid_w, r->grid_h));
    cJSON_AddItemToObject(o, "original_size", pair(r->src_width, r->src_height));
    cJSON_AddItemToObject(o, "target_size", pair(r->width, r->height));
    cJSON_AddNumberToObject(o, "budget", r->budget);
    cJSON *ids = cJSON_CreateObject();
    cJSON_AddNumberToObject(ids, "boi", r->boi_token_id);
    cJSON_AddNumberToObject(ids, "image", r->image_token_id);
    cJSON_AddNumberToObject(ids, "eoi", r->eoi_token_id);
    cJSON_AddItemToObject(o, "token_ids", ids);
    size_t np = g4v_prompt_tokens(r, NULL, 0);
    int32_t *pid = malloc(np * sizeof *pid);
    cJSON *pl = NULL;
    if (pid) {
        g4v_prompt_tokens(r, pid, np);
        int *iv = (int *)pid; /* int32_t is int on every target we build for */
        pl = cJSON_CreateIntArray(iv, (int)np);
        free(pid);
    }
    if (pl) cJSON_AddItemToObject(o, "prompt_ids", pl);
    cJSON_AddStringToObject(o, "cache", cache);
    cJSON_AddStringToObject(o, "fingerprint", fingerprint);
    cJSON_AddStringToObject(o, "dtype", bf16 ? "bf16" : "float32");
    cJSON_AddStringToObject(o, "encoding", "base64, little-endian, row-major [tokens, dim]");
    char *head = pl ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!head) return NULL;
    /* the features go in by hand: no copy of a 15 MB string through cJSON */
    size_t esz = bf16 ? 2 : 4, nb = (size_t)r->n_tokens * (size_t)r->dim * esz;
    size_t hl = strlen(head) - 1; /* without the closing brace */
    static const char key[] = ",\"features\":\"";
    size_t b64 = 4 * ((nb + 2) / 3);
    size_t total = hl + sizeof key - 1 + b64 + 3;
    char *b = malloc(total);
    if (b) {
        memcpy(b, head, hl);
        memcpy(b + hl, key, sizeof key - 1);
        serve_base64(bf16 ? (const unsigned char *)r->features_bf16
                          : (const unsigned char *)r->features,
                     nb, b + hl + sizeof key - 1);
        memcpy(b + total - 3, "\"}\n", 3);
        *len = total;
    }
    cJSON_free(head);
    return b;
}

char *serve_format_body(serve_format f, const g4v_result *r, int bf16, const char *cache,
                        const char *fingerprint, size_t *len) {
    switch (f) {
    case FMT_NPY: return npy_body(r, bf16, len);
    case FMT_SAFETENSORS: return safetensors_body(r, bf16, cache, fingerprint, len);
    default: return json_body(r, bf16, cache, fingerprint, len);
    }
}
