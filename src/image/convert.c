/* convert.c - Pillow's convert("RGB") for our decoders' modes (docs/PREPROCESSING.md §3).
 *
 * Alpha is dropped, never composited (transformers' Gemma 4 path uses the plain convert). 16-bit
 * grayscale saturates (Pillow opens it as mode I and clamps); 16-bit colour keeps the high byte.
 * Palettes are 256 entries with Pillow 9.4's gray-ramp initialisation for indices past the end.
 */
#include "image/image_internal.h"

void g4v_cvt_gray(const uint8_t *in, uint8_t *out, int n) {
    for (int i = 0; i < n; i++) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = in[i];
}

void g4v_cvt_gray16be(const uint8_t *in, uint8_t *out, int n) {
    for (int i = 0; i < n; i++) {
        unsigned v = (unsigned)in[2 * i] << 8 | in[2 * i + 1];
        uint8_t s = v > 255 ? 255 : (uint8_t)v;
        out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = s;
    }
}

void g4v_cvt_gray_alpha(const uint8_t *in, uint8_t *out, int n, int bytes_per_sample) {
    /* 16-bit LA goes through Pillow's "LA;16B" unpacker: the high byte. */
    int step = 2 * bytes_per_sample;
    for (int i = 0; i < n; i++) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = in[step * i];
}

void g4v_cvt_rgba(const uint8_t *in, uint8_t *out, int n) {
    for (int i = 0; i < n; i++) {
        out[3 * i] = in[4 * i];
        out[3 * i + 1] = in[4 * i + 1];
        out[3 * i + 2] = in[4 * i + 2];
    }
}

void g4v_cvt_rgb16be(const uint8_t *in, uint8_t *out, int n, int channels) {
    for (int i = 0; i < n; i++) {
        const uint8_t *s = in + (size_t)2 * channels * i;
        out[3 * i] = s[0];
        out[3 * i + 1] = s[2];
        out[3 * i + 2] = s[4];
    }
}

/* Pillow's MULDIV255: exact round(a*b/255) for 8-bit a, b. */
static inline int muldiv255(int a, int b) {
    int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
}

void g4v_cvt_cmyk_inverted(const uint8_t *in, uint8_t *out, int n) {
    for (int i = 0; i < n; i++) {
        /* "CMYK;I" unpack inverts every byte; cmyk2rgb then uses nk = 255 - K. */
        int c = 255 - in[4 * i], m = 255 - in[4 * i + 1], y = 255 - in[4 * i + 2];
        int nk = in[4 * i + 3];
        int r = nk - muldiv255(c, nk), g = nk - muldiv255(m, nk), b = nk - muldiv255(y, nk);
        out[3 * i] = (uint8_t)(r < 0 ? 0 : r);
        out[3 * i + 1] = (uint8_t)(g < 0 ? 0 : g);
        out[3 * i + 2] = (uint8_t)(b < 0 ? 0 : b);
    }
}

void g4v_palette_build(uint8_t pal[768], const uint8_t *src, int count, int stride, int bgr) {
    if (count > 256) count = 256;
    if (count < 0) count = 0;
    for (int i = 0; i < 256; i++) pal[3 * i] = pal[3 * i + 1] = pal[3 * i + 2] = (uint8_t)i;
    for (int i = 0; i < count; i++) {
        const uint8_t *e = src + (size_t)stride * i;
        pal[3 * i] = bgr ? e[2] : e[0];
        pal[3 * i + 1] = e[1];
        pal[3 * i + 2] = bgr ? e[0] : e[2];
    }
}

void g4v_cvt_indexed(const uint8_t *idx, uint8_t *out, int n, const uint8_t pal[768]) {
    for (int i = 0; i < n; i++) {
        const uint8_t *e = pal + 3 * idx[i];
        out[3 * i] = e[0];
        out[3 * i + 1] = e[1];
        out[3 * i + 2] = e[2];
    }
}
