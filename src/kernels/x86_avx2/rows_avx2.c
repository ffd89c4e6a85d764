/* rows_avx2.c - the RMSNorm, RoPE and residual-add row kernels (vec/rmsnorm_row.h, rope_row.h,
 * add_row.h) on 8-float ymm vectors, AVX2 + FMA. */
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 256
#define RMSNORM_ROW_NAME g4v_rmsnorm_row_avx2
#define ROPE_ROW_NAME g4v_rope_row_avx2
#define ADD_ROW_NAME g4v_add_row_avx2
#include "kernels/vec/add_row.h"
#include "kernels/vec/rmsnorm_row.h"
#include "kernels/vec/rope_row.h"
