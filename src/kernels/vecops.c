/* vecops.c - small element-wise ops of the forward pass: residual add, scale, standardize. */
#include "kernels.h"

#include "par_rows.h"

typedef struct {
    float *y;
    size_t ldy;
    const float *x;
    size_t ldx;
    int n;
} add_job;

static void add_rows(void *arg, size_t r0, size_t r1) {
    const add_job *j = arg;
    for (size_t r = r0; r < r1; r++) {
        float *y = j->y + r * j->ldy;
        const float *x = j->x + r * j->ldx;
        for (int i = 0; i < j->n; i++) y[i] += x[i];
    }
}

void g4v_add_rows(g4v_pool *pool, float *y, size_t ldy, const float *x, size_t ldx, size_t rows,
                  int n) {
    add_job j = {y, ldy, x, ldx, n};
    g4v_par_rows(pool, rows, (size_t)n, add_rows, &j);
}

void g4v_scale(float *x, size_t n, float s) {
    for (size_t i = 0; i < n; i++) x[i] *= s;
}

void g4v_standardize(float *x, size_t rows, int n, size_t ld, const float *bias,
                     const float *scale) {
    for (size_t r = 0; r < rows; r++) {
        float *v = x + r * ld;
        for (int i = 0; i < n; i++) v[i] = (v[i] - bias[i]) * scale[i];
    }
}
