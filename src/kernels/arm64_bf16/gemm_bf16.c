/* gemm_bf16.c - the ARMv8.6 BF16 micro-kernel (BFDOT, 8 x 12 tile) and its A packer, for FAST
 * mode with BF16 weights on Neoverse V1/V2/N2 (Graviton 3/4) and Apple M2 and later.
 *
 * B is the weight as stored (bf16 pairs: one q register holds the pairs of 4 columns); A is
 * rounded to bf16 while packing (ties to even, g4v_f32_to_bf16), KG = 8: one q register holds
 * four (even, odd) k pairs of one row. BFDOT by lane (bfdot v.4s, v.8h, v.2h[i]) adds the two
 * products of pair i into each of 4 f32 accumulators: the x86 vdpbf16ps's arithmetic and sum
 * order (pairs in k order; within a pair the instruction's own order), with its limits too: the
 * products and their sum are rounded to odd before the add and subnormal inputs and results
 * are flushed to zero (FEAT_EBF16 absent), so results agree with g4v_gemm_ref to a few ulps of the
 * sum of |products| (the bound tests/kernels/test_gemm.c checks for every a_bf16 kernel).
 * Two pairs at a time: their 6 B vectors stay in registers while the 8 rows go by
 * (24 accumulators + 6 + 1 of 32 registers).
 * Compiled with -march=armv8.2-a+bf16 (the folder's flags, src/kernels/kernels.cmake); only
 * called where HWCAP2_BF16 (or FEAT_BF16 on macOS) is reported.
 */
#include "kernels/arm64_neon/neon_gemm.h"
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"

#include <stdint.h>

enum { MR = NEON_MR, NR = NEON_NR, KG = 8, PAIRS = KG / 2 };

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    g4v_pack_a_scalar(x, ldx, rows, 0, klen, kpad, MR, KG, 1, dst, o);
}

/* Pairs p and p + 1 of the group (p even): B vectors bp (pair p) and bq (pair p + 1). */
#define TWO_PAIRS(p, bp, bq)                                                                       \
    G4V_UNROLL(8)                                                                                  \
    for (int m = 0; m < MR; m++) {                                                                 \
        bfloat16x8_t av = vld1q_bf16(a + m * KG);                                                  \
        G4V_UNROLL(3)                                                                              \
        for (int v = 0; v < 3; v++)                                                                \
            c[m][v] = vbfdotq_laneq_f32(c[m][v], bp[v], av, p);                                    \
        G4V_UNROLL(3)                                                                              \
        for (int v = 0; v < 3; v++)                                                                \
            c[m][v] = vbfdotq_laneq_f32(c[m][v], bq[v], av, p + 1);                                \
    }

static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    const bfloat16_t *a = a_;
    const bfloat16_t *b = b_; /* [pair][NR][2] */
    float32x4_t c[MR][3];
    neon_tile_start(c, acc_in);
    for (int g = 0; g < kgroups; g++, a += MR * KG, b += PAIRS * NR * 2) {
        bfloat16x8_t b0[3], b1[3], b2[3], b3[3];
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++) {
            b0[v] = vld1q_bf16(b + 8 * v);
            b1[v] = vld1q_bf16(b + 2 * NR + 8 * v);
        }
        TWO_PAIRS(0, b0, b1)
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++) {
            b2[v] = vld1q_bf16(b + 4 * NR + 8 * v);
            b3[v] = vld1q_bf16(b + 6 * NR + 8 * v);
        }
        TWO_PAIRS(2, b2, b3)
    }
    neon_tile_finish(c, y, ldy, e);
}

const g4v_gemm_kernel g4v_gemm_neon_bf16dp = {.name = "neon-bf16dp",
                                              .mr = MR,
                                              .nr = NR,
                                              .kg = KG,
                                              .a_bf16 = 1,
                                              .b_bf16 = 1,
                                              .pack_a = pack_a,
                                              .ukr = ukr};
