/* avgpool.c - the pooler's k x k average (docs/NUMERICS.md §4.7) on an unpadded patch grid.
 * Soft token (Y, X) = sum over the block {rows kY..kY+k-1} x {cols kX..kX+k-1}, rows outer,
 * of h * f32(1/k^2): HF's f32 pooling matmul uses weights exactly 1/k^2. Output is row-major over
 * the pooled grid (index Y*(gw/k) + X), which is the order the soft tokens reach the LM. */
#include "kernels/kernels.h"

void g4v_avgpool(const float *h, size_t ld, float *out, int gh, int gw, int D, int k) {
    const float wgt = 1.0f / (float)(k * k);
    int ph = gh / k, pw = gw / k;
    for (int Y = 0; Y < ph; Y++) {
        for (int X = 0; X < pw; X++) {
            float *o = out + ((size_t)Y * pw + X) * (size_t)D;
            for (int c = 0; c < D; c++)
                o[c] = 0.0f;
            for (int dy = 0; dy < k; dy++) {
                for (int dx = 0; dx < k; dx++) {
                    const float *src = h + ((size_t)(k * Y + dy) * gw + (size_t)(k * X + dx)) * ld;
                    for (int c = 0; c < D; c++)
                        o[c] += src[c] * wgt;
                }
            }
        }
    }
}
