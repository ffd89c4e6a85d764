/* gemm_avx512.c - AVX-512F FMA micro-kernels (12 x 32 tile, 24 zmm accumulators) and their A
 * packer.
 *
 * avx512-f32: f32 B (weights stored F16/F32, widened once at load; PRECISE mode, or FAST mode
 * with non-bf16 weights). avx512-bf16w: BF16 weights kept as stored (bf16 pairs) and widened in
 * registers with one shift or mask per vector: PRECISE mode with BF16 weights, and FAST mode on
 * AVX-512 CPUs without AVX512_BF16. A is f32 (rounded to bf16 while packing in FAST mode, which
 * makes every product exact). 24 independent accumulator chains cover the FMA latency x
 * throughput of current cores; A values are broadcast straight from memory ({1to16} operands).
 * The sum for each output runs k = 0, 1, ..., K-1, one rounding per FMA.
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq (the folder's flags,
 * src/kernels/kernels.cmake).
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/simd.h"
#include "avx512.h"

#include <stdint.h>

enum { MR = 12, NR = 32, KG = 16 };

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst_,
                   const g4v_pack_opts *o) {
    float *dst = dst_;
    int full = klen / KG;
    __m512 lo = _mm512_set1_ps(o->lo), hi = _mm512_set1_ps(o->hi);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ldx;
        float *d = dst + (size_t)(r / MR) * MR * (size_t)kpad + (size_t)(r % MR) * KG;
        for (int g = 0; g < full; g++, d += MR * KG) {
            __m512 v = _mm512_loadu_ps(xr + (size_t)g * KG);
            if (o->clamp) v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
            if (o->round) v = round_bf16(v);
            _mm512_storeu_ps(d, v);
        }
    }
    g4v_pack_a_scalar(x, ldx, rows, full * KG, klen, kpad, MR, KG, 0, dst, o);
}

#define START                                                                                      \
    __m512 c[MR][2];                                                                               \
    G4V_UNROLL(12)                                                                                 \
    for (int m = 0; m < MR; m++)                                                                   \
        c[m][0] = c[m][1] = _mm512_setzero_ps();                                                   \
    if (acc_in) {                                                                                  \
        G4V_UNROLL(12)                                                                             \
        for (int m = 0; m < MR; m++) {                                                             \
            c[m][0] = _mm512_loadu_ps(acc_in + m * NR);                                            \
            c[m][1] = _mm512_loadu_ps(acc_in + m * NR + 16);                                       \
        }                                                                                          \
    }

#define FINISH                                                                                     \
    G4V_UNROLL(12)                                                                                 \
    for (int m = 0; m < MR; m++)                                                                   \
        store_row(y + (size_t)m * ldy, c[m][0], c[m][1], e);

/* One k step: A values a[m * KG + j] (broadcast) times the two B vectors. */
#define STEP(j, b0, b1)                                                                            \
    G4V_UNROLL(12)                                                                                 \
    for (int m = 0; m < MR; m++) {                                                                 \
        __m512 av = _mm512_set1_ps(a[m * KG + (j)]);                                               \
        c[m][0] = _mm512_fmadd_ps(av, b0, c[m][0]);                                                \
        c[m][1] = _mm512_fmadd_ps(av, b1, c[m][1]);                                                \
    }

static void ukr_f32(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                    size_t ldy, const g4v_ukr_epi *e) {
    const float *a = a_, *b = b_;
    START
    for (int g = 0; g < kgroups; g++, a += MR * KG) {
        G4V_UNROLL(16)
        for (int j = 0; j < KG; j++, b += NR) {
            __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
            STEP(j, b0, b1)
        }
    }
    FINISH
}

static void ukr_bf16w(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                      size_t ldy, const g4v_ukr_epi *e) {
    const float *a = a_;
    const uint32_t *b = b_;
    const __m512i odd = _mm512_set1_epi32((int)0xffff0000u);
    START
    for (int g = 0; g < kgroups; g++, a += MR * KG) {
        G4V_UNROLL(8)
        for (int p = 0; p < KG / 2; p++, b += NR) {
            __m512i w0 = _mm512_loadu_si512(b), w1 = _mm512_loadu_si512(b + 16);
            __m512 e0 = _mm512_castsi512_ps(_mm512_slli_epi32(w0, 16));
            __m512 e1 = _mm512_castsi512_ps(_mm512_slli_epi32(w1, 16));
            STEP(2 * p, e0, e1)
            __m512 o0 = _mm512_castsi512_ps(_mm512_and_si512(w0, odd));
            __m512 o1 = _mm512_castsi512_ps(_mm512_and_si512(w1, odd));
            STEP(2 * p + 1, o0, o1)
        }
    }
    FINISH
}

/* The tile every kernel of this file shares, for the descriptors below. */
#define TILE .mr = MR, .nr = NR, .kg = KG, .pack_a = pack_a

const g4v_gemm_kernel g4v_gemm_avx512_f32 = {.name = "avx512-f32", TILE, .ukr = ukr_f32};
const g4v_gemm_kernel g4v_gemm_avx512_bf16w = {
    .name = "avx512-bf16w", TILE, .b_bf16 = 1, .ukr = ukr_bf16w};

/* In place (gemm_inplace.c): BF16 weights read as stored, widened per W tile into avx512-f32's A
 * panels, X packed as its B panels; each (m, n) sum is avx512-bf16w's (one FMA per k in order,
 * fma(w, x) == fma(x, w)), so the two give the same bits. */
/* Full 32-row panels by 16 x 16 blocks (clamp, round, transpose in registers), K's tail and a
 * partial last panel by the scalar packer. */
static void pack_x(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst_,
                   const g4v_pack_opts *o) {
    float *dst = dst_;
    int panels = rows / NR, kfull = klen / 16 * 16;
    __m512 lo = _mm512_set1_ps(o->lo), hi = _mm512_set1_ps(o->hi);
    for (int p = 0; p < panels; p++) {
        float *d = dst + (size_t)p * NR * (size_t)kpad;
        for (int h = 0; h < 2; h++)
            for (int k0 = 0; k0 < kfull; k0 += 16) {
                __m512 v[16];
                G4V_UNROLL(16)
                for (int i = 0; i < 16; i++) {
                    v[i] = _mm512_loadu_ps(x + (size_t)(p * NR + h * 16 + i) * ldx + (size_t)k0);
                    if (o->clamp) v[i] = _mm512_min_ps(hi, _mm512_max_ps(lo, v[i]));
                    if (o->round) v[i] = round_bf16(v[i]);
                }
                transpose16(v);
                G4V_UNROLL(16)
                for (int j = 0; j < 16; j++)
                    _mm512_storeu_ps(d + (size_t)(k0 + j) * NR + h * 16, v[j]);
            }
    }
    g4v_pack_x_scalar(x, ldx, rows, kfull, klen, kpad, NR, 0, dst, o); /* the rest */
}

/* The W tile's full groups widened to f32 (zero-extend and shift). */
static void pack_w(const uint16_t *w, size_t ldw, int rows, int groups, float *dst) {
    for (int r = 0; r < rows; r++) {
        const uint16_t *src = w + (size_t)r * ldw;
        for (int g = 0; g < groups; g++) /* two halves of 8 (SIMDe lacks the 16-wide form) */
            for (int h = 0; h < KG; h += 8) {
                __m128i b = _mm_loadu_si128((const __m128i *)(src + g * KG + h));
                __m256i u = _mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16);
                _mm256_storeu_ps(dst + ((size_t)g * MR + (size_t)r) * KG + h,
                                 _mm256_castsi256_ps(u));
            }
    }
}

const g4v_gemm_kernel g4v_gemm_avx512_bf16w_inplace = {.name = "avx512-bf16w-inplace",
                                                       TILE,
                                                       .b_bf16 = 1,
                                                       .ukr = ukr_f32,
                                                       .inner = &g4v_gemm_avx512_f32,
                                                       .pack_x = pack_x,
                                                       .store_t = store_t_12x32,
                                                       .pack_w = pack_w};
