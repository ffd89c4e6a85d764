/* vecops.c - small element-wise ops of the forward pass: residual add, scale, standardize. */
#include "kernels/dispatch.h"
#include "kernels/par_rows.h"

#include <string.h>

void g4v_add_row_portable(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++)
        y[i] += x[i];
}

typedef struct {
    const float *x;
    size_t ldx;
    float *y;
    size_t ldy;
    int n;
    g4v_add_row_fn *row;
} add_job;

static void add_rows(void *arg, size_t r0, size_t r1) {
    const add_job *j = arg;
    for (size_t r = r0; r < r1; r++)
        j->row(j->x + r * j->ldx, j->y + r * j->ldy, j->n);
}

void g4v_add_rows(const g4v_kernels *k, g4v_pool *pool, const float *x, size_t ldx, float *y,
                  size_t ldy, size_t rows, int n) {
    add_job j = {x, ldx, y, ldy, n, k->use[G4V_KF_ADD_ROW].add_row};
    g4v_par_rows(pool, rows, (size_t)n, add_rows, &j);
}

typedef struct {
    const float *src;
    size_t ld;
    float *dst;
    size_t L, row0;
    int heads, d;
} split_job;

static void split_rows(void *arg, size_t r0, size_t r1) {
    const split_job *j = arg;
    size_t d = (size_t)j->d;
    for (size_t r = r0; r < r1; r++)
        for (int h = 0; h < j->heads; h++)
            memcpy(j->dst + ((size_t)h * j->L + j->row0 + r) * d, j->src + r * j->ld + h * d,
                   d * sizeof(float));
}

void g4v_split_heads(g4v_pool *pool, const float *src, size_t ld, float *dst, size_t L, size_t row0,
                     size_t rows, int heads, int d) {
    split_job j = {src, ld, dst, L, row0, heads, d};
    g4v_par_rows(pool, rows, (size_t)heads * (size_t)d, split_rows, &j);
}

void g4v_scale(float *x, size_t n, float s) {
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
}

void g4v_standardize(float *x, size_t ld, const float *bias, const float *scale, size_t rows,
                     int n) {
    for (size_t r = 0; r < rows; r++) {
        float *v = x + r * ld;
        for (int i = 0; i < n; i++)
            v[i] = (v[i] - bias[i]) * scale[i];
    }
}
