/* attention_avx512.c - flash-style attention (vec/attention_tile.h) on 16-float zmm vectors with
 * AVX-512F, 48 queries per register tile. f32 throughout like the AVX2 variant: bf16 dot products
 * would round q, k and the probabilities, which the scale-1 logits amplify (docs/NUMERICS.md).
 */
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 512
#define ATTENTION_TILE_NAME g4v_attention_avx512
#include "kernels/vec/attention_tile.h"
