/* gemm_amx_q8.c - the INT8 modes' AMX-INT8 micro-kernels (TDPBSSD on a 32 x 32 output block):
 * per channel (INT8) and per 32-block (INT8_BLOCKS), gemm_q8.h's arithmetic, so their results
 * equal the portable and VNNI kernels' bit for bit.
 *
 * TDPBSSD multiplies signed bytes by signed bytes, four per int32 lane, and sums exactly
 * (wrapping, which 127·127·K < 2^31 never reaches for K <= G4V_Q8_MAX_K): A's codes are packed
 * signed (a_u8 = 0), so no +128 correction is needed.
 *   INT8: KG = 64, a group is 32 rows x 64 codes = two A tiles at stride 64; the B panel's
 *     [kpad / 4][32][4] codes are, per 64 k, 16 rows of 128 bytes = two B tiles at stride 128.
 *     The int32 sums stay in the C tiles over the whole K, then (float)acc · (sa · sw).
 *   INT8_BLOCKS: KG = 32, each block is one instruction per C tile (A tiles of 16 rows x 32
 *     codes, B tiles of 8 rows x 64 bytes), its int32 sums dequantized at once and added in
 *     block order: y = fma((float)acc, sa · sw, y), as gemm_q8.h's g4v_q8b_step.
 * The packers are the portable ones with this layout's group width. Tiles as in gemm_amx.c
 * (0-3 C, 4-5 A, 6-7 B; the per-channel kernel's configuration is the bf16 kernel's); released
 * by the driver at the end of each call (release).
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/gemm_q8.h"
#include "kernels/simd.h"
#include "kernels/x86_avx512/avx512.h"

#include "amx_block.h"

#include <math.h>
#include <stdint.h>

#ifndef AMX_VARIANT
#define AMX_VARIANT(x) x
#endif

enum { MR = 32, NR = 32, KG = 64, BK = G4V_Q8_BLOCK };

static const g4v_tile_config q8_cfg = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};
/* Blocks of 32 k: A tiles 16 x 32 codes, B tiles 8 rows (32 k / 4) x 16 columns of 4 codes. */
static const g4v_tile_config q8b_cfg = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 32, 32, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 8, 8},
};

/* ---- INT8, per channel ---- */

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    g4v_pack_a_q8_scalar(x, ldx, rows, klen, kpad, MR, KG, 0, dst, o);
}

static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    (void)acc_in; /* never chunked (gemm_kernel.h) */
    const unsigned char *a = a_, *b = b_;
    size_t kpad = (size_t)kgroups * KG;
    const float *sa = (const float *)(a + MR * kpad); /* the scales follow the codes */
    const float *sw = (const float *)(b + NR * kpad);
    g4v_tile_configure(&q8_cfg);
    AMX_BLOCK_ZERO();
    for (int g = 0; g < kgroups; g++, a += MR * KG, b += KG / 4 * NR * 4) {
        TILE_LOAD(4, a, KG);
        TILE_LOAD(5, a + 16 * KG, KG);
        TILE_LOAD(6, b, NR * 4);
        TILE_LOAD(7, b + 64, NR * 4);
        TILE_DPBSSD(0, 4, 6);
        TILE_DPBSSD(1, 4, 7);
        TILE_DPBSSD(2, 5, 6);
        TILE_DPBSSD(3, 5, 7);
    }
    _Alignas(64) int32_t c[MR * NR];
    AMX_BLOCK_STORE(c, NR);
    __m512 w0 = _mm512_loadu_ps(sw), w1 = _mm512_loadu_ps(sw + 16);
    for (int m = 0; m < MR; m++) {
        __m512 s = _mm512_set1_ps(sa[m]);
        __m512 v0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + m * NR)),
                                  _mm512_mul_ps(s, w0));
        __m512 v1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + m * NR + 16)),
                                  _mm512_mul_ps(s, w1));
        store_row(y + (size_t)m * ldy, v0, v1, e);
    }
}

const g4v_gemm_kernel AMX_VARIANT(g4v_gemm_amx_q8) = {.name = "amx-q8",
                                                     .mr = MR,
                                                     .nr = NR,
                                                     .kg = KG,
                                                     .int8 = 1,
                                                     .pack_a = pack_a,
                                                     .ukr = ukr,
                                                     .release = amx_block_release};

/* ---- INT8_BLOCKS, per 32-block ---- */


static void pack_a_b(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                     const g4v_pack_opts *o) {
    g4v_pack_a_q8b_scalar(x, ldx, rows, klen, kpad, MR, 0, dst, o);
}

static void ukr_b(int nblocks, const void *a_, const void *b_, const float *acc_in, float *y,
                  size_t ldy, const g4v_ukr_epi *e) {
    (void)acc_in; /* never chunked (gemm_kernel.h) */
    const unsigned char *a = a_, *b = b_;
    size_t kpad = (size_t)nblocks * BK;
    const float *sa = (const float *)(a + MR * kpad); /* [nblocks][MR] after the codes */
    const float *sw = (const float *)(b + NR * kpad); /* [nblocks][NR] after the codes */
    g4v_tile_configure(&q8b_cfg);
    _Alignas(64) int32_t c[MR * NR];
    __m512 f[MR][2];
    for (int m = 0; m < MR; m++)
        f[m][0] = f[m][1] = _mm512_setzero_ps();
    for (int blk = 0; blk < nblocks; blk++, a += MR * BK, b += BK / 4 * NR * 4) {
        AMX_BLOCK_ZERO();
        TILE_LOAD(4, a, BK);
        TILE_LOAD(5, a + 16 * BK, BK);
        TILE_LOAD(6, b, NR * 4);
        TILE_LOAD(7, b + 64, NR * 4);
        TILE_DPBSSD(0, 4, 6);
        TILE_DPBSSD(1, 4, 7);
        TILE_DPBSSD(2, 5, 6);
        TILE_DPBSSD(3, 5, 7);
        AMX_BLOCK_STORE(c, NR);
        const float *sab = sa + (size_t)blk * MR, *swb = sw + (size_t)blk * NR;
        __m512 w0 = _mm512_loadu_ps(swb), w1 = _mm512_loadu_ps(swb + 16);
        for (int m = 0; m < MR; m++) {
            __m512 s = _mm512_set1_ps(sab[m]);
            f[m][0] = fmadd_exact(_mm512_cvtepi32_ps(_mm512_load_si512(c + m * NR)),
                              _mm512_mul_ps(s, w0), f[m][0]);
            f[m][1] = fmadd_exact(_mm512_cvtepi32_ps(_mm512_load_si512(c + m * NR + 16)),
                              _mm512_mul_ps(s, w1), f[m][1]);
        }
    }
    for (int m = 0; m < MR; m++)
        store_row(y + (size_t)m * ldy, f[m][0], f[m][1], e);
}

const g4v_gemm_kernel AMX_VARIANT(g4v_gemm_amx_q8b) = {.name = "amx-q8b",
                                                      .mr = MR,
                                                      .nr = NR,
                                                      .kg = BK,
                                                      .int8 = 1,
                                                      .q8_blocks = 1,
                                                      .pack_a = pack_a_b,
                                                      .ukr = ukr_b,
                                                      .release = amx_block_release};
