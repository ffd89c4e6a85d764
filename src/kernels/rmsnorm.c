/* rmsnorm.c - RMSNorm with or without a weight, over rows (block norms) or heads (q/k/v norms).
 * SPEC C.2: y = x * (mean(x^2) + eps)^-0.5, then * w when there is a weight. The weight is
 * applied directly (Gemma 4), never as 1 + w (Gemma 3). Sum of squares in f32, in index order. */
#include "kernels.h"

#include "par_rows.h"

#include <math.h>

typedef struct {
    const float *x;
    float *y;
    int n;
    size_t ld;
    const float *w;
    float eps;
} norm_job;

static void norm_rows(void *arg, size_t r0, size_t r1) {
    const norm_job *j = arg;
    for (size_t r = r0; r < r1; r++) {
        const float *x = j->x + r * j->ld;
        float *y = j->y + r * j->ld;
        float ss = 0.0f;
        for (int i = 0; i < j->n; i++) ss += x[i] * x[i];
        float inv = 1.0f / sqrtf(ss / (float)j->n + j->eps);
        if (j->w) {
            for (int i = 0; i < j->n; i++) y[i] = x[i] * inv * j->w[i];
        } else {
            for (int i = 0; i < j->n; i++) y[i] = x[i] * inv;
        }
    }
}

void g4v_rmsnorm(g4v_pool *pool, const float *x, float *y, size_t rows, int n, size_t ld,
                 const float *w, float eps) {
    norm_job j = {x, y, n, ld, w, eps};
    g4v_par_rows(pool, rows, (size_t)n, norm_rows, &j);
}
