/* gemm_run.h - internal helpers of the GEMM driver. */
#ifndef G4V_KERNELS_GEMM_RUN_H
#define G4V_KERNELS_GEMM_RUN_H

#include <stddef.h>

/* This thread's scratch of at least `bytes` (64-byte aligned), or NULL if it cannot be had.
 * Valid until the next call on the same thread. */
void *g4v_gemm_scratch(size_t bytes);

#endif
