/* layernorm.c - LayerNorm over rows, as torch.nn.LayerNorm computes it (docs/NUMERICS.md §9.2):
 * mean, then the biased variance of x - mean (two passes, so a large mean does not cancel the
 * variance away), then (x - mean) / sqrt(var + eps) * w + b in f32. The two sums run in double,
 * in index order: an f32 sum of 3840 values drifts by ~1e-4 of their magnitude, which a row with
 * a large mean would turn into output error; in double it is free at this size. Used only by the
 * unified embedder, where it is a small fraction of the work: not dispatched. */
#include "kernels/kernels.h"
#include "kernels/par_rows.h"

#include <math.h>

static void layernorm_row(const float *x, float *y, int n, const float *w, const float *b,
                          float eps) {
    double sum = 0.0;
    for (int i = 0; i < n; i++)
        sum += x[i];
    float mean = (float)(sum / n);
    double ss = 0.0;
    for (int i = 0; i < n; i++) {
        double d = (double)x[i] - (double)mean;
        ss += d * d;
    }
    float inv = (float)(1.0 / sqrt(ss / n + (double)eps));
    for (int i = 0; i < n; i++) {
        float v = (x[i] - mean) * inv;
        y[i] = (w ? v * w[i] : v) + (b ? b[i] : 0.0f);
    }
}

typedef struct {
    const float *x;
    float *y;
    size_t ld;
    int n;
    const float *w, *b;
    float eps;
} ln_job;

static void ln_rows(void *arg, size_t r0, size_t r1) {
    const ln_job *j = arg;
    for (size_t r = r0; r < r1; r++)
        layernorm_row(j->x + r * j->ld, j->y + r * j->ld, j->n, j->w, j->b, j->eps);
}

void g4v_layernorm(g4v_pool *pool, const float *x, float *y, size_t ld, size_t rows, int n,
                   const float *w, const float *b, float eps) {
    ln_job j = {x, y, ld, n, w, b, eps};
    g4v_par_rows(pool, rows, (size_t)n, ln_rows, &j);
}
