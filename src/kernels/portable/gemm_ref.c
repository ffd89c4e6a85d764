/* gemm_ref.c - the portable GEMM: the specification of gemm.h in plain loops.
 * Slow by design; fast kernels are tested against it. Summation runs k = 0, 1, ..., K-1. */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/gemm_q8.h"

#include <math.h>
#include <stdint.h>

/* INT8 mode (gemm_q8.h), straight from its definition: each weight row's and each input row's
 * scale and codes, recomputed where they are needed (slow, allocation-free). */
static float q8_dot(const float *x, const void *w, g4v_dtype dtype, int n, int k,
                    const g4v_gemm_epi *e) {
    float amax = 0.0f, wmax = 0.0f, inv, winv;
    for (int t = 0; t < k; t++) {
        float a = fabsf(g4v_clampf(x[t], e->in_lo, e->in_hi));
        float b = fabsf(g4v_load_elem(w, dtype, (size_t)n * k + t));
        amax = a > amax ? a : amax;
        wmax = b > wmax ? b : wmax;
    }
    float sa = g4v_q8_scale(amax, &inv), sw = g4v_q8_scale(wmax, &winv);
    int32_t acc = 0;
    for (int t = 0; t < k; t++)
        acc += (int32_t)g4v_q8_code(g4v_clampf(x[t], e->in_lo, e->in_hi), inv) *
               (int32_t)g4v_q8_code(g4v_load_elem(w, dtype, (size_t)n * k + t), winv);
    return g4v_q8_dequant(acc, sa, sw);
}

/* INT8_BLOCKS mode (gemm_q8.h): the same per 32-block of k, blocks summed in order. */
static float q8b_dot(const float *x, const void *w, g4v_dtype dtype, int n, int k,
                     const g4v_gemm_epi *e) {
    float y = 0.0f;
    for (int k0 = 0; k0 < k; k0 += G4V_Q8_BLOCK) {
        int k1 = k0 + G4V_Q8_BLOCK < k ? k0 + G4V_Q8_BLOCK : k;
        float amax = 0.0f, wmax = 0.0f, inv, winv;
        for (int t = k0; t < k1; t++) {
            float a = fabsf(g4v_clampf(x[t], e->in_lo, e->in_hi));
            float b = fabsf(g4v_load_elem(w, dtype, (size_t)n * k + t));
            amax = a > amax ? a : amax;
            wmax = b > wmax ? b : wmax;
        }
        float sa = g4v_q8_scale(amax, &inv), sw = g4v_q8_scale(wmax, &winv);
        int32_t acc = 0;
        for (int t = k0; t < k1; t++)
            acc += (int32_t)g4v_q8_code(g4v_clampf(x[t], e->in_lo, e->in_hi), inv) *
                   (int32_t)g4v_q8_code(g4v_load_elem(w, dtype, (size_t)n * k + t), winv);
        y = g4v_q8b_step(acc, sa, sw, y);
    }
    return y;
}

void g4v_gemm_ref(const g4v_kernels *kt, const float *X, size_t ldx, const void *w, g4v_dtype dtype,
                  float *Y, size_t ldy, size_t m, int n, int k, g4v_math_mode mode,
                  const g4v_gemm_epi *epi) {
    g4v_gemm_epi e = epi ? *epi : g4v_gemm_epi_none();
    g4v_geglu_row_fn *geglu = e.gelu_gate ? kt->use[G4V_KF_GEGLU_ROW].geglu_row : NULL;
    for (size_t i = 0; i < m; i++) {
        const float *x = X + i * ldx;
        for (int j = 0; j < n; j++) {
            float acc = 0.0f;
            if (mode == G4V_MATH_INT8) acc = q8_dot(x, w, dtype, j, k, &e);
            if (mode == G4V_MATH_INT8_BLOCKS) acc = q8b_dot(x, w, dtype, j, k, &e);
            for (int t = 0; t < k && !g4v_math_is_int8(mode); t++) {
                float xv = g4v_clampf(x[t], e.in_lo, e.in_hi);
                if (mode == G4V_MATH_FAST) xv = g4v_round_bf16(xv);
                acc += xv * g4v_load_elem(w, dtype, (size_t)j * k + t);
            }
            float y = g4v_clampf(acc, e.out_lo, e.out_hi);
            if (geglu) geglu(e.gelu_gate + i * e.ldg + j, &y, &y, 1);
            float *dst = Y + i * ldy + j;
            *dst = e.accumulate ? *dst + y : y;
        }
    }
}
