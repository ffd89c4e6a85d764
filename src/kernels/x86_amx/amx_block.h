/* amx_block.h - the 2 x 2 block of C tiles the AMX GEMM kernels share (gemm_amx.c,
 * gemm_amx_q8.c): tiles 0-3 hold a 32 x 32 block of 4-byte elements (f32 or int32), tile 0 rows
 * 0-15 x columns 0-15, 1 rows 0-15 x 16-31, 2 rows 16-31 x 0-15, 3 rows 16-31 x 16-31. p points
 * at element (0, 0) of a block of row stride ld elements. */
#ifndef G4V_KERNELS_X86_AMX_AMX_BLOCK_H
#define G4V_KERNELS_X86_AMX_AMX_BLOCK_H

#include "amx_tile.h"

#define AMX_BLOCK_LOAD(p, ld)                                                                      \
    do {                                                                                           \
        TILE_LOAD(0, (p), (size_t)(ld) * 4);                                                       \
        TILE_LOAD(1, (p) + 16, (size_t)(ld) * 4);                                                  \
        TILE_LOAD(2, (p) + 16 * (size_t)(ld), (size_t)(ld) * 4);                                   \
        TILE_LOAD(3, (p) + 16 * (size_t)(ld) + 16, (size_t)(ld) * 4);                              \
    } while (0)

#define AMX_BLOCK_STORE(p, ld)                                                                     \
    do {                                                                                           \
        TILE_STORE(0, (p), (size_t)(ld) * 4);                                                      \
        TILE_STORE(1, (p) + 16, (size_t)(ld) * 4);                                                 \
        TILE_STORE(2, (p) + 16 * (size_t)(ld), (size_t)(ld) * 4);                                  \
        TILE_STORE(3, (p) + 16 * (size_t)(ld) + 16, (size_t)(ld) * 4);                             \
    } while (0)

/* The end of a GEMM call on a thread that may have used the tiles (the descriptors' release):
 * their state back to INIT (a live tile state costs every context switch and keeps the core from
 * its deep idle state). */
static inline void amx_block_release(void) {
    TILE_RELEASE();
}

#define AMX_BLOCK_ZERO()                                                                           \
    do {                                                                                           \
        TILE_ZERO(0);                                                                              \
        TILE_ZERO(1);                                                                              \
        TILE_ZERO(2);                                                                              \
        TILE_ZERO(3);                                                                              \
    } while (0)

#endif
