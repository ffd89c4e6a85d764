/* utf8.c - the front ends' UTF-8 helpers (frontend.h): JSON must be UTF-8, and paths, client
 * text and tokens cut mid-character may not be. The check of one sequence (RFC 3629: shortest
 * form, no surrogates, at most U+10FFFF) is the library's g4v_utf8_seq_len (g4v.h), the one
 * copy. */
#include "frontend.h"

#include <stdlib.h>
#include <string.h>

int fe_utf8_valid(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        size_t len = g4v_utf8_seq_len(s + i, n - i);
        if (!len) return 0;
        i += len;
    }
    return 1;
}

void fe_utf8_sanitize(char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        size_t len = g4v_utf8_seq_len(s + i, n - i);
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
