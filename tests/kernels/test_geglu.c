/* test_geglu.c - every registered GeGLU row kernel this CPU runs (G4V_ISA caps them) against
 * float64 GELU-tanh; the portable g4v_gelu_tanh measured the same way.
 *
 * Error measure: |got - ref64| / max(|x|, 1e-3) * |up| scale, i.e. relative to the input, since
 * GELU's output near 0 for negative x is the difference of nearly equal terms (the portable
 * 0.5x(1 + tanh u) loses all relative accuracy there; the SIMD x / (1 + e^-2u) does not).
 * Measured on Zen 3: SIMD <= 1.15e-7 of |x| over x in [-12, 12] (portable: 1.15e-7 too); the
 * bound is 1e-6. Ragged lengths check that the tail neither reads nor writes past n. That each
 * variant equals the portable one closely and that the kernel table picks the right one is
 * test_variants' job.
 */
#include "base/cpu.h"
#include "kernels/dispatch.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double gelu64(double x) {
    return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static void test_row(const g4v_kernel_variant *v, int n, double *worst_simd, double *worst_port) {
    float *g = malloc(sizeof(float) * (size_t)(n + 1)), *u = malloc(sizeof(float) * (size_t)n);
    float *x = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) {
        x[i] = -12.0f + 24.0f * (float)i / (float)(n > 1 ? n - 1 : 1);
        u[i] = (i % 3) ? 1.0f : -0.5f;
    }
    const float special[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 30.0f, -30.0f, 1e4f, -1e4f, 1e19f};
    for (int i = 0; i < n && i < 9; i++)
        x[n - 1 - i] = special[i];
    memcpy(g, x, sizeof(float) * (size_t)n);
    g[n] = 777.0f; /* guard */
    v->impl.geglu_row(g, u, g, n);
    int bad = 0;
    CHECK_MSG(g[n] == 777.0f, "geglu %s n=%d: wrote past the row", v->isa, n);
    for (int i = 0; i < n; i++) {
        double ref = gelu64(x[i]) * u[i], den = fmax(fabs(x[i]), 1e-3);
        double e = fabs(g[i] - ref) / den,
               ep = fabs((double)g4v_gelu_tanh(x[i]) * u[i] - ref) / den;
        if (!isfinite(ref)) ref = x[i] > 0 ? x[i] * (double)u[i] : 0.0; /* 1e19^3 overflows */
        e = fabs(g[i] - ref) / den;
        if (!(isfinite(g[i]) && e <= 1e-6) && bad++ == 0)
            fprintf(stderr, "geglu %s n=%d x=%.9g: got %.9g want %.9g\n", v->isa, n, x[i], g[i],
                    ref);
        if (fabs(x[i]) <= 12) {
            *worst_simd = fmax(*worst_simd, e);
            *worst_port = fmax(*worst_port, ep);
        }
    }
    CHECK_MSG(!bad, "geglu %s n=%d: %d values off by more than 1e-6 |x|", v->isa, n, bad);
    free(g);
    free(u);
    free(x);
}

int main(void) {
    printf("ISA: %s\n", g4v_cpu_isa_name());
    int count;
    const g4v_kernel_variant *v = g4v_kernel_variants(&count);
    for (int i = 0; i < count; i++) {
        if (v[i].family != G4V_KF_GEGLU_ROW || (v[i].needs & ~g4v_kernel_features())) continue;
        double ws = 0, wp = 0;
        const int ns[] = {1, 7, 8, 9, 17, 31, 33, 3075, 100003};
        for (int j = 0; j < 9; j++)
            test_row(&v[i], ns[j], &ws, &wp);
        printf("geglu_row %s: max |err| / |x| vs float64, x in [-12, 12]: %.3g (g4v_gelu_tanh "
               "%.3g)\n",
               v[i].isa, ws, wp);
    }
    return test_summary("test_geglu");
}
