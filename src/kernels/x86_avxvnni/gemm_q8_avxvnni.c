/* gemm_q8_avxvnni.c - the INT8 mode's AVX-VNNI micro-kernel (VEX vpdpbusd on ymm, 6 x 16 tile)
 * for CPUs with AVX-VNNI but without AVX-512 (Intel Alder Lake and later client parts).
 *
 * The arithmetic of the AVX512-VNNI kernel on 8-lane vectors: A's codes stored + 128 (unsigned),
 * sums started from -128·Σ_k qw (the panel's corrections), so each sum is exactly Σ qa·qw; 12
 * accumulators plus 2 B vectors and the broadcast fill the 16 ymm registers. Results equal the
 * portable kernel's bit for bit. Built with the AVX2 flags plus -mavxvnni and without FMA
 * contraction (src/kernels/kernels.cmake).
 */
#include "kernels/dispatch.h"
#include "kernels/x86_avx2/q8_pack_avx2.h"

/* c += vpdpbusd(a, b): inline assembly natively (GCC 12 spills the accumulators around the
 * intrinsic, as in the AVX512-VNNI kernel); SIMDe has only the EVEX (AVX512-VNNI + VL) form,
 * same arithmetic. */
#ifdef G4V_SIMDE
#define Q8_DPBUSD(c, a, b) ((c) = _mm256_dpbusd_epi32((c), (a), (b)))
#else
#define Q8_DPBUSD(c, a, b) __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(c) : "x"(a), "x"(b))
#endif

#define Q8_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define Q8_DECL(m) __m256i c##m##_0 = z0, c##m##_1 = z1;
#define Q8_STEP(m)                                                                                 \
    {                                                                                              \
        __m256i av = _mm256_set1_epi32(a[m]);                                                      \
        Q8_DPBUSD(c##m##_0, av, b0);                                                               \
        Q8_DPBUSD(c##m##_1, av, b1);                                                               \
    }
#define Q8_STORE(m) q8_store_row_avx2(y + (size_t)(m)*ldy, c##m##_0, c##m##_1, sa[m], w0, w1, e);

enum { MR = 6, NR = 16, KG = 4 };

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    q8_pack_a_avx2(x, ldx, rows, klen, kpad, dst, o, MR, 1);
}

static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    (void)acc_in; /* never chunked (gemm_kernel.h) */
    const int32_t *a = a_, *b = b_;
    const float *sw = (const float *)(b + (size_t)kgroups * NR);
    const int32_t *corr = (const int32_t *)(sw + NR);
    __m256i z0 =
        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)corr));
    __m256i z1 =
        _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_loadu_si256((const __m256i *)(corr + 8)));
    Q8_ROWS(Q8_DECL)
    for (int g = 0; g < kgroups; g++, a += MR, b += NR) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 8));
        Q8_ROWS(Q8_STEP)
    }
    const float *sa = (const float *)a; /* the scales follow the codes */
    __m256 w0 = _mm256_loadu_ps(sw), w1 = _mm256_loadu_ps(sw + 8);
    Q8_ROWS(Q8_STORE)
}

const g4v_gemm_kernel g4v_gemm_avx_vnni_q8 = {.name = "avx-vnni-q8",
                                              .mr = MR,
                                              .nr = NR,
                                              .kg = KG,
                                              .int8 = 1,
                                              .a_u8 = 1,
                                              .pack_a = pack_a,
                                              .ukr = ukr};
