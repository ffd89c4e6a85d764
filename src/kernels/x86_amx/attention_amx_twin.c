/* attention_amx_twin.c - attention_amx.c over the tile emulator: g4v_attention_amx_emu, the twin
 * the start-up self-test compares g4v_attention_amx with bit for bit (amx_twins.h). Only the
 * tile operations differ; the vector code is the same as the kernel's. */
#define G4V_AMX_EMU 1
#define AMX_VARIANT(x) x##_emu

#include "amx_twins.h"

#include "attention_amx.c"
