/* attention_avx2.c - flash-style attention (vec/attention_tile.h) on 8-float ymm vectors with
 * AVX2 + FMA, 24 queries per register tile; and the vector exps exposed for their accuracy test.
 */
#include "avx2.h"
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 256
#define ATTENTION_TILE_NAME g4v_attention_avx2
#include "kernels/vec/attention_tile.h"

/* y = exp(x) through either vector exp, the ragged end through a zero-padded buffer. */
static void exp_array(const float *x, float *y, size_t n, int nonpos) {
    for (size_t i = 0; i < n; i += V_W) {
        float bx[V_W] = {0}, by[V_W];
        size_t w = n - i < V_W ? n - i : V_W;
        for (size_t t = 0; t < w; t++)
            bx[t] = x[i + t];
        V_T v = V_LOADU(bx);
        V_STOREU(by, nonpos ? vec_exp_nonpos(v) : vec_exp(v));
        for (size_t t = 0; t < w; t++)
            y[i + t] = by[t];
    }
}

void g4v_exp_avx2(const float *x, float *y, size_t n) {
    exp_array(x, y, n, 0);
}

void g4v_exp_nonpos_avx2(const float *x, float *y, size_t n) {
    exp_array(x, y, n, 1);
}
