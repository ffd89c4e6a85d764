/* gemm_amx_twin.c - gemm_amx.c compiled again over the tile emulator (kernels/amx_emu.h): the same
 * kernels, descriptors named with _emu (amx_twins.h), the reference the start-up self-test
 * compares the real tiles with (kernels/amx_check.c). */
#define G4V_AMX_EMU 1
#define AMX_VARIANT(x) x##_emu
#include "gemm_amx.c"
