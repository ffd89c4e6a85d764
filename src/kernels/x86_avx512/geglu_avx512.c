/* geglu_avx512.c - the GeGLU row kernel (vec/geglu_row.h) on 16-float zmm vectors, AVX-512F. Every
 * operation is per lane, so it gives the AVX2 variant's bits with half the instructions. */
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 512
#define GEGLU_ROW_NAME g4v_geglu_row_avx512
#include "kernels/vec/geglu_row.h"
