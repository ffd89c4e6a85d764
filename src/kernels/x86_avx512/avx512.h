/* avx512.h - zmm helpers shared by the AVX-512 kernels (this folder and x86_avx512bf16/, whose
 * flags include these): f32 -> bf16 rounding, the GEMM micro-kernels' row store, and for the
 * in-place kernels (gemm_kernel.h) the 16 x 16 transpose, the transposing tile store and the X
 * packer into bf16 pairs. Integer rounding, so it matches g4v_round_bf16 / g4v_f32_to_bf16
 * (base/dtype.h) bit for bit, subnormals and NaN included, emulated (SIMDe) or native. */
#ifndef G4V_KERNELS_AVX512_H
#define G4V_KERNELS_AVX512_H

#include "kernels/gemm_kernel.h"
#include "kernels/simd.h"

#include <math.h>

/* Each lane rounded to the nearest bf16 (ties to even; NaN -> quiet NaN), the bf16 bits in its
 * high 16 bits and garbage in the low 16. */
static inline __m512i bf16_round_hi(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    return _mm512_mask_blend_epi32(nan, r, _mm512_or_si512(u, _mm512_set1_epi32(0x00400000)));
}

/* The bf16 bits of each lane in its low 16 bits. */
static inline __m512i bf16_bits(__m512 v) {
    return _mm512_srli_epi32(bf16_round_hi(v), 16);
}

/* Each lane rounded to bf16 and kept as f32 (g4v_round_bf16). */
static inline __m512 round_bf16(__m512 v) {
    return _mm512_castsi512_ps(
        _mm512_and_si512(bf16_round_hi(v), _mm512_set1_epi32((int)0xffff0000u)));
}

/* One row of a 32-wide GEMM tile (v0, v1) to y: clamped, added to y, as the epilogue says. */
static inline void store_row(float *y, __m512 v0, __m512 v1, const g4v_ukr_epi *e) {
    if (e->clamp) {
        __m512 lo = _mm512_set1_ps(e->lo), hi = _mm512_set1_ps(e->hi);
        v0 = _mm512_min_ps(hi, _mm512_max_ps(lo, v0));
        v1 = _mm512_min_ps(hi, _mm512_max_ps(lo, v1));
    }
    if (e->accumulate) {
        v0 = _mm512_add_ps(_mm512_loadu_ps(y), v0);
        v1 = _mm512_add_ps(_mm512_loadu_ps(y + 16), v1);
    }
    _mm512_storeu_ps(y, v0);
    _mm512_storeu_ps(y + 16, v1);
}

/* r[0..15] transposed in place: lane i of r[j] becomes lane j of r[i] (64 shuffles). */
static inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    G4V_UNROLL(8)
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
#define G4V_PD_(op, a, b) _mm512_castpd_ps(op(_mm512_castps_pd(a), _mm512_castps_pd(b)))
    /* u[4i + j], 128-bit chunk L: column 4L + j of rows 4i..4i+3 */
    __m512 u[16];
    G4V_UNROLL(4)
    for (int i = 0; i < 4; i++) {
        u[4 * i] = G4V_PD_(_mm512_unpacklo_pd, t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = G4V_PD_(_mm512_unpackhi_pd, t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = G4V_PD_(_mm512_unpacklo_pd, t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = G4V_PD_(_mm512_unpackhi_pd, t[4 * i + 1], t[4 * i + 3]);
    }
#undef G4V_PD_
    /* 128-bit lane moves (the integer form: SIMDe lacks the float one; the same bits) */
#define G4V_LANES_(a, b, imm)                                                                      \
    _mm512_castsi512_ps(_mm512_shuffle_i32x4(_mm512_castps_si512(a), _mm512_castps_si512(b), imm))
    G4V_UNROLL(4)
    for (int j = 0; j < 4; j++) {
        __m512 s0 = G4V_LANES_(u[j], u[4 + j], 0x44);
        __m512 s1 = G4V_LANES_(u[j], u[4 + j], 0xee);
        __m512 s2 = G4V_LANES_(u[8 + j], u[12 + j], 0x44);
        __m512 s3 = G4V_LANES_(u[8 + j], u[12 + j], 0xee);
        r[j] = G4V_LANES_(s0, s2, 0x88);
        r[4 + j] = G4V_LANES_(s0, s2, 0xdd);
        r[8 + j] = G4V_LANES_(s1, s3, 0x88);
        r[12 + j] = G4V_LANES_(s1, s3, 0xdd);
    }
#undef G4V_LANES_
}

/* The in-place kernels' transposing store (gemm_kernel.h g4v_store_t_fn) for 12 x 32 tiles:
 * each half of the tile's columns transposed in registers (rows 12..15 padding), then 12
 * consecutive floats per output row under a mask, with the epilogue. Partial tiles go scalar. */
static inline void store_t_12x32(const float *tile, int nr, int rows, int cols, float *y,
                                 size_t ldy, const g4v_ukr_epi *e) {
    if (rows != 12 || cols != 32 || nr != 32) {
        g4v_store_t_scalar(tile, nr, rows, cols, y, ldy, e);
        return;
    }
    const __mmask16 m12 = 0x0fff;
    __m512 lo = _mm512_set1_ps(e->lo), hi = _mm512_set1_ps(e->hi);
    for (int h = 0; h < 2; h++) {
        __m512 v[16];
        G4V_UNROLL(12)
        for (int r = 0; r < 12; r++)
            v[r] = _mm512_loadu_ps(tile + r * 32 + h * 16);
        v[12] = v[13] = v[14] = v[15] = _mm512_setzero_ps();
        transpose16(v);
        G4V_UNROLL(16)
        for (int c = 0; c < 16; c++) {
            float *d = y + (size_t)(h * 16 + c) * ldy;
            __m512 o = v[c];
            if (e->clamp) o = _mm512_min_ps(hi, _mm512_max_ps(lo, o));
#ifdef G4V_SIMDE /* SIMDe 0.7 has no masked float load or store: 8 + 4 */
            (void)m12;
            __m256 o8 = _mm512_castps512_ps256(o);
            __m128 o4 = _mm512_extractf32x4_ps(o, 2);
            if (e->accumulate) {
                o8 = _mm256_add_ps(_mm256_loadu_ps(d), o8);
                o4 = _mm_add_ps(_mm_loadu_ps(d + 8), o4);
            }
            _mm256_storeu_ps(d, o8);
            _mm_storeu_ps(d + 8, o4);
#else
            if (e->accumulate) o = _mm512_add_ps(_mm512_maskz_loadu_ps(m12, d), o);
            _mm512_mask_storeu_ps(d, m12, o);
#endif
        }
    }
}

/* The in-place kernels' X packer into bf16 pair panels of 32 rows (gemm_kernel.h
 * g4v_pack_x_fn, pairs; FAST mode: X rounded). Full panels by blocks of 16 rows x 32 k: each
 * row's 32 values clamped, rounded and narrowed to 16 pair words, the 16 x 16 words transposed
 * in registers; K's tail and a partial last panel by the scalar packer. */
static inline void pack_x_pairs32(const float *x, size_t ldx, int rows, int klen, int kpad,
                                  void *dst_, const g4v_pack_opts *o) {
    uint32_t *dst = dst_;
    enum { PNR = 32 };
    int panels = rows / PNR, kfull = klen / 32 * 32;
    __m512 lo = _mm512_set1_ps(o->lo), hi = _mm512_set1_ps(o->hi);
    for (int p = 0; p < panels; p++) {
        uint32_t *d = dst + (size_t)p * PNR * (size_t)(kpad / 2);
        for (int h = 0; h < 2; h++)
            for (int k0 = 0; k0 < kfull; k0 += 32) {
                __m512 v[16];
                G4V_UNROLL(16)
                for (int i = 0; i < 16; i++) {
                    const float *xr = x + (size_t)(p * PNR + h * 16 + i) * ldx + (size_t)k0;
                    __m512 a = _mm512_loadu_ps(xr), b = _mm512_loadu_ps(xr + 16);
                    if (o->clamp) {
                        a = _mm512_min_ps(hi, _mm512_max_ps(lo, a));
                        b = _mm512_min_ps(hi, _mm512_max_ps(lo, b));
                    }
                    __m512i w = _mm512_inserti64x4(
                        _mm512_castsi256_si512(_mm512_cvtepi32_epi16(bf16_bits(a))),
                        _mm512_cvtepi32_epi16(bf16_bits(b)), 1);
                    v[i] = _mm512_castsi512_ps(w);
                }
                transpose16(v);
                G4V_UNROLL(16)
                for (int j = 0; j < 16; j++)
                    _mm512_storeu_ps((float *)(d + (size_t)(k0 / 2 + j) * PNR + h * 16), v[j]);
            }
    }
    g4v_pack_x_scalar(x, ldx, rows, kfull, klen, kpad, PNR, 1, dst, o); /* the rest */
}

/* a * b + c with one rounding, lane by lane (the blocked INT8 kernels' block step, gemm_q8.h's
 * g4v_q8b_step). SIMDe emulates vfmadd as a multiply and an add (two roundings) where the build
 * has no FMA, so the emulated build fuses each lane with fmaf. */
#ifdef G4V_SIMDE
static inline __m512 fmadd_exact(__m512 a, __m512 b, __m512 c) {
    float x[16], y[16], z[16];
    _mm512_storeu_ps(x, a);
    _mm512_storeu_ps(y, b);
    _mm512_storeu_ps(z, c);
    for (int i = 0; i < 16; i++)
        z[i] = fmaf(x[i], y[i], z[i]);
    return _mm512_loadu_ps(z);
}
#else
#define fmadd_exact _mm512_fmadd_ps
#endif

#endif
