/* rows_avx512.c - the RMSNorm, RoPE and residual-add row kernels (vec/rmsnorm_row.h,
 * rope_row.h, add_row.h) on 16-float zmm vectors, AVX-512F: the AVX2 variants' bits with half the
 * instructions. */
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 512
#define RMSNORM_ROW_NAME g4v_rmsnorm_row_avx512
#define ROPE_ROW_NAME g4v_rope_row_avx512
#define ADD_ROW_NAME g4v_add_row_avx512
#include "kernels/vec/add_row.h"
#include "kernels/vec/rmsnorm_row.h"
#include "kernels/vec/rope_row.h"
