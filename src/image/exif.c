/* exif.c - the EXIF orientation (tag 0x0112 of IFD0) exactly as Pillow 9.4's getexif() sees it.
 *
 * Pillow parses the TIFF structure with ImageFileDirectory_v2 and then compares the tag's value
 * with the integers 2..8 (ImageOps.exif_transpose). What that means, rule by rule:
 *  - header "II*\0", "MM\0*", and the tolerated "MM*\0", "II\0*", "MM\0+" (all read as classic
 *    TIFF); "II+\0" (BigTIFF) and anything else make Pillow fail, which we treat as no EXIF;
 *  - entries are read in order; an entry of unknown type or zero size is skipped; a value that
 *    lies outside the blob, or a short entry table, stops the parse (entries read so far stay);
 *  - a later entry for the same tag replaces an earlier one;
 *  - the value compares equal to an integer when it is SHORT/LONG/SBYTE/SSHORT/SLONG/IFD/LONG8
 *    (first element if count > 1), an exactly integral FLOAT/DOUBLE, or a RATIONAL/SRATIONAL
 *    whose quotient is an integer; BYTE, UNDEFINED and ASCII values are bytes/str and never do.
 * Every read is bounds-checked against the blob; nothing is allocated except in the hex decoder.
 */
#include "image/image_internal.h"

#include "base/alloc.h"

#include <math.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    size_t n;
    int big;
} tiff;

static uint32_t rd16(const tiff *t, size_t off) {
    const uint8_t *q = t->p + off;
    return t->big ? (uint32_t)q[0] << 8 | q[1] : (uint32_t)q[1] << 8 | q[0];
}

static uint32_t rd32(const tiff *t, size_t off) {
    const uint8_t *q = t->p + off;
    return t->big ? (uint32_t)q[0] << 24 | (uint32_t)q[1] << 16 | (uint32_t)q[2] << 8 | q[3]
                  : (uint32_t)q[3] << 24 | (uint32_t)q[2] << 16 | (uint32_t)q[1] << 8 | q[0];
}

static uint64_t rd64(const tiff *t, size_t off) {
    uint64_t a = rd32(t, off), b = rd32(t, off + 4);
    return t->big ? a << 32 | b : b << 32 | a;
}

/* Bytes per element for the types Pillow 9.4 registers a loader for; 0 = unsupported. */
static unsigned type_size(unsigned type) {
    switch (type) {
    case 1: case 2: case 6: case 7: return 1;  /* BYTE ASCII SBYTE UNDEFINED */
    case 3: case 8: return 2;                  /* SHORT SSHORT */
    case 4: case 9: case 11: case 13: return 4; /* LONG SLONG FLOAT IFD */
    case 5: case 10: case 12: case 16: return 8; /* RATIONAL SRATIONAL DOUBLE LONG8 */
    default: return 0;
    }
}

static int from_integer(long long v) { return v >= 1 && v <= 8 ? (int)v : 0; }

static int from_double(double d) {
    if (!isfinite(d) || d != floor(d) || d < 1.0 || d > 8.0) return 0;
    return (int)d;
}

/* The first element of the value at v (already known to lie inside the blob). */
static int value_orientation(const tiff *t, unsigned type, size_t v) {
    switch (type) {
    case 3: return from_integer(rd16(t, v));
    case 4: case 13: return from_integer(rd32(t, v));
    case 16: {
        uint64_t u = rd64(t, v);
        return u > 8 ? 0 : from_integer((long long)u);
    }
    case 6: return from_integer((int8_t)t->p[v]);
    case 8: return from_integer((int16_t)rd16(t, v));
    case 9: return from_integer((int32_t)rd32(t, v));
    case 11: {
        uint32_t u = rd32(t, v);
        float f;
        memcpy(&f, &u, sizeof f);
        return from_double(f);
    }
    case 12: {
        uint64_t u = rd64(t, v);
        double d;
        memcpy(&d, &u, sizeof d);
        return from_double(d);
    }
    case 5: {
        uint32_t num = rd32(t, v), den = rd32(t, v + 4);
        if (den == 0 || num % den) return 0;
        return from_integer(num / den);
    }
    case 10: {
        long long num = (int32_t)rd32(t, v), den = (int32_t)rd32(t, v + 4);
        if (den == 0 || num % den) return 0;
        return from_integer(num / den);
    }
    default: return 0; /* BYTE, ASCII, UNDEFINED: bytes or str, never equal to an int */
    }
}

int g4v_exif_orientation(const uint8_t *p, size_t n) {
    if (!p) return G4V_EXIF_ABSENT;
    if (n >= 6 && memcmp(p, "Exif\0\0", 6) == 0) p += 6, n -= 6;
    if (n < 8) return G4V_EXIF_ABSENT;
    tiff t = {p, n, 0};
    if (!memcmp(p, "MM\0*", 4) || !memcmp(p, "MM*\0", 4) || !memcmp(p, "MM\0+", 4))
        t.big = 1;
    else if (!memcmp(p, "II*\0", 4) || !memcmp(p, "II\0*", 4))
        t.big = 0;
    else
        return G4V_EXIF_ABSENT;
    uint32_t ifd = rd32(&t, 4);
    if ((uint64_t)ifd + 2 > n) return G4V_EXIF_ABSENT;
    uint32_t count = rd16(&t, ifd);
    int found = G4V_EXIF_ABSENT;
    size_t e = (size_t)ifd + 2;
    for (uint32_t i = 0; i < count; i++, e += 12) {
        if (e + 12 > n) break; /* short entry table: Pillow stops, keeping what it read */
        uint32_t tag = rd16(&t, e), type = rd16(&t, e + 2), cnt = rd32(&t, e + 4);
        unsigned unit = type_size(type);
        if (!unit) continue;
        uint64_t size = (uint64_t)cnt * unit;
        size_t v = e + 8;
        if (size > 4) {
            uint32_t off = rd32(&t, e + 8);
            if ((uint64_t)off + size > n) break; /* Pillow's _safe_read raises: parse stops */
            v = off;
        }
        if (size == 0) continue;
        if (tag == 0x0112) found = value_orientation(&t, type, v);
    }
    return found;
}

int g4v_xmp_orientation(const char *s, size_t n) {
    static const char key[] = "tiff:Orientation";
    const size_t k = sizeof key - 1;
    if (!s) return G4V_EXIF_ABSENT;
    for (size_t i = 0; i + k + 2 <= n; i++) {
        if (memcmp(s + i, key, k) != 0) continue;
        size_t j = i + k;
        if (s[j] == '>') {
            j += 1;
        } else if (s[j] == '=' && j + 1 < n && s[j + 1] == '"') {
            j += 2;
        } else {
            continue;
        }
        if (j < n && s[j] >= '0' && s[j] <= '9') return s[j] - '0';
    }
    return G4V_EXIF_ABSENT;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

long g4v_raw_profile_decode(const char *s, size_t n, uint8_t **out) {
    *out = NULL;
    /* Python: "".join(text.split("\n")[3:]) then bytes.fromhex (which skips whitespace between
     * byte pairs). Skip the first three lines. */
    size_t i = 0;
    for (int lines = 0; lines < 3; lines++) {
        while (i < n && s[i] != '\n') i++;
        if (i >= n) return 0; /* fewer than four lines: empty data */
        i++;
    }
    uint8_t *buf = g4v_malloc((n - i) / 2 + 1);
    if (!buf) return -2;
    long len = 0;
    while (i < n) {
        if (s[i] == '\n' || is_space(s[i])) {
            i++;
            continue;
        }
        int hi = hexval(s[i]);
        /* The second digit may follow a newline only (lines are joined without separator). */
        size_t j = i + 1;
        while (j < n && s[j] == '\n') j++;
        int lo = j < n ? hexval(s[j]) : -1;
        if (hi < 0 || lo < 0) {
            g4v_free(buf);
            return -1;
        }
        buf[len++] = (uint8_t)(hi << 4 | lo);
        i = j + 1;
    }
    *out = buf;
    return len;
}
