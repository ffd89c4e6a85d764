/* vec_exp_arrays.h - the vector exps of kernels/vec/vec_exp.h as array functions, for
 * test_attention's accuracy check (tests/kernels/vec_exp_arrays.c). Call only where the CPU has
 * the instruction set they are compiled for (AVX2 + FMA on x86-64, NEON on ARM64).
 */
#ifndef G4V_TESTS_VEC_EXP_ARRAYS_H
#define G4V_TESTS_VEC_EXP_ARRAYS_H

#include <stddef.h>

/* y[i] = exp(x[i]) through vec_exp: for x <= 88 within 2 ulp of expf for results >= FLT_MIN, 0
 * below (no denormals), -inf gives 0. */
void g4v_test_vec_exp(const float *x, float *y, size_t n);

/* The softmax's exp (vec_exp_nonpos), for x <= 0: as accurate as vec_exp on [-87.3, 0]; below
 * -87.336 (and -inf) it gives ~FLT_MIN instead of 0. */
void g4v_test_vec_exp_nonpos(const float *x, float *y, size_t n);

#endif
