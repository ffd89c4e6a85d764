/* rmsnorm.c - RMSNorm with or without a weight, over rows (block norms) or heads (q/k/v norms).
 * docs/NUMERICS.md §3.1: y = x * (mean(x^2) + eps)^-0.5, then * w when there is a weight. The
 * weight is applied directly (Gemma 4), never as 1 + w (Gemma 3). Sum of squares in f32, in index
 * order. */
#include "kernels/dispatch.h"
#include "kernels/par_rows.h"

#include <math.h>

void g4v_rmsnorm_row_portable(const float *x, float *y, int n, const float *w, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    float inv = 1.0f / sqrtf(ss / (float)n + eps);
    if (w) {
        for (int i = 0; i < n; i++)
            y[i] = x[i] * inv * w[i];
    } else {
        for (int i = 0; i < n; i++)
            y[i] = x[i] * inv;
    }
}

typedef struct {
    const float *x;
    float *y;
    size_t ld;
    int n;
    const float *w;
    float eps;
    g4v_rmsnorm_row_fn *row;
} norm_job;

static void norm_rows(void *arg, size_t r0, size_t r1) {
    const norm_job *j = arg;
    for (size_t r = r0; r < r1; r++)
        j->row(j->x + r * j->ld, j->y + r * j->ld, j->n, j->w, j->eps);
}

void g4v_rmsnorm(const g4v_kernels *k, g4v_pool *pool, const float *x, float *y, size_t ld,
                 size_t rows, int n, const float *w, float eps) {
    norm_job j = {x, y, ld, n, w, eps, k->use[G4V_KF_RMSNORM_ROW].rmsnorm_row};
    g4v_par_rows(pool, rows, (size_t)n, norm_rows, &j);
}
