/* geglu_avx2.c - the GeGLU row kernel (vec/geglu_row.h) on 8-float ymm vectors, AVX2 + FMA. */
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 256
#define GEGLU_ROW_NAME g4v_geglu_row_avx2
#include "kernels/vec/geglu_row.h"
