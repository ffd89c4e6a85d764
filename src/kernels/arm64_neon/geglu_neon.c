/* geglu_neon.c - the GeGLU row kernel (vec/geglu_row.h) on 4-float NEON q registers. Every
 * operation is per lane and the same IEEE operation as on x86 (the GELU's multiply-adds are
 * explicit FMAs), so it gives the AVX2 variant's bits. */
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 128
#define GEGLU_ROW_NAME g4v_geglu_row_neon
#include "kernels/vec/geglu_row.h"
