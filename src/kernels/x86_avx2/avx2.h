/* avx2.h - what the x86_avx2 folder offers beyond its registered variants: the vector exps, exposed
 * for their accuracy test (tests/kernels/test_attention.c). Call only where the CPU has AVX2+FMA.
 */
#ifndef G4V_KERNELS_X86_AVX2_H
#define G4V_KERNELS_X86_AVX2_H

#include <stddef.h>

/* y[i] = exp(x[i]) for x <= 88: within 2 ulp of expf for results >= FLT_MIN, 0 below (no
 * denormals), -inf gives 0. */
void g4v_exp_avx2(const float *x, float *y, size_t n);

/* The softmax's exp (vec_exp_nonpos), for x <= 0: as accurate as g4v_exp_avx2 on [-87.3, 0];
 * below -87.336 (and -inf) it gives ~FLT_MIN instead of 0. */
void g4v_exp_nonpos_avx2(const float *x, float *y, size_t n);

#endif
