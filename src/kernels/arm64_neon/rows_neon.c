/* rows_neon.c - the RMSNorm, RoPE and residual-add row kernels (vec/rmsnorm_row.h, rope_row.h,
 * add_row.h) on 4-float NEON q registers: the AVX2 and AVX-512 variants' bits (RMSNorm folds
 * its 32 lane sums in the same order; RoPE and the add are the portable kernels' arithmetic,
 * which -ffp-contract=off on this folder keeps unfused). */
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 128
#define RMSNORM_ROW_NAME g4v_rmsnorm_row_neon
#define ROPE_ROW_NAME g4v_rope_row_neon
#define ADD_ROW_NAME g4v_add_row_neon
#include "kernels/vec/add_row.h"
#include "kernels/vec/rmsnorm_row.h"
#include "kernels/vec/rope_row.h"
