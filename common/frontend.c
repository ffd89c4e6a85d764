/* frontend.c - see frontend.h: the number parsing and formatting of the front ends, their clock,
 * and the JSON parse and SHA-256 through libg4v's public API (the UTF-8 checks are utf8.c).
 */
#include "frontend.h"

#include "g4v.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

double fe_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct cJSON *fe_json_parse_text(const char *text, size_t n, const char **end) {
    g4v_json_lock();
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, end, 0);
    g4v_json_unlock();
    return root;
}

_Static_assert(FE_SHA256_BYTES == G4V_HASH_BYTES, "SHA-256 digest size");

void fe_sha256_init(fe_sha256_ctx *s) { g4v_hash_init(&s->state); }

void fe_sha256_update(fe_sha256_ctx *s, const void *data, size_t n) {
    g4v_hash_update(&s->state, data, n);
}

void fe_sha256_final(fe_sha256_ctx *s, uint8_t out[FE_SHA256_BYTES]) {
    g4v_hash_final(&s->state, out);
}

void fe_sha256(const void *data, size_t n, uint8_t out[FE_SHA256_BYTES]) {
    fe_sha256_ctx s;
    fe_sha256_init(&s);
    fe_sha256_update(&s, data, n);
    fe_sha256_final(&s, out);
}
