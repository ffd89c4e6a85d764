/* neon.h - what the arm64_neon folder offers beyond its registered variants: the vector exps,
 * exposed for their accuracy test (tests/kernels/test_attention.c). NEON is in every ARMv8-A
 * core, but call them only where the kernel table offers NEON (G4V_ISA may cap it).
 */
#ifndef G4V_KERNELS_ARM64_NEON_H
#define G4V_KERNELS_ARM64_NEON_H

#include <stddef.h>

/* y[i] = exp(x[i]), as g4v_exp_avx2 (x86_avx2/avx2.h): the same bits lane for lane. */
void g4v_exp_neon(const float *x, float *y, size_t n);

/* The softmax's exp (vec_exp_nonpos), as g4v_exp_nonpos_avx2. */
void g4v_exp_nonpos_neon(const float *x, float *y, size_t n);

#endif
