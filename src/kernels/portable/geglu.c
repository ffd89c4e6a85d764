/* geglu.c - GeGLU with the tanh form of GELU ("gelu_pytorch_tanh", docs/NUMERICS.md §3.3), in f32:
 * gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Not the erf form, not
 * x*sigmoid(1.702x). The encoder runs it as the GEMM's fused epilogue (gemm.h) through the kernel
 * table's geglu_row; this is the portable row kernel.
 */
#include "kernels/dispatch.h"

#include <math.h>

float g4v_gelu_tanh(float x) {
    const float k0 = 0.7978845608028654f, k1 = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(k0 * (x + k1 * x * x * x)));
}

void g4v_geglu_row_portable(const float *gate, const float *up, float *out, int n) {
    for (int i = 0; i < n; i++)
        out[i] = g4v_gelu_tanh(gate[i]) * up[i];
}
