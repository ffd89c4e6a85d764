/* gemm_avx512bf16.c - the AVX512_BF16 micro-kernel (vdpbf16ps, 12 x 32 tile) and its A packer.
 *
 * FAST mode with BF16 weights: B is the weight as stored (bf16 pairs), A is rounded to bf16
 * while packing (ties to even, in integer arithmetic so it matches g4v_f32_to_bf16 exactly,
 * subnormals and NaN included), and each vdpbf16ps adds the products of one (even, odd) k pair
 * into an f32 accumulator. 24 independent accumulators (12 rows x 2 zmm) cover the
 * instruction's latency x throughput on Zen 4/5 and recent Intel cores; A pairs are broadcast
 * straight from memory. The sum order differs from the sequential reference only within each
 * pair (and the instruction treats subnormal inputs as zero), so results agree with
 * g4v_gemm_ref to a few ulps of the sum of |products| (see tests/kernels/test_gemm.c).
 * Compiled with the AVX-512 flags plus -mavx512bf16 (the folder's flags,
 * src/kernels/kernels.cmake).
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/simd.h"
#include "bf16_round.h"
#include "kernels/x86_avx512/avx512.h"

#include <stdint.h>

enum { MR = 12, NR = 32, KG = 16, PAIRS = KG / 2 };

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst_,
                   const g4v_pack_opts *o) {
    uint16_t *dst = dst_;
    int full = klen / KG;
    __m512 lo = _mm512_set1_ps(o->lo), hi = _mm512_set1_ps(o->hi);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ldx;
        uint16_t *d = dst + (size_t)(r / MR) * MR * (size_t)kpad + (size_t)(r % MR) * KG;
        for (int g = 0; g < full; g++, d += MR * KG) {
            __m512 v = _mm512_loadu_ps(xr + (size_t)g * KG);
            if (o->clamp) v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
            _mm256_storeu_si256((__m256i *)d, _mm512_cvtepi32_epi16(bf16_bits(v)));
        }
    }
    g4v_pack_a_scalar(x, ldx, rows, full * KG, klen, kpad, MR, KG, 1, dst, o);
}

static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    const int32_t *a = a_; /* one bf16 pair per int32 */
    const uint32_t *b = b_;
    __m512 c[MR][2];
    G4V_UNROLL(12)
    for (int m = 0; m < MR; m++)
        c[m][0] = c[m][1] = _mm512_setzero_ps();
    if (acc_in) {
        G4V_UNROLL(12)
        for (int m = 0; m < MR; m++) {
            c[m][0] = _mm512_loadu_ps(acc_in + m * NR);
            c[m][1] = _mm512_loadu_ps(acc_in + m * NR + 16);
        }
    }
    for (int g = 0; g < kgroups; g++, a += MR * PAIRS) {
        G4V_UNROLL(8)
        for (int p = 0; p < PAIRS; p++, b += NR) {
            __m512bh b0 = g4v_as_bh(_mm512_loadu_si512(b));
            __m512bh b1 = g4v_as_bh(_mm512_loadu_si512(b + 16));
            G4V_UNROLL(12)
            for (int m = 0; m < MR; m++) {
                __m512bh av = g4v_as_bh(_mm512_set1_epi32(a[m * PAIRS + p]));
                c[m][0] = _mm512_dpbf16_ps(c[m][0], b0, av);
                c[m][1] = _mm512_dpbf16_ps(c[m][1], b1, av);
            }
        }
    }
    G4V_UNROLL(12)
    for (int m = 0; m < MR; m++)
        store_row(y + (size_t)m * ldy, c[m][0], c[m][1], e);
}

const g4v_gemm_kernel g4v_gemm_avx512_bf16dp = {.name = "avx512-bf16dp",
                                                .mr = MR,
                                                .nr = NR,
                                                .kg = KG,
                                                .a_bf16 = 1,
                                                .b_bf16 = 1,
                                                .pack_a = pack_a,
                                                .ukr = ukr};

/* In place (gemm_inplace.c): W tiles copied as they lie (bf16 pairs are the checkpoint's own
 * 32-bit words) into this kernel's A panels, X rounded and packed as its B pairs; each (m, n)
 * sum is avx512-bf16dp's, pair by pair, so the two give the same bits. */
static void pack_x(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    pack_x_pairs32(x, ldx, rows, klen, kpad, dst, o);
}

const g4v_gemm_kernel g4v_gemm_avx512_bf16dp_inplace = {.name = "avx512-bf16dp-inplace",
                                                        .mr = MR,
                                                        .nr = NR,
                                                        .kg = KG,
                                                        .a_bf16 = 1,
                                                        .b_bf16 = 1,
                                                        .pack_a = pack_a,
                                                        .ukr = ukr,
                                                        .inner = &g4v_gemm_avx512_bf16dp,
                                                        .pack_x = pack_x,
                                                        .store_t = store_t_12x32};
