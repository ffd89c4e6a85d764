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
 * One pair at a time: its 3 B vectors stay in registers while the 8 rows go by, each row's
 * A vector loaded again per pair (24 accumulators + 3 + 1 of 32 registers: no spills).
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

/* p, but opaque to the optimiser: each pair reloads the rows' A vectors (a load is cheap)
 * instead of keeping all 8 live across the group, which would spill accumulators. */
static inline const bfloat16_t *reload(const bfloat16_t *p) {
    __asm__ volatile("" : "+r"(p)); /* volatile: two calls are never merged */
    return p;
}

static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    const bfloat16_t *a = a_;
    const bfloat16_t *b = b_; /* [pair][NR][2] */
    float32x4_t c[MR][3];
    neon_tile_start(c, acc_in);
    for (int g = 0; g < kgroups; g++, a += MR * KG, b += PAIRS * NR * 2) {
        G4V_UNROLL(4)
        for (int p = 0; p < PAIRS; p++) {
            const bfloat16_t *ap = reload(a), *bp = reload(b) + 2 * NR * p;
            bfloat16x8_t bv[3]; /* the pairs of columns 4v..4v+3 */
            G4V_UNROLL(3)
            for (int v = 0; v < 3; v++)
                bv[v] = vld1q_bf16(bp + 8 * v);
            G4V_UNROLL(8)
            for (int m = 0; m < MR; m++) {
                bfloat16x8_t av = vld1q_bf16(ap + m * KG); /* row m's four pairs */
                G4V_UNROLL(3)
                for (int v = 0; v < 3; v++)
                    c[m][v] = vbfdotq_laneq_f32(c[m][v], bv[v], av, p);
            }
        }
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
