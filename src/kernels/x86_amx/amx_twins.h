/* amx_twins.h - the AMX kernels compiled over the tile emulator (the *_twin.c files of this
 * folder): descriptors equal to the real ones but for the instructions' back end, which the
 * start-up self-test and the hardware check of make bench-amx compare bit for bit. Not in the
 * registry (variants.def): they are never chosen to run a model. */
#ifndef G4V_KERNELS_X86_AMX_AMX_TWINS_H
#define G4V_KERNELS_X86_AMX_AMX_TWINS_H

#include "kernels/gemm_kernel.h"
#include "kernels/kernels.h"

extern const g4v_gemm_kernel g4v_gemm_amx_bf16_emu;
extern const g4v_gemm_kernel g4v_gemm_amx_bf16_inplace_emu;
extern const g4v_gemm_kernel g4v_gemm_amx_q8_emu;
extern const g4v_gemm_kernel g4v_gemm_amx_q8b_emu;
extern const g4v_attention_kernel g4v_attention_amx_emu;

#endif
