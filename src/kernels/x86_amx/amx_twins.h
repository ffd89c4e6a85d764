/* amx_twins.h - the AMX kernels' descriptors and their emulated twins, for the start-up self-test
 * (kernels/amx_check.c) and bench/bench_amx.c, which run each real kernel against its twin.
 *
 * Each tile kernel's file is compiled twice: as itself (the real instructions, amx_tile.h) and
 * with G4V_AMX_EMU defined (amx_twin.c: the same source on the emulator, kernels/amx_emu.h), whose
 * descriptors carry the suffix _emu. Same source, same order of operations: on a CPU whose tiles
 * behave as the SDM says, a kernel and its twin give the same bits.
 *
 * The declarations are weak until every kernel has landed: a descriptor that is not in this build
 * has the address NULL, and its users test for that (G4V_AMX_HAVE(sym)). When all of them are in
 * (variants.def names the real ones), define G4V_AMX_TWINS_STRONG to make them ordinary externs,
 * so a missing one is a link error. */
#ifndef G4V_KERNELS_X86_AMX_AMX_TWINS_H
#define G4V_KERNELS_X86_AMX_AMX_TWINS_H

#include "kernels/gemm_kernel.h"
#include "kernels/kernels.h"

#ifdef G4V_AMX_TWINS_STRONG
#define G4V_AMX_WEAK_
#define G4V_AMX_HAVE(sym) 1
#else
#define G4V_AMX_WEAK_ __attribute__((weak))
#define G4V_AMX_HAVE(sym) ((const void *)&(sym) != (const void *)0)
#endif

/* The tile GEMMs (gemm_amx*.c): bf16 packed and in place (FAST), INT8 and blocked INT8. */
extern const g4v_gemm_kernel g4v_gemm_amx_bf16 G4V_AMX_WEAK_;
extern const g4v_gemm_kernel g4v_gemm_amx_bf16_inplace G4V_AMX_WEAK_;
extern const g4v_gemm_kernel g4v_gemm_amx_q8 G4V_AMX_WEAK_;
extern const g4v_gemm_kernel g4v_gemm_amx_q8b G4V_AMX_WEAK_;
extern const g4v_gemm_kernel g4v_gemm_amx_bf16_emu G4V_AMX_WEAK_;
extern const g4v_gemm_kernel g4v_gemm_amx_bf16_inplace_emu G4V_AMX_WEAK_;
extern const g4v_gemm_kernel g4v_gemm_amx_q8_emu G4V_AMX_WEAK_;
extern const g4v_gemm_kernel g4v_gemm_amx_q8b_emu G4V_AMX_WEAK_;

/* The tile attention (attention_amx.c), FAST only. */
extern const g4v_attention_kernel g4v_attention_amx G4V_AMX_WEAK_;
extern const g4v_attention_kernel g4v_attention_amx_emu G4V_AMX_WEAK_;

/* amx_hold.c: tile data held across a sched_yield and a sleep (the self-test's third part), and
 * TILERELEASE on the calling thread. Real instructions: call only where G4V_CPU_AMX is set.
 * g4v_amx_hold_check: 1 when every byte of all eight tiles came back after `rounds` rounds of
 * load, sched_yield, sleep sleep_us microseconds, store; 0 with the first difference in why. In a
 * build whose tiles are emulated (G4V_SIMDE) it runs on the emulator. */
int g4v_amx_hold_check(int rounds, int sleep_us, char *why, size_t cap);
void g4v_amx_tile_release(void);

#endif
