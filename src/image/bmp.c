/* bmp.c - a bounded BMP reader that reproduces Pillow 9.4's BmpImagePlugin.
 *
 * Headers: OS/2 v1 (12 bytes) and Windows v3/v4/v5 and OS/2 v2 (40, 64, 108, 124). Pixels:
 * 1/4/8-bit palette (raw, RLE8, RLE4), 16-bit (5-5-5, or 5-6-5 with BITFIELDS; each channel
 * scaled v*255/max), 24-bit, 32-bit (BI_RGB is BGRX: the fourth byte is ignored; BITFIELDS
 * only in the five layouts Pillow knows; any alpha is dropped by convert("RGB")).
 * Pillow's quirks kept on purpose: a palette that is exactly black/white (2 colours) makes the
 * rows read as 1-bit data and an exact gray ramp makes them read as 8-bit data, whatever the
 * depth (Pillow switches to mode "1"/"L"); indices past the palette give gray (i, i, i); a
 * pixel offset pointing right after the header skips 4 bytes per palette entry; height with the
 * top byte 0xFF means top-down; RLE decoding follows its Python decoder step by step,
 * including its 9.4 bug of reading a delta's offsets from the two bytes after them.
 * Every read is checked against the buffer; the size limits are checked before allocating.
 */
#include "image/image_internal.h"

#include "base/alloc.h"

#include <string.h>

enum { RAW = 0, RLE8 = 1, RLE4 = 2, BITFIELDS = 3 };
enum { U_PAL1, U_PAL4, U_PAL8, U_BIT1, U_BGR15, U_BGR16, U_BGR, U_BGRX, U_XBGR, U_RGBA };

static uint32_t le16(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

typedef struct {
    uint64_t w, h;
    unsigned bits, compression;
    int top_down, unpack;
    uint8_t pal[768];
    size_t data; /* file offset of the pixels */
} bmp_info;

static int bad(g4v_err *err, const char *what) {
    return g4v_fail(err, G4V_ERR_IMAGE, "BMP: %s", what);
}

static int unsupported(g4v_err *err, const char *what, unsigned long long v) {
    return g4v_fail(err, G4V_ERR_UNSUPPORTED, "BMP: unsupported %s (%llu)", what, v);
}

/* The 32-bit BITFIELDS layouts Pillow 9.4 accepts, and how it unpacks them. */
static int mask_layout32(const uint32_t m[4]) {
    static const uint32_t known[6][4] = {
        {0xFF0000, 0xFF00, 0xFF, 0},           {0xFF000000, 0xFF0000, 0xFF00, 0},
        {0xFF000000, 0xFF0000, 0xFF00, 0xFF},  {0xFF, 0xFF00, 0xFF0000, 0xFF000000},
        {0xFF0000, 0xFF00, 0xFF, 0xFF000000},  {0, 0, 0, 0}};
    static const int unpack[6] = {U_BGRX, U_XBGR, U_XBGR, U_RGBA, U_BGRX, U_BGRX};
    for (int i = 0; i < 6; i++)
        if (!memcmp(m, known[i], sizeof known[i])) return unpack[i];
    return -1;
}

static int parse_header(const uint8_t *b, size_t n, bmp_info *bi, g4v_err *err) {
    if (n < 18) return bad(err, "file too short for a header (truncated?)");
    uint64_t offset = le32(b + 10);
    uint32_t hsize = le32(b + 14);
    if (hsize != 12 && hsize != 40 && hsize != 64 && hsize != 108 && hsize != 124)
        return unsupported(err, "header size", hsize);
    if (14 + (size_t)hsize > n) return bad(err, "truncated header");
    const uint8_t *h = b + 18; /* header after its size field: hsize - 4 bytes */
    size_t pos = 14 + hsize;
    uint64_t colors = 0;
    uint32_t mask[4] = {0, 0, 0, 0};
    unsigned palpad;
    if (hsize == 12) {
        bi->w = le16(h), bi->h = le16(h + 2), bi->bits = le16(h + 6);
        bi->compression = RAW, bi->top_down = 0, palpad = 3;
    } else {
        bi->top_down = h[7] == 0xFF;
        bi->w = le32(h);
        bi->h = bi->top_down ? (1ull << 32) - le32(h + 4) : le32(h + 4);
        bi->bits = le16(h + 10), bi->compression = le32(h + 12);
        colors = le32(h + 28);
        palpad = 4;
        if (bi->compression == BITFIELDS) {
            if (hsize - 4 >= 52) {
                for (int i = 0; i < 4; i++) mask[i] = le32(h + 36 + 4 * i);
            } else {
                if (pos + 12 > n) return bad(err, "truncated BITFIELDS masks");
                for (int i = 0; i < 3; i++) mask[i] = le32(b + pos + 4 * i);
                pos += 12;
            }
        }
    }
    if (bi->bits != 1 && bi->bits != 4 && bi->bits != 8 && bi->bits != 16 && bi->bits != 24 &&
        bi->bits != 32)
        return unsupported(err, "bit depth", bi->bits);
    if (!colors) colors = 1ull << bi->bits;
    if (offset == 14 + (uint64_t)hsize && bi->bits <= 8) offset += 4 * colors;
    bi->unpack = bi->bits == 1 ? U_PAL1 : bi->bits == 4 ? U_PAL4 : bi->bits == 8 ? U_PAL8
               : bi->bits == 16 ? U_BGR15 : bi->bits == 24 ? U_BGR : U_BGRX;
    if (bi->compression == BITFIELDS) {
        if (bi->bits == 32)
            bi->unpack = mask_layout32(mask);
        else if (bi->bits == 24 && mask[0] == 0xFF0000 && mask[1] == 0xFF00 && mask[2] == 0xFF)
            bi->unpack = U_BGR;
        else if (bi->bits == 16 && mask[0] == 0xF800 && mask[1] == 0x7E0 && mask[2] == 0x1F)
            bi->unpack = U_BGR16;
        else if (bi->bits == 16 && mask[0] == 0x7C00 && mask[1] == 0x3E0 && mask[2] == 0x1F)
            bi->unpack = U_BGR15;
        else
            bi->unpack = -1;
        if (bi->unpack < 0)
            return g4v_fail(err, G4V_ERR_UNSUPPORTED, "BMP: unsupported %u-bit BITFIELDS layout "
                            "(masks %08x %08x %08x %08x)", bi->bits, mask[0], mask[1], mask[2],
                            mask[3]);
    } else if (bi->compression != RAW && bi->compression != RLE8 && bi->compression != RLE4) {
        return unsupported(err, "compression", bi->compression);
    }
    if (bi->bits <= 8) {
        if (colors == 0 || colors > 256)
            return unsupported(err, "palette size", colors);
        size_t want = palpad * (size_t)colors, have = pos < n ? n - pos : 0;
        if (have > want) have = want;
        const uint8_t *pal = b + pos;
        int grey = 1;
        for (uint64_t i = 0; i < colors && grey; i++) {
            unsigned v = colors == 2 ? (i ? 255 : 0) : (unsigned)i;
            grey = (i + 1) * palpad <= have + (palpad - 3) && pal[i * palpad] == v &&
                   pal[i * palpad + 1] == v && pal[i * palpad + 2] == v;
        }
        pos += have;
        g4v_palette_build(bi->pal, pal, (int)(have / palpad), (int)palpad, 1);
        if (grey && colors == 2) {
            bi->unpack = U_BIT1; /* Pillow mode "1": rows read as 1-bit data */
        } else if (grey) {
            if (bi->bits < 8 && bi->compression == RAW)
                return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                                "BMP: %u-bit image with a gray-ramp palette (Pillow 9.4 cannot "
                                "read it either)", bi->bits);
            bi->unpack = U_PAL8; /* Pillow mode "L": one byte per pixel; palette == ramp */
        }
        if (bi->unpack == U_BIT1 && bi->compression != RAW)
            return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                            "BMP: RLE with a black/white palette (Pillow 9.4 cannot read it)");
    }
    bi->data = offset ? (offset > n ? n : (size_t)offset) : pos;
    return G4V_OK;
}

static void unpack_row(const bmp_info *bi, const uint8_t *s, uint8_t *out, int w) {
    switch (bi->unpack) {
    case U_PAL1:
    case U_BIT1:
        for (int x = 0; x < w; x++) {
            int bit = s[x >> 3] >> (7 - (x & 7)) & 1;
            if (bi->unpack == U_BIT1) {
                out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = bit ? 255 : 0;
            } else {
                memcpy(out + 3 * x, bi->pal + 3 * bit, 3);
            }
        }
        break;
    case U_PAL4:
        for (int x = 0; x < w; x++)
            memcpy(out + 3 * x, bi->pal + 3 * (x & 1 ? s[x >> 1] & 15 : s[x >> 1] >> 4), 3);
        break;
    case U_PAL8: g4v_cvt_indexed(s, out, w, bi->pal); break;
    case U_BGR15:
    case U_BGR16:
        for (int x = 0; x < w; x++) {
            unsigned v = le16(s + 2 * x);
            int g6 = bi->unpack == U_BGR16;
            out[3 * x] = (uint8_t)((g6 ? v >> 11 & 31 : v >> 10 & 31) * 255 / 31);
            out[3 * x + 1] = (uint8_t)(g6 ? (v >> 5 & 63) * 255 / 63 : (v >> 5 & 31) * 255 / 31);
            out[3 * x + 2] = (uint8_t)((v & 31) * 255 / 31);
        }
        break;
    case U_BGR:
        for (int x = 0; x < w; x++) {
            out[3 * x] = s[3 * x + 2], out[3 * x + 1] = s[3 * x + 1], out[3 * x + 2] = s[3 * x];
        }
        break;
    case U_BGRX:
        for (int x = 0; x < w; x++) {
            out[3 * x] = s[4 * x + 2], out[3 * x + 1] = s[4 * x + 1], out[3 * x + 2] = s[4 * x];
        }
        break;
    case U_XBGR:
        for (int x = 0; x < w; x++) {
            out[3 * x] = s[4 * x + 3], out[3 * x + 1] = s[4 * x + 2],
            out[3 * x + 2] = s[4 * x + 1];
        }
        break;
    default: /* U_RGBA */ g4v_cvt_rgba(s, out, w); break;
    }
}

/* Pillow's BmpRleDecoder, step by step: fills idx (w*h bytes, zeroed) in file row order.
 * Returns 0 when the data ends before the image is full. */
static int rle_decode(const uint8_t *b, size_t n, size_t pos, int rle4, uint64_t w, uint64_t h,
                      uint8_t *idx) {
    const uint64_t total = w * h;
    uint64_t len = 0, x = 0;
#define APPEND(v)                                                                              \
    do {                                                                                       \
        if (len < total) idx[len] = (uint8_t)(v);                                              \
        len++;                                                                                 \
    } while (0)
    while (len < total) {
        if (pos + 2 > n) break;
        unsigned num = b[pos], byte = b[pos + 1];
        pos += 2;
        if (num) { /* encoded run, clipped to the row */
            if (x + num > w) num = x < w ? (unsigned)(w - x) : 0;
            for (unsigned i = 0; i < num; i++) APPEND(rle4 ? (i % 2 ? byte & 15 : byte >> 4) : byte);
            x += num;
        } else if (byte == 0) { /* end of line */
            while (len % w) APPEND(0);
            x = 0;
        } else if (byte == 1) { /* end of bitmap */
            break;
        } else if (byte == 2) { /* delta: zeros */
            /* Pillow 9.4 reads the two delta bytes, then two more, and uses the second pair. */
            if (pos + 4 > n) break;
            uint64_t skip = b[pos + 2] + (uint64_t)b[pos + 3] * w;
            pos += 4;
            len += skip; /* idx is zeroed: only the length moves */
            x = len % w;
        } else { /* absolute run */
            size_t count = rle4 ? byte / 2 : byte, avail = pos < n ? n - pos : 0;
            size_t got = count < avail ? count : avail;
            for (size_t i = 0; i < got; i++) {
                if (rle4) {
                    APPEND(b[pos + i] >> 4);
                    APPEND(b[pos + i] & 15);
                } else {
                    APPEND(b[pos + i]);
                }
            }
            pos += got;
            if (got < count) break;
            x += byte;
            if (pos % 2) pos++; /* runs are padded to 16 bits (file offset) */
        }
    }
#undef APPEND
    return len >= total;
}

int g4v_decode_bmp(const uint8_t *b, size_t n, g4v_pipe *p, g4v_err *err) {
    bmp_info bi;
    memset(&bi, 0, sizeof bi);
    int st = parse_header(b, n, &bi, err);
    if (st) return st;
    st = g4v_image_check_size((long long)bi.w, (long long)bi.h, g4v_pipe_view(p)->opts, "BMP", err);
    if (st) return st;
    int w = (int)bi.w, h = (int)bi.h;
    uint8_t *idx = NULL;
    size_t stride;
    const uint8_t *pix;
    if (bi.compression == RLE8 || bi.compression == RLE4) {
        idx = g4v_calloc((size_t)w * h, 1);
        if (!idx) return g4v_fail(err, G4V_ERR_NOMEM, "BMP: cannot allocate %dx%d indices", w, h);
        if (!rle_decode(b, n, bi.data, bi.compression == RLE4, bi.w, bi.h, idx)) {
            g4v_free(idx);
            return bad(err, "RLE data ends before the image is complete (truncated?)");
        }
        bi.unpack = U_PAL8;
        stride = (size_t)w;
        pix = idx;
    } else {
        stride = (size_t)(((bi.w * bi.bits + 31) >> 3) & ~(uint64_t)3);
        if (bi.data > n || (uint64_t)stride * bi.h > n - bi.data)
            return g4v_fail(err, G4V_ERR_IMAGE,
                            "BMP: pixel data truncated (need %llu bytes at offset %zu, file has "
                            "%zu)", (unsigned long long)stride * bi.h, bi.data, n);
        pix = b + bi.data;
    }
    st = g4v_pipe_begin(p, w, h, G4V_EXIF_ABSENT, err);
    if (!st)
        for (int y = 0; y < h; y++) {
            int r = bi.top_down ? y : h - 1 - y;
            unpack_row(&bi, pix + stride * r, g4v_pipe_row(p), w);
            g4v_pipe_push(p);
        }
    g4v_free(idx);
    return st;
}
