/* geglu_row.h - the GeGLU row kernel written once over the vector vocabulary of vec.h:
 * out[i] = gelu_tanh(gate[i]) * up[i] for i < n (out may equal gate or up). An ISA file defines
 * G4V_VEC_BITS and GEGLU_ROW_NAME (the function to define, g4v_geglu_row_fn of kernels.h) and
 * includes this header once (x86_avx2/geglu_avx2.c).
 *
 * Uses 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3), with the
 * polynomial exp of vec_exp.h: one exp and one division per vector instead of a scalar libm
 * tanhf call per element. The identity has no cancellation for negative x (1 + tanh(u) does),
 * so it is at least as close to the float64 GELU as the portable kernel; test_geglu measures
 * both. For very negative x, exp saturates at e^88 and the result is a tiny
 * number of the right sign instead of the exact ~0, far below the f32 resolution of anything it
 * is added to. Every operation is per lane, so all widths give the same bits.
 */
#ifndef G4V_KERNELS_VEC_GEGLU_ROW_H
#define G4V_KERNELS_VEC_GEGLU_ROW_H

#include "vec.h"
#include "vec_exp.h"

static inline V_T geglu_vec(V_T x, V_T up) {
    const V_T k1 = V_SET1(0.044715f), m2k0 = V_SET1(-2.0f * 0.7978845608028654f);
    V_T inner = V_FMA(V_MUL(x, x), k1, V_SET1(1.0f));
    V_T z = V_MUL(V_MUL(x, m2k0), inner); /* -2u */
    V_T den = V_ADD(V_SET1(1.0f), vec_exp(z));
    return V_MUL(V_DIV(x, den), up);
}

void GEGLU_ROW_NAME(const float *gate, const float *up, float *out, int n) {
    int i = 0;
    for (; i + V_W <= n; i += V_W)
        V_STOREU(out + i, geglu_vec(V_LOADU(gate + i), V_LOADU(up + i)));
    if (i < n) { /* the ragged end through a small buffer, never reading past n */
        float g[V_W] = {0}, u[V_W] = {0};
        for (int t = i; t < n; t++)
            g[t - i] = gate[t], u[t - i] = up[t];
        V_STOREU(g, geglu_vec(V_LOADU(g), V_LOADU(u)));
        for (int t = i; t < n; t++)
            out[t] = g[t - i];
    }
}

#endif
