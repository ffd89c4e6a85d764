/* gelu.c - GeGLU with the tanh form of GELU ("gelu_pytorch_tanh", SPEC C.4), in f32:
 * gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). Not the erf form, not
 * x*sigmoid(1.702x). g4v_geglu uses the AVX2 row kernel (gelu_avx2.c) when CPUID and G4V_ISA allow.
 */
#include "kernels.h"

#include "base/cpu.h"
#include "gelu_isa.h"
#include "par_rows.h"

#include <math.h>

float g4v_gelu_tanh(float x) {
    const float k0 = 0.7978845608028654f, k1 = 0.044715f;
    return 0.5f * x * (1.0f + tanhf(k0 * (x + k1 * x * x * x)));
}

static void geglu_row_portable(const float *gate, const float *up, float *out, int n) {
    for (int i = 0; i < n; i++)
        out[i] = g4v_gelu_tanh(gate[i]) * up[i];
}

g4v_geglu_row_fn g4v_geglu_row_impl(void) {
#ifdef G4V_GELU_HAVE_X86
    if (g4v_cpu_features() & G4V_CPU_AVX2) return g4v_geglu_row_avx2;
#endif
    return geglu_row_portable;
}

void g4v_geglu_row(const float *gate, const float *up, float *out, int n) {
    g4v_geglu_row_impl()(gate, up, out, n);
}

typedef struct {
    float *gate;
    const float *up;
    int n;
    size_t ld;
    g4v_geglu_row_fn row;
} geglu_job;

static void geglu_rows(void *arg, size_t r0, size_t r1) {
    const geglu_job *j = arg;
    for (size_t r = r0; r < r1; r++)
        j->row(j->gate + r * j->ld, j->up + r * j->ld, j->gate + r * j->ld, j->n);
}

void g4v_geglu(g4v_pool *pool, float *gate, const float *up, size_t rows, int n, size_t ld) {
    geglu_job j = {gate, up, n, ld, g4v_geglu_row_impl()};
    g4v_par_rows(pool, rows, (size_t)n, geglu_rows, &j);
}
