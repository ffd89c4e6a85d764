/* npy.c - .npy 1.0 writer (see npy.h). Data is written in little-endian order on any host. */
#include "npy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int is_little_endian(void) {
    const uint16_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* Writes n elements of `size` bytes, byte-swapping on big-endian hosts. */
static int write_le(FILE *f, const void *data, size_t size, size_t n) {
    if (is_little_endian()) return fwrite(data, size, n, f) == n ? 0 : -1;
    uint8_t buf[4096];
    const uint8_t *s = data;
    for (size_t i = 0; i < n;) {
        size_t k = 0;
        for (; k < sizeof buf / size && i < n; k++, i++)
            for (size_t b = 0; b < size; b++) buf[size * k + b] = s[size * i + size - 1 - b];
        if (fwrite(buf, size, k, f) != k) return -1;
    }
    return 0;
}

static int write_npy(const char *path, const char *descr, size_t size, const void *x, long rows,
                     long cols) {
    if (rows < 0 || cols < 0) {
        errno = EINVAL;
        return -1;
    }
    char dict[160];
    int dl = snprintf(dict, sizeof dict,
                      "{'descr': '%s', 'fortran_order': False, 'shape': (%ld, %ld), }", descr,
                      rows, cols);
    /* magic(6) + version(2) + header length(2) + dict, padded with spaces and a final newline
     * to a multiple of 64 bytes (what numpy writes). */
    size_t total = 10 + (size_t)dl + 1;
    size_t padded = (total + 63) / 64 * 64;
    char header[256];
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    size_t hlen = padded - 10;
    header[8] = (char)(hlen & 0xff);
    header[9] = (char)(hlen >> 8);
    memcpy(header + 10, dict, (size_t)dl);
    memset(header + 10 + dl, ' ', padded - 10 - (size_t)dl - 1);
    header[padded - 1] = '\n';

    size_t plen = strlen(path) + 32;
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
    int bad = fwrite(header, 1, padded, f) != padded;
    if (!bad) bad = write_le(f, x, size, (size_t)rows * (size_t)cols) != 0;
    int e = errno;
    if (fclose(f) != 0 && !bad) bad = 1, e = errno;
    if (!bad && rename(tmp, path) != 0) bad = 1, e = errno;
    if (bad) remove(tmp);
    free(tmp);
    errno = e;
    return bad ? -1 : 0;
}

int g4v_npy_write_f32(const char *path, const float *x, long rows, long cols) {
    return write_npy(path, "<f4", 4, x, rows, cols);
}

int g4v_npy_write_i32(const char *path, const int32_t *x, long rows, long cols) {
    return write_npy(path, "<i4", 4, x, rows, cols);
}

int g4v_npy_write_u16(const char *path, const uint16_t *x, long rows, long cols) {
    return write_npy(path, "<u2", 2, x, rows, cols);
}
