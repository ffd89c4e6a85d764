/* gemm_neon.c - NEON FMA micro-kernels (8 x 12 tile, 24 q-register accumulators) for every
 * ARMv8-A core, and their A packer.
 *
 * neon-f32: f32 B (weights stored F16/F32, widened once at load). neon-bf16w: BF16 weights kept
 * as stored (bf16 pairs) and widened in registers, one shift (even k) or mask (odd k) per vector.
 * Both take f32 A; FAST mode rounds A to bf16 while packing (the driver asks for it), so every
 * product of FAST mode is exact and each FMA rounds once, as the reference's multiply-then-add
 * does: the AVX2 and AVX-512 kernels' arithmetic, lane for lane. The sum for each output runs
 * k = 0, 1, ..., K-1.
 *
 * KG = 2: an A micro-panel holds the two k values of each row side by side, so one 64-bit load
 * gives a row's pair and the FMAs take their A operand by lane (fmla v.4s, v.4s, v.s[i]), which
 * costs no extra instruction; the 6 B vectors of the pair stay in registers while the 8 rows
 * go by (24 + 6 + 1 registers of 32).
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "neon_gemm.h"

#include <stdint.h>

enum { MR = NEON_MR, NR = NEON_NR, KG = 2 };

/* One float32x2 of A per row; the scalar packer already writes the pair layout contiguously. */
static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    g4v_pack_a_scalar(x, ldx, rows, 0, klen, kpad, MR, KG, 0, dst, o);
}

/* The 8 rows times one k pair: B of k (b0) then of k + 1 (b1), each three vectors of 4 columns. */
#define PAIR_STEP(b0, b1)                                                                          \
    G4V_UNROLL(8)                                                                                  \
    for (int m = 0; m < MR; m++) {                                                                 \
        float32x2_t av = vld1_f32(a + m * KG);                                                     \
        G4V_UNROLL(3)                                                                              \
        for (int v = 0; v < 3; v++)                                                                \
            c[m][v] = vfmaq_lane_f32(c[m][v], b0[v], av, 0);                                       \
        G4V_UNROLL(3)                                                                              \
        for (int v = 0; v < 3; v++)                                                                \
            c[m][v] = vfmaq_lane_f32(c[m][v], b1[v], av, 1);                                       \
    }

static void ukr_f32(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                    size_t ldy, const g4v_ukr_epi *e) {
    const float *a = a_, *b = b_;
    float32x4_t c[MR][3];
    neon_tile_start(c, acc_in);
    for (int g = 0; g < kgroups; g++, a += MR * KG, b += KG * NR) {
        float32x4_t b0[3], b1[3];
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++) {
            b0[v] = vld1q_f32(b + 4 * v);
            b1[v] = vld1q_f32(b + NR + 4 * v);
        }
        PAIR_STEP(b0, b1)
    }
    neon_tile_finish(c, y, ldy, e);
}

/* p, but opaque to the optimiser: the odd half of a pair reloads B instead of keeping the raw
 * words live through the even half, which would spill accumulators (32 registers only). */
static inline const uint32_t *reload(const uint32_t *p) {
    __asm__("" : "+r"(p));
    return p;
}

/* One k step: the 8 rows' A values (lane `lane` of each row's pair) times the three B vectors. */
#define K_STEP(bv, lane)                                                                           \
    G4V_UNROLL(8)                                                                                  \
    for (int m = 0; m < MR; m++) {                                                                 \
        float32x2_t av = vld1_f32(a + m * KG);                                                     \
        G4V_UNROLL(3)                                                                              \
        for (int v = 0; v < 3; v++)                                                                \
            c[m][v] = vfmaq_lane_f32(c[m][v], bv[v], av, lane);                                    \
    }

static void ukr_bf16w(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                      size_t ldy, const g4v_ukr_epi *e) {
    const float *a = a_;
    const uint32_t *b = b_;
    const uint32x4_t odd = vdupq_n_u32(0xffff0000u);
    float32x4_t c[MR][3];
    neon_tile_start(c, acc_in);
    for (int g = 0; g < kgroups; g++, a += MR * KG, b += NR) {
        float32x4_t bv[3]; /* W[n][k] is the low half of each word, W[n][k + 1] the high half */
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++)
            bv[v] = vreinterpretq_f32_u32(vshlq_n_u32(vld1q_u32(b + 4 * v), 16));
        K_STEP(bv, 0)
        const uint32_t *bo = reload(b);
        G4V_UNROLL(3)
        for (int v = 0; v < 3; v++)
            bv[v] = vreinterpretq_f32_u32(vandq_u32(vld1q_u32(bo + 4 * v), odd));
        K_STEP(bv, 1)
    }
    neon_tile_finish(c, y, ldy, e);
}

/* The tile every kernel of this file shares, for the descriptors below. */
#define TILE .mr = MR, .nr = NR, .kg = KG, .pack_a = pack_a

const g4v_gemm_kernel g4v_gemm_neon_f32 = {.name = "neon-f32", TILE, .ukr = ukr_f32};
const g4v_gemm_kernel g4v_gemm_neon_bf16w = {
    .name = "neon-bf16w", TILE, .b_bf16 = 1, .ukr = ukr_bf16w};
