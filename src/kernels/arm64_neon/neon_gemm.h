/* neon_gemm.h - what the ARM64 GEMM micro-kernels share (this folder, arm64_bf16/ and
 * arm64_dotprod/, whose flags include NEON): the 8 x 12 tile, its accumulators and its row
 * store. 24 q-register accumulators (8 rows x 3 vectors of 4 columns) are enough independent
 * FMA chains for four 128-bit FMA pipes of latency 4 (Neoverse V1/V2, Apple M1), and leave 8
 * registers for B and A.
 */
#ifndef G4V_KERNELS_ARM64_NEON_GEMM_H
#define G4V_KERNELS_ARM64_NEON_GEMM_H

#include "kernels/gemm_kernel.h"

#include <arm_neon.h>

enum { NEON_MR = 8, NEON_NR = 12 };

#define G4V_PRAGMA(x) _Pragma(#x)
#define G4V_UNROLL(n) G4V_PRAGMA(GCC unroll n)

/* c = acc_in (an MR x NR row-major tile) or zero. */
static inline void neon_tile_start(float32x4_t c[NEON_MR][3], const float *acc_in) {
    G4V_UNROLL(8)
    for (int m = 0; m < NEON_MR; m++)
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++)
            c[m][v] = acc_in ? vld1q_f32(acc_in + m * NEON_NR + 4 * v) : vdupq_n_f32(0.0f);
}

/* The tile to y: each row clamped, added to y, as the epilogue says. */
static inline void neon_tile_finish(float32x4_t c[NEON_MR][3], float *y, size_t ldy,
                                    const g4v_ukr_epi *e) {
    float32x4_t lo = vdupq_n_f32(e->lo), hi = vdupq_n_f32(e->hi);
    G4V_UNROLL(8)
    for (int m = 0; m < NEON_MR; m++) {
        float *yr = y + (size_t)m * ldy;
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++) {
            float32x4_t t = c[m][v];
            /* lo <= hi; NaN stays NaN (vmaxq/vminq propagate it, as g4v_clampf keeps it) */
            if (e->clamp) t = vminq_f32(hi, vmaxq_f32(lo, t));
            if (e->accumulate) t = vaddq_f32(vld1q_f32(yr + 4 * v), t);
            vst1q_f32(yr + 4 * v, t);
        }
    }
}

#endif
