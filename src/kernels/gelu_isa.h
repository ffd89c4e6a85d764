/* gelu_isa.h - per-ISA GeGLU row kernels behind g4v_geglu (gelu.c dispatches from CPUID,
 * honouring G4V_ISA). Exposed for tests. Not part of any public contract. */
#ifndef G4V_KERNELS_GELU_ISA_H
#define G4V_KERNELS_GELU_ISA_H

#if defined(__x86_64__)
#define G4V_GELU_HAVE_X86 1
/* out[i] = gelu_tanh(gate[i]) * up[i] for i < n with AVX2 + FMA (gelu_avx2.c); out may equal
 * gate or up. Call only when g4v_cpu_features() has G4V_CPU_AVX2. */
void g4v_geglu_row_avx2(const float *gate, const float *up, float *out, int n);
#endif

#endif
