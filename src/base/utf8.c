/* utf8.c - strict UTF-8 (base/utf8.h): g4v_utf8_seq_len (public, g4v.h) and g4v_utf8_valid. */
#include "base/utf8.h"

size_t g4v_utf8_seq_len(const char *s, size_t n) {
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

int g4v_utf8_valid(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t len = g4v_utf8_seq_len(s + i, n - i);
        if (!len) return 0;
        i += len;
    }
    return 1;
}
