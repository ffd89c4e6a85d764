/* frontend.c - see frontend.h. */
#include "frontend.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

double fe_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

size_t fe_utf8_seq_len(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    if (!n) return 0;
    unsigned lead = u[0];
    size_t len = lead < 0x80            ? 1
                 : (lead & 0xE0) == 0xC0 ? 2
                 : (lead & 0xF0) == 0xE0 ? 3
                 : (lead & 0xF8) == 0xF0 ? 4
                                         : 0;
    if (!len || len > n) return 0;
    unsigned cp = lead & (0x7Fu >> (len == 1 ? 0 : len));
    for (size_t k = 1; k < len; k++) {
        if ((u[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (u[k] & 0x3Fu);
    }
    static const unsigned shortest[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < shortest[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

int fe_utf8_valid(const char *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        size_t len = fe_utf8_seq_len(s + i, n - i);
        if (!len) return 0;
        i += len;
    }
    return 1;
}

void fe_utf8_sanitize(char *s) {
    size_t n = strlen(s), i = 0;
    while (i < n) {
        size_t len = fe_utf8_seq_len(s + i, n - i);
        if (len)
            i += len;
        else
            s[i++] = '?';
    }
}

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
