/* npy_u16.c - see npy_u16.h. The header layout is numpy's: magic, version 1.0, length, dict
 * padded with spaces and a newline to a multiple of 64 bytes. */
#include "npy_u16.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int g4v_npy_write_u16(const char *path, const uint16_t *x, long rows, long cols) {
    if (rows < 0 || cols < 0) {
        errno = EINVAL;
        return -1;
    }
    char dict[160], header[256];
    int dl = snprintf(dict, sizeof dict,
                      "{'descr': '<u2', 'fortran_order': False, 'shape': (%ld, %ld), }", rows, cols);
    size_t padded = (10 + (size_t)dl + 1 + 63) / 64 * 64, hlen = padded - 10;
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    header[8] = (char)(hlen & 0xff);
    header[9] = (char)(hlen >> 8);
    memcpy(header + 10, dict, (size_t)dl);
    memset(header + 10 + dl, ' ', padded - 10 - (size_t)dl - 1);
    header[padded - 1] = '\n';
    size_t plen = strlen(path) + 32, n = (size_t)rows * (size_t)cols;
    char *tmp = malloc(plen);
    if (!tmp) return -1;
    snprintf(tmp, plen, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        int e = errno;
        free(tmp);
        errno = e;
        return -1;
    }
    int bad = fwrite(header, 1, padded, f) != padded || fwrite(x, 2, n, f) != n;
    int e = errno;
    if (fclose(f) != 0 && !bad) bad = 1, e = errno;
    if (!bad && rename(tmp, path) != 0) bad = 1, e = errno;
    if (bad) remove(tmp);
    free(tmp);
    errno = e;
    return bad ? -1 : 0;
}
