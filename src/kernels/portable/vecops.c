/* vecops.c - small element-wise ops: the portable add_row kernel (the residual add of
 * g4v_rmsnorm_add, rows.c), scale and standardize. */
#include "kernels/dispatch.h"

void g4v_add_row_portable(const float *x, float *y, int n) {
    for (int i = 0; i < n; i++)
        y[i] += x[i];
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
