/* frontend.c - see frontend.h: the number parsing and formatting of the front ends, and the
 * wrappers over libg4v's clock, UTF-8 checks, locked JSON parse and SHA-256 (linked from libg4v.a).
 */
#include "frontend.h"

#include "base/clock.h"
#include "base/utf8.h"
#include "io/json_file.h"
#include "kernels/sha256.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fe_parse_int(const char *s, long long lo, long long hi, long long *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

char *fe_format_double(char *buf, size_t cap, double v) {
    if (!isfinite(v)) {
        snprintf(buf, cap, "null");
        return buf;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, cap, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

int fe_parse_double(const char *s, double lo, double hi, double *out) {
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

double fe_now_s(void) { return g4v_now_s(); }

size_t fe_utf8_seq_len(const char *s, size_t n) { return g4v_utf8_seq_len(s, n); }

int fe_utf8_valid(const char *s, size_t n) { return g4v_utf8_valid(s, n); }

void fe_utf8_sanitize(char *s) { g4v_utf8_sanitize(s); }

char *fe_utf8_copy(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    g4v_utf8_sanitize(d);
    return d;
}

struct cJSON *fe_json_parse_text(const char *text, size_t n, const char **end) {
    return g4v_json_parse_text(text, n, end);
}

_Static_assert(sizeof(g4v_sha256_ctx) <= sizeof(fe_sha256_ctx), "fe_sha256_ctx too small");
_Static_assert(_Alignof(g4v_sha256_ctx) <= _Alignof(fe_sha256_ctx), "fe_sha256_ctx misaligned");
_Static_assert(FE_SHA256_BYTES == G4V_SHA256_BYTES, "SHA-256 digest size");

void fe_sha256_init(fe_sha256_ctx *s) { g4v_sha256_init((g4v_sha256_ctx *)(void *)s->opaque); }

void fe_sha256_update(fe_sha256_ctx *s, const void *data, size_t n) {
    g4v_sha256_update((g4v_sha256_ctx *)(void *)s->opaque, data, n);
}

void fe_sha256_final(fe_sha256_ctx *s, uint8_t out[FE_SHA256_BYTES]) {
    g4v_sha256_final((g4v_sha256_ctx *)(void *)s->opaque, out);
}

void fe_sha256(const void *data, size_t n, uint8_t out[FE_SHA256_BYTES]) {
    g4v_sha256(data, n, out);
}
