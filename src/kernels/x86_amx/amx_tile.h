/* amx_tile.h - the tile vocabulary the AMX kernels are written in, once, over two back ends:
 * the real instructions, or the portable emulator (kernels/amx_emu.h) when G4V_SIMDE (the test
 * builds that emulate every x86 kernel) or G4V_AMX_EMU (the self-test's twin, amx_twin.c) is
 * defined, the way simd.h maps the AVX-512 intrinsics to SIMDe.
 *
 * Tile numbers are literal tokens (0-7): the instructions encode them. Operations:
 *   TILE_LOADCONFIG(cfg)        ldtilecfg from a g4v_tile_config *
 *   TILE_STORECONFIG(cfg)       sttilecfg into one
 *   TILE_RELEASE()              tilerelease
 *   TILE_LOAD(t, base, stride)  tileloadd (stride in bytes);  TILE_LOAD_T1: tileloaddt1
 *   TILE_STORE(t, base, stride) tilestored
 *   TILE_ZERO(t)                tilezero
 *   TILE_DPBF16PS(c, a, b)      C(f32) += A(bf16 pairs) . B(bf16 pairs, VNNI layout)
 *   TILE_DPBSSD / _DPBSUD / _DPBUSD / _DPBUUD (c, a, b): int8 groups of four into int32
 * and g4v_tile_configure(cfg): loads cfg unless the thread's tiles already hold exactly it (read
 * back with sttilecfg, so a change by any other code on this thread is seen).
 *
 * The real back end is our own inline assembly, not GCC's intrinsics: GCC 12's
 * _tile_loadconfig declares an 8-byte memory operand, so the stores that fill the other 56
 * bytes of a stack config may be deleted (the libllama crash, ../docs/NUMERICS.md §13), and its
 * tile loads declare no memory read at all. Here ldtilecfg's operand is the whole 64-byte struct
 * and every tile load and store clobbers memory, so the packers' stores before them stay.
 * scripts/check-tile-config.py reads every ldtilecfg in our objects to hold that.
 */
#ifndef G4V_KERNELS_X86_AMX_AMX_TILE_H
#define G4V_KERNELS_X86_AMX_AMX_TILE_H

#include "kernels/amx_emu.h"

#include <string.h>

#if defined(G4V_SIMDE) || defined(G4V_AMX_EMU)
#define G4V_TILES_EMULATED 1
#define TILE_LOADCONFIG(cfg) g4v_amx_emu_ldtilecfg(cfg)
#define TILE_STORECONFIG(cfg) g4v_amx_emu_sttilecfg(cfg)
#define TILE_RELEASE() g4v_amx_emu_tilerelease()
#define TILE_LOAD(t, base, stride) g4v_amx_emu_tileloadd(t, base, (size_t)(stride))
#define TILE_LOAD_T1(t, base, stride) g4v_amx_emu_tileloadd(t, base, (size_t)(stride))
#define TILE_STORE(t, base, stride) g4v_amx_emu_tilestored(t, base, (size_t)(stride))
#define TILE_ZERO(t) g4v_amx_emu_tilezero(t)
#define TILE_DPBF16PS(c, a, b) g4v_amx_emu_tdpbf16ps(c, a, b)
#define TILE_DPBSSD(c, a, b) g4v_amx_emu_tdpbssd(c, a, b)
#define TILE_DPBSUD(c, a, b) g4v_amx_emu_tdpbsud(c, a, b)
#define TILE_DPBUSD(c, a, b) g4v_amx_emu_tdpbusd(c, a, b)
#define TILE_DPBUUD(c, a, b) g4v_amx_emu_tdpbuud(c, a, b)
#else
#define G4V_TILES_EMULATED 0
static inline void g4v_tile_ldtilecfg_(const g4v_tile_config *cfg) {
    __asm__ volatile("ldtilecfg %0" : : "m"(*cfg));
}
static inline void g4v_tile_sttilecfg_(g4v_tile_config *cfg) {
    __asm__ volatile("sttilecfg %0" : "=m"(*cfg));
}
#define TILE_LOADCONFIG(cfg) g4v_tile_ldtilecfg_(cfg)
#define TILE_STORECONFIG(cfg) g4v_tile_sttilecfg_(cfg)
#define TILE_RELEASE() __asm__ volatile("tilerelease" ::: "memory")
#define TILE_LOAD(t, base, stride)                                                                 \
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t                                                \
                     :                                                                              \
                     : "r"((const void *)(base)), "r"((size_t)(stride))                             \
                     : "memory")
#define TILE_LOAD_T1(t, base, stride)                                                              \
    __asm__ volatile("tileloaddt1 (%0,%1,1), %%tmm" #t                                              \
                     :                                                                              \
                     : "r"((const void *)(base)), "r"((size_t)(stride))                             \
                     : "memory")
#define TILE_STORE(t, base, stride)                                                                \
    __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)"                                            \
                     :                                                                              \
                     : "r"((void *)(base)), "r"((size_t)(stride))                                   \
                     : "memory")
#define TILE_ZERO(t) __asm__ volatile("tilezero %%tmm" #t ::)
#define TILE_DPBF16PS(c, a, b) __asm__ volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define TILE_DPBSSD(c, a, b) __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define TILE_DPBSUD(c, a, b) __asm__ volatile("tdpbsud %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define TILE_DPBUSD(c, a, b) __asm__ volatile("tdpbusd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#define TILE_DPBUUD(c, a, b) __asm__ volatile("tdpbuud %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::)
#endif

/* Loads cfg unless this thread's tiles hold exactly it already. */
static inline void g4v_tile_configure(const g4v_tile_config *cfg) {
    g4v_tile_config now;
    TILE_STORECONFIG(&now);
    if (memcmp(&now, cfg, sizeof now)) TILE_LOADCONFIG(cfg);
}

/* A palette-1 configuration: tile t gets rows[t] x colsb[t] for t < n, the rest unconfigured. */
static inline g4v_tile_config g4v_tile_config_make(int n, const int *rows, const int *colsb) {
    g4v_tile_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < n && t < 8; t++) {
        c.rows[t] = (uint8_t)rows[t];
        c.colsb[t] = (uint16_t)colsb[t];
    }
    return c;
}

#endif
