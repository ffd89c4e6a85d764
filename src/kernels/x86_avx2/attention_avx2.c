/* attention_avx2.c - flash-style attention (vec/attention_tile.h) on 8-float ymm vectors with
 * AVX2 + FMA, 24 queries per register tile.
 */
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 256
#define ATTENTION_TILE_NAME g4v_attention_avx2
#include "kernels/vec/attention_tile.h"
