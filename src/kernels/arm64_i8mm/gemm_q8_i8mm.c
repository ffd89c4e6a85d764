/* gemm_q8_i8mm.c - the INT8 mode's ARMv8.6 matrix-multiply micro-kernel (SMMLA, 8 x 8 tile), for
 * Neoverse V1/V2/N2 (Graviton 3/4) and Apple M2 and later.
 *
 * SMMLA (smmla v.4s, v.16b, v.16b) adds a 2 x 8 by 8 x 2 int8 product into a 2 x 2 int32 block
 * (lanes r0c0, r0c1, r1c0, r1c1): 32 multiply-adds, twice SDOT's 16. Its operands are two rows
 * (or two columns) of 8 consecutive k codes each; the shared INT8 layouts (gemm_kernel.h) hold 4
 * k per group, so KG = 8 here and each pair of 4-groups is interleaved in registers by one zip
 * of 32-bit lanes (row 0's k0-3 and k4-7, row 1's k0-3 and k4-7). The 8 x 8 tile is 4 row pairs
 * x 4 column pairs = 16 accumulators, + 4 A and 4 B registers + 8 zipped: no spills. Signed x
 * signed like SDOT: A is packed signed (the scalar INT8 packer), no correction. The int32 sums
 * are exact, the dequantization is gemm_q8.h's, so results are portable-q8's bits. Compiled with
 * -march=armv8.6-a+i8mm without FMA contraction (src/kernels/kernels.cmake); only called where
 * HWCAP2_I8MM (or FEAT_I8MM on macOS) is reported.
 */
#include "kernels/arm64_neon/neon_gemm.h"
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/gemm_q8.h"

#include <stdint.h>

enum { MR = 8, NR = 8, KG = 8, G4 = 4 };

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    g4v_pack_a_q8_scalar(x, ldx, rows, klen, kpad, MR, 4, 0, dst, o);
}

/* Two 2 x 8 operands from two 4-k groups (lo: k0-3, hi: k4-7) of 4 rows or columns each. */
static inline void pairs(int8x16_t lo, int8x16_t hi, int8x16_t out[2]) {
    int32x4_t l = vreinterpretq_s32_s8(lo), h = vreinterpretq_s32_s8(hi);
    out[0] = vreinterpretq_s8_s32(vzip1q_s32(l, h)); /* rows 0, 1 */
    out[1] = vreinterpretq_s8_s32(vzip2q_s32(l, h)); /* rows 2, 3 */
}

static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    (void)acc_in; /* never chunked (gemm_kernel.h) */
    const int8_t *a = a_, *b = b_;
    int32x4_t c[MR / 2][NR / 2]; /* [row pair][column pair] */
    G4V_UNROLL(4)
    for (int i = 0; i < MR / 2; i++)
        G4V_UNROLL(4)
        for (int j = 0; j < NR / 2; j++)
            c[i][j] = vdupq_n_s32(0);
    for (int g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG) {
        int8x16_t ap[4], bp[4];
        pairs(vld1q_s8(a), vld1q_s8(a + MR * G4), ap);                   /* rows 0-3 */
        pairs(vld1q_s8(a + 16), vld1q_s8(a + MR * G4 + 16), ap + 2);     /* rows 4-7 */
        pairs(vld1q_s8(b), vld1q_s8(b + NR * G4), bp);                   /* columns 0-3 */
        pairs(vld1q_s8(b + 16), vld1q_s8(b + NR * G4 + 16), bp + 2);     /* columns 4-7 */
        G4V_UNROLL(4)
        for (int i = 0; i < MR / 2; i++)
            G4V_UNROLL(4)
            for (int j = 0; j < NR / 2; j++)
                c[i][j] = vmmlaq_s32(c[i][j], ap[i], bp[j]);
    }
    /* a and b now point at the scales behind the codes: (float)acc · (sa · sw), as gemm_q8.h */
    const float *sa = (const float *)(const void *)a, *sw = (const float *)(const void *)b;
    float32x4_t w[2] = {vld1q_f32(sw), vld1q_f32(sw + 4)};
    float32x4_t lo = vdupq_n_f32(e->lo), hi = vdupq_n_f32(e->hi);
    G4V_UNROLL(4)
    for (int i = 0; i < MR / 2; i++)
        G4V_UNROLL(2)
        for (int r = 0; r < 2; r++) {
            int m = 2 * i + r;
            float *yr = y + (size_t)m * ldy;
            G4V_UNROLL(2)
            for (int v = 0; v < 2; v++) {
                /* row r of column pairs 2v and 2v + 1: columns 4v..4v+3 */
                int64x2_t p = vreinterpretq_s64_s32(c[i][2 * v]);
                int64x2_t q = vreinterpretq_s64_s32(c[i][2 * v + 1]);
                int32x4_t s = vreinterpretq_s32_s64(r ? vzip2q_s64(p, q) : vzip1q_s64(p, q));
                float32x4_t t = vmulq_f32(vcvtq_f32_s32(s), vmulq_n_f32(w[v], sa[m]));
                /* lo <= hi; NaN stays NaN (vmaxq/vminq propagate it, as g4v_clampf keeps it) */
                if (e->clamp) t = vminq_f32(hi, vmaxq_f32(lo, t));
                if (e->accumulate) t = vaddq_f32(vld1q_f32(yr + 4 * v), t);
                vst1q_f32(yr + 4 * v, t);
            }
        }
}

const g4v_gemm_kernel g4v_gemm_neon_i8mm_q8 = {.name = "neon-i8mm-q8",
                                               .mr = MR,
                                               .nr = NR,
                                               .kg = KG,
                                               .int8 = 1,
                                               .pack_a = pack_a,
                                               .ukr = ukr};
