/* gemm_q8_avx2.c - the INT8 mode's AVX2 micro-kernel (vpmaddubsw + vpmaddwd, 4 x 16 tile), for
 * CPUs without VNNI (Zen 3, Haswell..Skylake client).
 *
 * vpmaddubsw multiplies unsigned by signed bytes and adds adjacent pairs into int16 WITH
 * saturation. The sign trick keeps it exact: the unsigned operand is |qa| and the signed one is
 * qw with qa's sign applied (vpsignb, which also zeroes it where qa = 0), so each product is
 * qa·qw and a pair is at most 2·127² = 32258 < 32767 (codes are never -128, gemm_q8.h). vpmaddwd
 * by ones then widens pairs of pairs into the int32 sums. A is stored signed (a_u8 = 0), so no
 * correction is needed. Results equal the portable kernel's bit for bit (exact integer sums, the
 * same dequantization). Built without FMA contraction (src/kernels/kernels.cmake).
 */
#include "kernels/dispatch.h"
#include "q8_pack_avx2.h"

enum { MR = 4, NR = 16, KG = 4 };

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    q8_pack_a_avx2(x, ldx, rows, klen, kpad, dst, o, MR, 0);
}

static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    (void)acc_in; /* never chunked (gemm_kernel.h) */
    const int32_t *a = a_, *b = b_;
    __m256i c[MR][2];
    for (int m = 0; m < MR; m++)
        c[m][0] = c[m][1] = _mm256_setzero_si256();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int g = 0; g < kgroups; g++, a += MR, b += NR) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 8));
        G4V_UNROLL(4)
        for (int m = 0; m < MR; m++) {
            __m256i av = _mm256_set1_epi32(a[m]), ua = _mm256_abs_epi8(av);
            __m256i p0 = _mm256_maddubs_epi16(ua, _mm256_sign_epi8(b0, av));
            __m256i p1 = _mm256_maddubs_epi16(ua, _mm256_sign_epi8(b1, av));
            c[m][0] = _mm256_add_epi32(c[m][0], _mm256_madd_epi16(p0, ones));
            c[m][1] = _mm256_add_epi32(c[m][1], _mm256_madd_epi16(p1, ones));
        }
    }
    const float *sa = (const float *)a, *sw = (const float *)b; /* scales follow the codes */
    __m256 w0 = _mm256_loadu_ps(sw), w1 = _mm256_loadu_ps(sw + 8);
    for (int m = 0; m < MR; m++)
        q8_store_row_avx2(y + (size_t)m * ldy, c[m][0], c[m][1], sa[m], w0, w1, e);
}

const g4v_gemm_kernel g4v_gemm_avx2_q8 = {
    .name = "avx2-q8", .mr = MR, .nr = NR, .kg = KG, .int8 = 1, .pack_a = pack_a, .ukr = ukr};
