/* amx_emu.h - Intel AMX's tile unit in portable C: the emulator the tile kernels run on where the
 * CPU has no AMX (SIMDe test builds, ARM64, and the start-up self-test's twin of each kernel,
 * x86_amx/amx_twin.c), so every tile kernel is built and proven bit for bit on any machine.
 *
 * State per thread, as on hardware: the palette-1 configuration and eight tiles of 16 rows x 64
 * bytes. The operations follow the Intel SDM (docs/NUMERICS.md §13 "AMX tiles"):
 *   ldtilecfg / sttilecfg / tilerelease; tileloadd (and its T1 form: a cache hint, the same
 *   here); tilestored; tilezero; tdpbf16ps; tdpbssd / tdpbsud / tdpbusd / tdpbuud.
 * TDPBF16PS per output (m, n) over the instruction's K pairs: an fp32 FMA chain over the even
 * products and a separate one over the odd products, each from +0, in k order; then
 * tmp = even + odd; then C = C + tmp. Round to nearest even; bf16 inputs and the fp32 C that are
 * denormal count as zero; denormal results (of every FMA, the pair sum and the final add) are
 * flushed to zero of the same sign; MXCSR is neither read nor changed.
 * TDPB[SU][SU]D: C.s32 += the four byte products of each group (sign- or zero-extended per the
 * letters: A first, B second), wrapping.
 * Rows past a tile's `rows` and bytes past its `colsb` read as zero after a load and are zeroed
 * in the destination after a dot product.
 *
 * Faults: every case where hardware raises #GP or #UD (a bad configuration, an unconfigured tile,
 * shapes that disagree, the same tile twice, any tile operation after tilerelease) prints one
 * line naming the instruction and the reason to stderr and aborts, unless a fault hook is set
 * (tests), which is called with that line instead; the operation then does nothing.
 *
 * Counters (per thread): tile products (dot-product instructions), tile loads and the bytes they
 * read, tile stores, configuration loads. The GEMM's blocking test reads them.
 */
#ifndef G4V_KERNELS_AMX_EMU_H
#define G4V_KERNELS_AMX_EMU_H

#include <stddef.h>
#include <stdint.h>

/* The 64-byte LDTILECFG operand (palette 1). Tiles 8-15's colsb/rows must stay zero. */
typedef struct g4v_tile_config {
    uint8_t palette;   /* 0: INIT (all tiles unconfigured), 1: the palette with eight tiles */
    uint8_t start_row; /* 0 */
    uint8_t reserved[14];
    uint16_t colsb[16]; /* bytes per row, <= 64 */
    uint8_t rows[16];   /* <= 16 */
} g4v_tile_config;

_Static_assert(sizeof(g4v_tile_config) == 64, "LDTILECFG reads 64 bytes");

typedef struct g4v_amx_emu_counters {
    uint64_t products;   /* tdp* instructions */
    uint64_t loads;      /* tileloadd(t1) */
    uint64_t load_bytes; /* rows x colsb of each load */
    uint64_t stores;     /* tilestored */
    uint64_t configs;    /* ldtilecfg */
} g4v_amx_emu_counters;

/* The instructions. t, c, a, b are tile numbers 0-7; stride is in bytes. */
void g4v_amx_emu_ldtilecfg(const g4v_tile_config *cfg);
void g4v_amx_emu_sttilecfg(g4v_tile_config *cfg);
void g4v_amx_emu_tilerelease(void);
void g4v_amx_emu_tileloadd(int t, const void *base, size_t stride);
void g4v_amx_emu_tilestored(int t, void *base, size_t stride);
void g4v_amx_emu_tilezero(int t);
void g4v_amx_emu_tdpbf16ps(int c, int a, int b);
void g4v_amx_emu_tdpbssd(int c, int a, int b);
void g4v_amx_emu_tdpbsud(int c, int a, int b);
void g4v_amx_emu_tdpbusd(int c, int a, int b);
void g4v_amx_emu_tdpbuud(int c, int a, int b);

/* Tests: the whole 16 x 64 bytes of tile t as this thread's tile register holds them (what
 * XSAVE would show), including the bytes past rows/colsb that the instructions zero. */
void g4v_amx_emu_tile_bytes(int t, uint8_t out[16][64]);

/* This thread's counters, and setting them to zero. */
void g4v_amx_emu_counters_get(g4v_amx_emu_counters *out);
void g4v_amx_emu_counters_reset(void);

/* Tests: called with the fault's message instead of aborting (NULL: abort again). Per thread. */
typedef void (*g4v_amx_emu_fault_fn)(const char *message);
void g4v_amx_emu_set_fault_hook(g4v_amx_emu_fault_fn fn);

#endif
