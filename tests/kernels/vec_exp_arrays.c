/* vec_exp_arrays.c - see vec_exp_arrays.h. Compiled only into test_attention, at the vector width
 * and with the flags of the ISA folder whose attention kernel inlines these exps (x86_avx2: 256
 * bits, -mavx2 -mfma, tests/kernels/CMakeLists.txt; arm64_neon: 128 bits), so the test checks
 * the instructions the library runs without the library carrying test-only functions.
 */
#include "kernels/dispatch.h"

#if G4V_X86_KERNELS
#define G4V_VEC_BITS 256
#else
#define G4V_VEC_BITS 128
#endif
#include "kernels/vec/vec_exp.h"
#include "vec_exp_arrays.h"

/* y = exp(x) through either vector exp, the ragged end through a zero-padded buffer. */
static void exp_array(const float *x, float *y, size_t n, int nonpos) {
    for (size_t i = 0; i < n; i += V_W) {
        float bx[V_W] = {0}, by[V_W];
        size_t w = n - i < V_W ? n - i : V_W;
        for (size_t t = 0; t < w; t++)
            bx[t] = x[i + t];
        V_T v = V_LOADU(bx);
        V_STOREU(by, nonpos ? vec_exp_nonpos(v) : vec_exp(v));
        for (size_t t = 0; t < w; t++)
            y[i + t] = by[t];
    }
}

void g4v_test_vec_exp(const float *x, float *y, size_t n) { exp_array(x, y, n, 0); }

void g4v_test_vec_exp_nonpos(const float *x, float *y, size_t n) { exp_array(x, y, n, 1); }
