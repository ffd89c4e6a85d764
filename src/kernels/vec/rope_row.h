/* rope_row.h - the 2D RoPE row kernel written once over the vector vocabulary of vec.h
 * (g4v_rope_row_fn, kernels.h): each head's first half rotates by the column's (cos, sin), the
 * second by the row's, channel t of a half paired with t + d/4. An ISA file defines G4V_VEC_BITS
 * and ROPE_ROW_NAME and includes this header once.
 *
 * Per lane it is the portable kernel's arithmetic exactly: a * cos - b * sin and b * cos + a * sin
 * as two products and one add, never a fused multiply-add, so every variant gives the portable
 * bits (test_variants checks bit-identity). The rotation is memory-bound, so the FMA would buy
 * nothing. A quarter of d that is not a multiple of the vector width (the 31B shape: d = 72,
 * quarters of 18) ends with one vector through a small buffer. */
#ifndef G4V_KERNELS_VEC_ROPE_ROW_H
#define G4V_KERNELS_VEC_ROPE_ROW_H

#include "vec.h"

static inline void rope_pair(V_T a, V_T b, V_T cs, V_T sn, V_T *ra, V_T *rb) {
    *ra = V_SUB(V_MUL(a, cs), V_MUL(b, sn));
    *rb = V_ADD(V_MUL(b, cs), V_MUL(a, sn));
}

/* Rotates the q = c/2 pairs (v[t], v[t + q]) of one half by the table row (cs, sn). */
static inline void rope_half(float *v, int q, const float *cs, const float *sn) {
    int t = 0;
    for (; t + V_W <= q; t += V_W) {
        V_T ra, rb;
        rope_pair(V_LOADU(v + t), V_LOADU(v + q + t), V_LOADU(cs + t), V_LOADU(sn + t), &ra, &rb);
        V_STOREU(v + t, ra);
        V_STOREU(v + q + t, rb);
    }
    if (t < q) {
        float a[V_W] = {0}, b[V_W] = {0}, c[V_W] = {0}, s[V_W] = {0};
        for (int j = t; j < q; j++)
            a[j - t] = v[j], b[j - t] = v[q + j], c[j - t] = cs[j], s[j - t] = sn[j];
        V_T ra, rb;
        rope_pair(V_LOADU(a), V_LOADU(b), V_LOADU(c), V_LOADU(s), &ra, &rb);
        V_STOREU(a, ra);
        V_STOREU(b, rb);
        for (int j = t; j < q; j++)
            v[j] = a[j - t], v[q + j] = b[j - t];
    }
}

void ROPE_ROW_NAME(float *row, int heads, int head_dim, const float *cx, const float *sx,
                   const float *cy, const float *sy) {
    int c = head_dim / 2, q = c / 2;
    for (int h = 0; h < heads; h++) {
        float *v = row + (size_t)h * head_dim;
        rope_half(v, q, cx, sx);     /* channels [0, c): column */
        rope_half(v + c, q, cy, sy); /* channels [c, 2c): row */
    }
}

#endif
