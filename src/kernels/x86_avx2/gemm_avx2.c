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

/* In place (gemm_inplace.c): as avx512-bf16w-inplace, over avx2-f32 (the sums of avx2-bf16w). */

/* r[0..7] transposed in place: lane i of r[j] becomes lane j of r[i] (24 shuffles). */
static inline void transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    G4V_UNROLL(4)
    for (int i = 0; i < 4; i++) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#define G4V_PD_(op, a, b) _mm256_castpd_ps(op(_mm256_castps_pd(a), _mm256_castps_pd(b)))
    /* u[4i + j], 128-bit half L: column 4L + j of rows 4i..4i+3 */
    G4V_UNROLL(2)
    for (int i = 0; i < 2; i++) {
        u[4 * i] = G4V_PD_(_mm256_unpacklo_pd, t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = G4V_PD_(_mm256_unpackhi_pd, t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = G4V_PD_(_mm256_unpacklo_pd, t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = G4V_PD_(_mm256_unpackhi_pd, t[4 * i + 1], t[4 * i + 3]);
    }
#undef G4V_PD_
    G4V_UNROLL(4)
    for (int j = 0; j < 4; j++) {
        r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
        r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
    }
}

/* Full 16-row panels by 8 x 8 blocks (clamp, round, transpose in registers), K's tail and a
 * partial last panel by the scalar packer. */
static void pack_x(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst_,
                   const g4v_pack_opts *o) {
    float *dst = dst_;
    int panels = rows / NR, kfull = klen / 8 * 8;
    __m256 lo = _mm256_set1_ps(o->lo), hi = _mm256_set1_ps(o->hi);
    for (int p = 0; p < panels; p++) {
        float *d = dst + (size_t)p * NR * (size_t)kpad;
        for (int h = 0; h < 2; h++)
            for (int k0 = 0; k0 < kfull; k0 += 8) {
                __m256 v[8];
                G4V_UNROLL(8)
                for (int i = 0; i < 8; i++) {
                    v[i] = _mm256_loadu_ps(x + (size_t)(p * NR + h * 8 + i) * ldx + (size_t)k0);
                    if (o->clamp) v[i] = _mm256_min_ps(hi, _mm256_max_ps(lo, v[i]));
                    if (o->round) v[i] = round_bf16(v[i]);
                }
                transpose8(v);
                G4V_UNROLL(8)
                for (int j = 0; j < 8; j++)
                    _mm256_storeu_ps(d + (size_t)(k0 + j) * NR + h * 8, v[j]);
            }
    }
    g4v_pack_x_scalar(x, ldx, rows, kfull, klen, kpad, NR, 0, dst, o); /* the rest */
}

/* The transposing store for full 6 x 16 tiles: each half of the columns transposed in registers
 * (rows 6 and 7 padding), then 6 floats per output row under a mask, with the epilogue. */
static void store_t(const float *tile, int nr, int rows, int cols, float *y, size_t ldy,
                    const g4v_ukr_epi *e) {
    if (rows != MR || cols != NR || nr != NR) {
        g4v_store_t_scalar(tile, nr, rows, cols, y, ldy, e);
        return;
    }
    const __m256i m6 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
    __m256 lo = _mm256_set1_ps(e->lo), hi = _mm256_set1_ps(e->hi);
    for (int h = 0; h < 2; h++) {
        __m256 v[8];
        G4V_UNROLL(6)
        for (int r = 0; r < MR; r++)
            v[r] = _mm256_loadu_ps(tile + r * NR + h * 8);
        v[6] = v[7] = _mm256_setzero_ps();
        transpose8(v);
        G4V_UNROLL(8)
        for (int c = 0; c < 8; c++) {
            float *d = y + (size_t)(h * 8 + c) * ldy;
            __m256 o = v[c];
            if (e->clamp) o = _mm256_min_ps(hi, _mm256_max_ps(lo, o));
            if (e->accumulate) o = _mm256_add_ps(_mm256_maskload_ps(d, m6), o);
            _mm256_maskstore_ps(d, m6, o);
        }
    }
}

/* The W tile's full groups widened to f32: 8 bf16 -> 8 f32 per zero-extend and shift. */
static void pack_w(const uint16_t *w, size_t ldw, int rows, int groups, float *dst) {
    for (int r = 0; r < rows; r++) {
        const uint16_t *src = w + (size_t)r * ldw;
        for (int g = 0; g < groups; g++) {
            __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + g * KG)));
            _mm256_storeu_ps(dst + ((size_t)g * MR + (size_t)r) * KG,
                             _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
        }
    }
}

const g4v_gemm_kernel g4v_gemm_avx2_bf16w_inplace = {.name = "avx2-bf16w-inplace",
                                                     TILE,
                                                     .b_bf16 = 1,
                                                     .ukr = ukr_f32,
                                                     .inner = &g4v_gemm_avx2_f32,
                                                     .pack_x = pack_x,
                                                     .store_t = store_t,
                                                     .pack_w = pack_w};
