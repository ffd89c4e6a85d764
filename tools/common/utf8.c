/* utf8.c - the front ends' strict UTF-8 checks (frontend.h): JSON must be UTF-8, and paths,
 * client text and tokens cut mid-character may not be. RFC 3629: shortest form, no surrogates,
 * at most U+10FFFF. */
#include "frontend.h"

#include <stdlib.h>
#include <string.h>

size_t fe_utf8_seq_len(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    if (!n) return 0;
    unsigned c = u[0];
    size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!len || len > n) return 0;
    unsigned cp = len == 1 ? c : len == 2 ? c & 31 : len == 3 ? c & 15 : c & 7;
    for (size_t k = 1; k < len; k++) {
        if ((u[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (u[k] & 63);
    }
    static const unsigned min_cp[5] = {0, 0, 0x80, 0x800, 0x10000}; /* shortest form */
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

int fe_utf8_valid(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t len = fe_utf8_seq_len(s + i, n - i);
        if (!len) return 0;
        i += len;
    }
    return 1;
}

void fe_utf8_sanitize(char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t len = fe_utf8_seq_len(s + i, n - i);
        if (len) {
            i += len;
        } else {
            s[i++] = '?';
        }
    }
}

char *fe_utf8_copy(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    fe_utf8_sanitize(d);
    return d;
}
