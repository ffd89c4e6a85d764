/* attention_neon.c - flash-style attention (vec/attention_tile.h) on 4-float NEON q registers,
 * 24 queries per register tile. Six vectors of queries (ATTENTION_QV) instead of x86's three:
 * each product block is then 4 x 6 = 24 accumulators, the independent FMA chains four 128-bit
 * FMA pipes of latency 4 need (Neoverse V1/V2, Apple M1); 24 + 6 + 1 of the 32 registers.
 * f32 throughout; every sum runs in the order of the other variants.
 */
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 128
#define ATTENTION_QV 6
#define ATTENTION_TILE_NAME g4v_attention_neon
#include "kernels/vec/attention_tile.h"

#include "neon.h"

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

void g4v_exp_neon(const float *x, float *y, size_t n) {
    exp_array(x, y, n, 0);
}

void g4v_exp_nonpos_neon(const float *x, float *y, size_t n) {
    exp_array(x, y, n, 1);
}
