/* gemm_q8_dotprod.c - the INT8 mode's ARMv8.2 dot-product micro-kernel (SDOT, 8 x 12 tile), for
 * Neoverse N1/V1/V2/N2 (Graviton 2/3/4), Cortex-A55/A76 and later, Apple M1 and later.
 *
 * SDOT by lane (sdot v.4s, v.16b, v.4b[i]) adds, into each of 4 int32 accumulators (4 columns),
 * the 4 products of one column's 4 consecutive k codes with row i's 4 codes: one q register of B
 * is a group of 4 columns ([group][NR][4], gemm_kernel.h) and one q register of A is a group of
 * 4 rows, so an 8 x 12 tile takes 3 B + 2 A registers and 24 SDOTs per group of 4 k (24
 * accumulators + 5 of 32 registers: no spills). Both operands are signed, so A is packed
 * signed (a_u8 = 0): no +128 shift and no correction, unlike vpdpbusd on x86. The int32 sums are
 * exact (gemm_q8.h), and the dequantization is the same f32 multiplies in the same order as the
 * portable kernel, so results are its bits. A is packed by the scalar INT8 packer (the same codes
 * by construction). Compiled with -march=armv8.2-a+dotprod and without FMA contraction (the
 * folder's flags, src/kernels/kernels.cmake); only called where HWCAP_ASIMDDP (or FEAT_DotProd
 * on macOS) is reported.
 */
#include "kernels/arm64_neon/neon_gemm.h"
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/gemm_q8.h"

#include <stdint.h>

enum { MR = NEON_MR, NR = NEON_NR, KG = 4 };

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    g4v_pack_a_q8_scalar(x, ldx, rows, klen, kpad, MR, 4, 0, dst, o);
}

static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    (void)acc_in; /* never chunked (gemm_kernel.h) */
    const int8_t *a = a_, *b = b_;
    int32x4_t c[MR][3];
    G4V_UNROLL(8)
    for (int m = 0; m < MR; m++)
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++)
            c[m][v] = vdupq_n_s32(0);
    for (int g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG) {
        int8x16_t bv[3], av[2]; /* columns 4v..4v+3; rows 0..3 and 4..7 */
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++)
            bv[v] = vld1q_s8(b + 16 * v);
        av[0] = vld1q_s8(a);
        av[1] = vld1q_s8(a + 16);
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++) {
            c[0][v] = vdotq_laneq_s32(c[0][v], bv[v], av[0], 0);
            c[1][v] = vdotq_laneq_s32(c[1][v], bv[v], av[0], 1);
            c[2][v] = vdotq_laneq_s32(c[2][v], bv[v], av[0], 2);
            c[3][v] = vdotq_laneq_s32(c[3][v], bv[v], av[0], 3);
            c[4][v] = vdotq_laneq_s32(c[4][v], bv[v], av[1], 0);
            c[5][v] = vdotq_laneq_s32(c[5][v], bv[v], av[1], 1);
            c[6][v] = vdotq_laneq_s32(c[6][v], bv[v], av[1], 2);
            c[7][v] = vdotq_laneq_s32(c[7][v], bv[v], av[1], 3);
        }
    }
    /* a and b now point at the scales behind the codes: (float)acc · (sa · sw), as gemm_q8.h */
    const float *sa = (const float *)(const void *)a, *sw = (const float *)(const void *)b;
    float32x4_t w[3], f[MR][3];
    G4V_UNROLL(3)
    for (int v = 0; v < 3; v++)
        w[v] = vld1q_f32(sw + 4 * v);
    G4V_UNROLL(8)
    for (int m = 0; m < MR; m++)
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++)
            f[m][v] = vmulq_f32(vcvtq_f32_s32(c[m][v]), vmulq_n_f32(w[v], sa[m]));
    neon_tile_finish(f, y, ldy, e);
}

const g4v_gemm_kernel g4v_gemm_neon_dotprod_q8 = {.name = "neon-dotprod-q8",
                                                  .mr = MR,
                                                  .nr = NR,
                                                  .kg = KG,
                                                  .int8 = 1,
                                                  .pack_a = pack_a,
                                                  .ukr = ukr};
