/* gemm_avx2.c - AVX2+FMA micro-kernels (6 x 16 tile, 12 ymm accumulators) and their A packer.
 *
 * avx2-f32: f32 B (weights stored F16/F32, widened once at load). avx2-bf16w: BF16 weights kept
 * as stored (bf16 pairs, 2 bytes each) and widened in registers with one shift or mask per
 * vector. Both take f32 A; FAST mode rounds A to bf16 while packing, so "bf16" math is emulated
 * exactly: a product of two bf16 values is exact in f32, so each FMA rounds once, as the
 * reference's multiply-then-add does. The sum for each output runs k = 0, 1, ..., K-1.
 * Compiled with -mavx2 -mfma (the folder's flags, src/kernels/kernels.cmake); only called when
 * CPUID reports both.
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/simd.h"

#include <stdint.h>

enum { MR = 6, NR = 16, KG = 8 };

/* Round each lane to the nearest bf16 (ties to even), as g4v_round_bf16; NaN stays a quiet NaN. */
static inline __m256 round_bf16(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i hi16 = _mm256_set1_epi32((int)0xffff0000u);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                     _mm256_set1_epi32(0x7f800000));
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    __m256i q = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
    return _mm256_castsi256_ps(_mm256_and_si256(_mm256_blendv_epi8(r, q, nan), hi16));
}

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst_,
                   const g4v_pack_opts *o) {
    float *dst = dst_;
    int full = klen / KG;
    __m256 lo = _mm256_set1_ps(o->lo), hi = _mm256_set1_ps(o->hi);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ldx;
        float *d = dst + (size_t)(r / MR) * MR * (size_t)kpad + (size_t)(r % MR) * KG;
        for (int g = 0; g < full; g++, d += MR * KG) {
            __m256 v = _mm256_loadu_ps(xr + (size_t)g * KG);
            if (o->clamp) v = _mm256_min_ps(hi, _mm256_max_ps(lo, v));
            if (o->round) v = round_bf16(v);
            _mm256_storeu_ps(d, v);
        }
    }
    g4v_pack_a_scalar(x, ldx, rows, full * KG, klen, kpad, MR, KG, 0, dst, o);
}

static inline void store_row(float *y, __m256 v0, __m256 v1, const g4v_ukr_epi *e) {
    if (e->clamp) {
        __m256 lo = _mm256_set1_ps(e->lo), hi = _mm256_set1_ps(e->hi);
        v0 = _mm256_min_ps(hi, _mm256_max_ps(lo, v0));
        v1 = _mm256_min_ps(hi, _mm256_max_ps(lo, v1));
    }
    if (e->accumulate) {
        v0 = _mm256_add_ps(_mm256_loadu_ps(y), v0);
        v1 = _mm256_add_ps(_mm256_loadu_ps(y + 8), v1);
    }
    _mm256_storeu_ps(y, v0);
    _mm256_storeu_ps(y + 8, v1);
}

#define START                                                                                      \
    __m256 c[MR][2];                                                                               \
    G4V_UNROLL(6)                                                                                  \
    for (int m = 0; m < MR; m++)                                                                   \
        c[m][0] = c[m][1] = _mm256_setzero_ps();                                                   \
    if (acc_in) {                                                                                  \
        G4V_UNROLL(6)                                                                              \
        for (int m = 0; m < MR; m++) {                                                             \
            c[m][0] = _mm256_loadu_ps(acc_in + m * NR);                                            \
            c[m][1] = _mm256_loadu_ps(acc_in + m * NR + 8);                                        \
        }                                                                                          \
    }

#define FINISH                                                                                     \
    G4V_UNROLL(6)                                                                                  \
    for (int m = 0; m < MR; m++)                                                                   \
        store_row(y + (size_t)m * ldy, c[m][0], c[m][1], e);

/* One k step: the MR broadcasts of a[m * KG + j] times the two B vectors. */
#define STEP(j, b0, b1)                                                                            \
    G4V_UNROLL(6)                                                                                  \
    for (int m = 0; m < MR; m++) {                                                                 \
        __m256 av = _mm256_broadcast_ss(a + m * KG + (j));                                         \
        c[m][0] = _mm256_fmadd_ps(av, b0, c[m][0]);                                                \
        c[m][1] = _mm256_fmadd_ps(av, b1, c[m][1]);                                                \
    }

static void ukr_f32(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                    size_t ldy, const g4v_ukr_epi *e) {
    const float *a = a_, *b = b_;
    START
    for (int g = 0; g < kgroups; g++, a += MR * KG) {
        G4V_UNROLL(8)
        for (int j = 0; j < KG; j++, b += NR) {
            __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
            STEP(j, b0, b1)
        }
    }
    FINISH
}

/* p, but opaque to the optimiser: the odd half of a pair step reloads B (folded into vpand)
 * instead of keeping the raw vectors live, which would spill accumulators (16 ymm only). */
static inline const uint32_t *reload(const uint32_t *p) {
    __asm__("" : "+r"(p));
    return p;
}

static void ukr_bf16w(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                      size_t ldy, const g4v_ukr_epi *e) {
    const float *a = a_;
    const uint32_t *b = b_;
    const __m256i odd = _mm256_set1_epi32((int)0xffff0000u);
    START
    for (int g = 0; g < kgroups; g++, a += MR * KG) {
        G4V_UNROLL(4)
        for (int p = 0; p < KG / 2; p++, b += NR) {
            __m256 e0 =
                _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)b), 16));
            __m256 e1 = _mm256_castsi256_ps(
                _mm256_slli_epi32(_mm256_loadu_si256((const __m256i *)(b + 8)), 16));
            STEP(2 * p, e0, e1)
            const uint32_t *bo = reload(b);
            __m256 o0 =
                _mm256_castsi256_ps(_mm256_and_si256(_mm256_loadu_si256((const __m256i *)bo), odd));
            __m256 o1 = _mm256_castsi256_ps(
                _mm256_and_si256(_mm256_loadu_si256((const __m256i *)(bo + 8)), odd));
            STEP(2 * p + 1, o0, o1)
        }
    }
    FINISH
}

/* The tile every kernel of this file shares, for the descriptors below. */
#define TILE .mr = MR, .nr = NR, .kg = KG, .pack_a = pack_a

const g4v_gemm_kernel g4v_gemm_avx2_f32 = {.name = "avx2-f32", TILE, .ukr = ukr_f32};
const g4v_gemm_kernel g4v_gemm_avx2_bf16w = {
    .name = "avx2-bf16w", TILE, .b_bf16 = 1, .ukr = ukr_bf16w};
