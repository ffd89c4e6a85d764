/* gelu_avx2.c - GeGLU row kernel with AVX2 + FMA: gate = gelu_tanh(gate) * up.
 *
 * Uses 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), u = sqrt(2/pi) (x + 0.044715 x^3), with the
 * polynomial exp of exp_avx2.h: one exp and one division per 8 elements instead of a libm tanhf
 * call per element (tanhf was ~17% of an e4b encode). The identity has no cancellation for
 * negative x (1 + tanh(u) does), so it is at least as close to the float64 GELU as the portable
 * kernel; test_geglu measures both. For very negative x, exp saturates at e^88 and the result is
 * a tiny number of the right sign instead of the exact ~0, which is far below f32 resolution of
 * anything it is added to. Compiled with -mavx2 -mfma (isa_flags.cmake).
 */
#include "gelu_isa.h"

#ifdef G4V_GELU_HAVE_X86
#include "exp_avx2.h"

static inline __m256 geglu8(__m256 x, __m256 up) {
    const __m256 k1 = _mm256_set1_ps(0.044715f), m2k0 = _mm256_set1_ps(-2.0f * 0.7978845608028654f);
    __m256 inner = _mm256_fmadd_ps(_mm256_mul_ps(x, x), k1, _mm256_set1_ps(1.0f));
    __m256 z = _mm256_mul_ps(_mm256_mul_ps(x, m2k0), inner); /* -2u */
    __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), exp_ps(z));
    return _mm256_mul_ps(_mm256_div_ps(x, den), up);
}

void g4v_geglu_row_avx2(const float *gate, const float *up, float *out, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, geglu8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
    if (i < n) { /* the ragged end through a small buffer, never reading past n */
        float g[8] = {0}, u[8] = {0};
        for (int t = i; t < n; t++) g[t - i] = gate[t], u[t - i] = up[t];
        _mm256_storeu_ps(g, geglu8(_mm256_loadu_ps(g), _mm256_loadu_ps(u)));
        for (int t = i; t < n; t++) out[t] = g[t - i];
    }
}
#endif
