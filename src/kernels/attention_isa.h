/* attention_isa.h - the per-ISA attention variants behind g4v_attention (attention.c picks one
 * from CPUID, honouring G4V_ISA). Exposed so tests can run every variant this CPU supports in one
 * process and compare them with the portable one. Not part of any public contract.
 */
#ifndef G4V_KERNELS_ATTENTION_ISA_H
#define G4V_KERNELS_ATTENTION_ISA_H

#include "kernels.h"

#if defined(__x86_64__) || defined(G4V_GEMM_SIMDE)
#define G4V_ATTN_HAVE_X86 1
#endif

/* The plain-C kernel (attention.c): fixed summation order, the reference for the others. */
void g4v_attention_portable(g4v_pool *pool, const g4v_attn_args *a);

#ifdef G4V_ATTN_HAVE_X86
/* AVX2 + FMA (attention_avx2.c). Call only when g4v_cpu_features() has G4V_CPU_AVX2. */
void g4v_attention_avx2(g4v_pool *pool, const g4v_attn_args *a);

/* AVX-512F (attention_avx512.c), 48-query tiles. Call only when g4v_cpu_features() has
 * G4V_CPU_AVX512. */
void g4v_attention_avx512(g4v_pool *pool, const g4v_attn_args *a);

/* The kernel's vectorised exp, y[i] = exp(x[i]) for x <= 88 (exposed for its accuracy test):
 * within 2 ulp of expf for results >= FLT_MIN, 0 below (no denormals), -inf gives 0. */
void g4v_exp_avx2(const float *x, float *y, size_t n);

/* The softmax's exp (exp_nonpos_ps), for x <= 0: as accurate as g4v_exp_avx2 on [-87.3, 0];
 * below -87.336 (and -inf) it gives ~FLT_MIN instead of 0. */
void g4v_exp_nonpos_avx2(const float *x, float *y, size_t n);
#endif

#endif
