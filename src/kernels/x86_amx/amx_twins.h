/* amx_twins.h - the emulated twins of the tile kernels: each is its kernel's source compiled
 * once more over the emulator (G4V_AMX_EMU, amx_tile.h), its descriptor named with the suffix
 * _emu (AMX_VARIANT). The start-up self-test (kernels/amx_check.c) and the hardware check of
 * make bench-amx run a kernel and its twin on the same inputs and require the same bits. Not in
 * the registry (variants.def): a twin never runs a model. One line per twin. */
#ifndef G4V_KERNELS_X86_AMX_AMX_TWINS_H
#define G4V_KERNELS_X86_AMX_AMX_TWINS_H

#include "kernels/gemm_kernel.h"
#include "kernels/kernels.h"

extern const g4v_gemm_kernel g4v_gemm_amx_bf16_emu;         /* gemm_amx_twin.c */
extern const g4v_gemm_kernel g4v_gemm_amx_bf16_inplace_emu; /* gemm_amx_twin.c */
extern const g4v_gemm_kernel g4v_gemm_amx_q8_emu;           /* gemm_amx_q8_twin.c */
extern const g4v_gemm_kernel g4v_gemm_amx_q8b_emu;          /* gemm_amx_q8_twin.c */
extern const g4v_attention_kernel g4v_attention_amx_emu;    /* attention_amx_twin.c */

#endif
