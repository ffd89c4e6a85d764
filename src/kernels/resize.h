/* resize.h - the inner loops of the Pillow-exact resize (the image layer's resize.c drives them).
 *
 * Horizontal pass: G4V_RS_LANES = 8 image rows at once, one lane per row. The caller interleaves
 * the rows byte by byte (t[k*8 + lane] = row[lane][k]), so one output sample of all 8 rows is 8
 * adjacent accumulators and every tap is one weight times 24 contiguous bytes (R, G, B of one
 * source pixel in 8 rows); results come back interleaved the same way. Vertical pass: along the
 * row. All arithmetic is Pillow's: int32 accumulators starting at 2^21, arithmetic shift by 22,
 * clamp to 0..255 (docs/PREPROCESSING.md). Every variant gives the same bytes.
 */
#ifndef G4V_KERNELS_RESIZE_H
#define G4V_KERNELS_RESIZE_H

#include <stddef.h>
#include <stdint.h>

#define G4V_RS_LANES 8
#define G4V_RS_HALF (1 << 21) /* the rounding offset every accumulator starts from */

/* An accumulator's output byte: arithmetic shift by 22 (floor, as in Pillow), clamp to 0..255. */
static inline uint8_t g4v_rs_clip8(int32_t v) {
    v >>= 22;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* Per output index i: taps [lo[i], lo[i]+cnt[i]) with 22-bit weights q[i*ksize + j]. bits: the
 * precision the weights were rounded at (22 for Pillow; torch's int16 weights have fewer and are
 * multiplied by 2^(22 - bits), which makes the kernels' arithmetic exactly torch's). */
typedef struct g4v_coeffs {
    int n_in, n_out, ksize, bits;
    int *lo, *cnt;
    int32_t *q;
} g4v_coeffs;

typedef struct g4v_resize_kernel {
    /* t: 3*in_w byte columns x LANES rows interleaved (t[k*LANES + lane]); writes the 3*out_w
     * output bytes of all LANES rows, interleaved the same way, to u. */
    void (*hpass)(const uint8_t *t, const g4v_coeffs *cx, uint8_t *u);
    /* out[k] = clip((2^21 + sum_j rows[j][k] * q[j]) >> 22) for k < n. */
    void (*vpass)(const uint8_t *const *rows, const int32_t *q, int cnt, size_t n, uint8_t *out);
} g4v_resize_kernel;

#endif
