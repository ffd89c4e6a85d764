/* gemm_portable.c - the portable micro-kernels (plain C, any CPU) and their A packer (the scalar
 * one every ISA shares, gemm_pack.c).
 *
 * Two kernels: B as f32 (weights stored F16/F32) and B as bf16 pairs (BF16 weights kept at 2
 * bytes). Both sum k = 0, 1, ..., K-1 with a separate multiply and add, exactly like
 * g4v_gemm_ref, so on every CPU they are bit-identical to it (this file is compiled with
 * -ffp-contract=off so no compiler fuses them). Speed is secondary here: it is the fallback for
 * CPUs without AVX2.
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"

#include <stdint.h>
#include <string.h>

enum { MR = 4, NR = 16, KG = 2 };

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    g4v_pack_a_scalar(x, ldx, rows, 0, klen, kpad, MR, KG, 0, dst, o);
}

static void finish(float acc[MR][NR], float *y, size_t ldy, const g4v_ukr_epi *e) {
    for (int m = 0; m < MR; m++)
        for (int n = 0; n < NR; n++) {
            float v = e->clamp ? g4v_clampf(acc[m][n], e->lo, e->hi) : acc[m][n];
            float *d = y + (size_t)m * ldy + n;
            *d = e->accumulate ? *d + v : v;
        }
}

static void start(float acc[MR][NR], const float *acc_in) {
    if (acc_in)
        memcpy(acc, acc_in, sizeof(float) * MR * NR);
    else
        memset(acc, 0, sizeof(float) * MR * NR);
}

static void ukr_f32(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                    size_t ldy, const g4v_ukr_epi *e) {
    const float *a = a_, *b = b_;
    float acc[MR][NR];
    start(acc, acc_in);
    for (int g = 0; g < kgroups; g++, a += MR * KG)
        for (int j = 0; j < KG; j++, b += NR)
            for (int m = 0; m < MR; m++) {
                float av = a[m * KG + j];
                for (int n = 0; n < NR; n++)
                    acc[m][n] += av * b[n];
            }
    finish(acc, y, ldy, e);
}

static void ukr_bf16w(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                      size_t ldy, const g4v_ukr_epi *e) {
    const float *a = a_;
    const uint32_t *b = b_;
    float acc[MR][NR];
    start(acc, acc_in);
    for (int g = 0; g < kgroups; g++, a += MR * KG, b += NR)
        for (int j = 0; j < 2; j++)
            for (int m = 0; m < MR; m++) {
                float av = a[m * KG + j];
                for (int n = 0; n < NR; n++)
                    acc[m][n] += av * g4v_bf16_to_f32((uint16_t)(b[n] >> (16 * j)));
            }
    finish(acc, y, ldy, e);
}

/* The tile every kernel of this file shares, for the descriptors below. */
#define TILE .mr = MR, .nr = NR, .kg = KG, .pack_a = pack_a

const g4v_gemm_kernel g4v_gemm_portable_f32 = {.name = "portable-f32", TILE, .ukr = ukr_f32};
const g4v_gemm_kernel g4v_gemm_portable_bf16w = {
    .name = "portable-bf16w", TILE, .b_bf16 = 1, .ukr = ukr_bf16w};

/* In place (gemm_inplace.c): BF16 weights read as stored, X packed as portable-f32's B panels;
 * the products and sums are portable-bf16w's, k in order with a separate multiply and add. */
static void pack_x(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    g4v_pack_x_scalar(x, ldx, rows, 0, klen, kpad, NR, 0, dst, o);
}

const g4v_gemm_kernel g4v_gemm_portable_bf16w_inplace = {.name = "portable-bf16w-inplace",
                                                         TILE,
                                                         .b_bf16 = 1,
                                                         .ukr = ukr_f32,
                                                         .inner = &g4v_gemm_portable_f32,
                                                         .pack_x = pack_x};
