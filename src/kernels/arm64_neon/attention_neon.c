/* attention_neon.c - flash-style attention (vec/attention_tile.h) on 4-float NEON q registers,
 * 24 queries per register tile. Six vectors of queries (ATTENTION_QV) instead of x86's three:
 * each product block is then 4 x 6 = 24 accumulators, the independent FMA chains four 128-bit
 * FMA pipes of latency 4 need (Neoverse V1/V2, Apple M1); 24 + 6 + 1 of the 32 registers.
 * f32 throughout; every sum runs in the order of the other variants.
 */
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 128
#define ATTENTION_QV 6
#define ATTENTION_TILE_NAME g4v_attention_neon
#include "kernels/vec/attention_tile.h"
