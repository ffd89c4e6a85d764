/* npy.c - .npy writer and image reader (see npy.h). Data is written in little-endian order on
 * any host; the reader takes only single bytes, so byte order does not arise. */
#include "npy.h"

#include "g4v.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

size_t g4v_npy_header(char header[256], const char *descr, long rows, long cols) {
    char dict[160];
    int dl = snprintf(dict, sizeof dict,
                      "{'descr': '%s', 'fortran_order': False, 'shape': (%ld, %ld), }", descr,
                      rows, cols);
    /* magic(6) + version(2) + header length(2) + dict, padded with spaces and a final newline
     * to a multiple of 64 bytes (what numpy writes). */
    size_t total = 10 + (size_t)dl + 1;
    size_t padded = (total + 63) / 64 * 64;
    memcpy(header, "\x93NUMPY\x01\x00", 8);
    size_t hlen = padded - 10;
    header[8] = (char)(hlen & 0xff);
    header[9] = (char)(hlen >> 8);
    memcpy(header + 10, dict, (size_t)dl);
    memset(header + 10 + dl, ' ', padded - 10 - (size_t)dl - 1);
    header[padded - 1] = '\n';
    return padded;
}

static int write_npy(const char *path, const char *descr, size_t size, const void *x, long rows,
                     long cols) {
    if (rows < 0 || cols < 0) {
        errno = EINVAL;
        return -1;
    }
    char header[256];
    size_t padded = g4v_npy_header(header, descr, rows, cols);

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

/* Parses the header dict of a uint8 [H, W, 3] C-order array; 0 or -1. */
static int parse_rgb_header(const char *hdr, long *h, long *w) {
    long c = 0;
    const char *s = strstr(hdr, "'shape': (");
    if (!strstr(hdr, "'descr': '|u1'") || !strstr(hdr, "'fortran_order': False") || !s ||
        sscanf(s, "'shape': (%ld, %ld, %ld)", h, w, &c) != 3 || c != 3 || *h <= 0 || *w <= 0 ||
        *h > 65500 || *w > 65500)
        return -1;
    return 0;
}

int g4v_npy_read_rgb(const char *path, uint8_t **rgb, int *w, int *h, int *not_npy, char *msg,
                     size_t cap) {
    *rgb = NULL;
    *not_npy = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, cap, "cannot open %s: %s", path, strerror(errno));
        return G4V_ERR_IO;
    }
    /* magic (6), version (2), header length: 2 bytes in format 1, 4 in formats 2 and 3 */
    unsigned char pre[12];
    char *hdr = NULL;
    int st = G4V_ERR_IMAGE;
    struct stat sb;
    size_t got = fread(pre, 1, 10, f), off = 10, hl = 0;
    if (got < 10 || memcmp(pre, "\x93NUMPY", 6)) {
        *not_npy = 1;
        st = G4V_OK;
        goto done;
    }
    hl = pre[8] | (size_t)pre[9] << 8;
    if (pre[6] >= 2) {
        if (fread(pre + 10, 1, 2, f) != 2) goto done;
        hl |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
        off = 12;
    }
    long hh, ww;
    if (hl > 65536 || fstat(fileno(f), &sb)) goto done;
    if (!(hdr = malloc(hl + 1))) {
        snprintf(msg, cap, "%s: out of memory", path);
        st = G4V_ERR_NOMEM;
        goto done;
    }
    if (fread(hdr, 1, hl, f) != hl) goto done;
    hdr[hl] = '\0';
    if (parse_rgb_header(hdr, &hh, &ww)) goto done;
    size_t bytes = (size_t)hh * (size_t)ww * 3;
    if ((uint64_t)sb.st_size < off + hl + bytes) goto done; /* before allocating for it */
    if (!(*rgb = malloc(bytes))) {
        snprintf(msg, cap, "%s: out of memory for a %ldx%ld image", path, ww, hh);
        st = G4V_ERR_NOMEM;
        goto done;
    }
    if (fread(*rgb, 1, bytes, f) != bytes) {
        free(*rgb);
        *rgb = NULL;
        goto done;
    }
    *w = (int)ww;
    *h = (int)hh;
    st = G4V_OK;
done:
    if (st == G4V_ERR_IMAGE && ferror(f)) {
        snprintf(msg, cap, "cannot read %s: %s", path, strerror(errno));
        st = G4V_ERR_IO;
    } else if (st == G4V_ERR_IMAGE) {
        snprintf(msg, cap, "%s: a .npy image must be C-ordered uint8 [H, W, 3] (and complete)",
                 path);
    }
    free(hdr);
    fclose(f);
    return st;
}
