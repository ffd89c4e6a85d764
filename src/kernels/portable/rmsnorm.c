/* rmsnorm.c - the portable RMSNorm row kernel, with or without a weight (the driver over rows
 * is g4v_rmsnorm, rows.c).
 * docs/NUMERICS.md §3.1: y = x * (mean(x^2) + eps)^-0.5, then * w when there is a weight. The
 * weight is applied directly (Gemma 4), never as 1 + w (Gemma 3). Sum of squares in f32, in index
 * order. */
#include "kernels/dispatch.h"

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
