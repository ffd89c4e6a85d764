/* amx_twins.h - the emulated twins of the tile kernels: each is its kernel's source compiled
 * once more over the emulator (G4V_AMX_EMU, amx_tile.h), its descriptor named with the suffix
 * _emu (AMX_VARIANT). The start-up self-test runs a kernel and its twin on the same inputs and
 * requires the same bits before the tables may offer the kernel. One line per twin. */
#ifndef G4V_KERNELS_X86_AMX_AMX_TWINS_H
#define G4V_KERNELS_X86_AMX_AMX_TWINS_H

#include "kernels/kernels.h"

extern const g4v_attention_kernel g4v_attention_amx_emu; /* attention_amx_twin.c */

#endif
