/* gemm_amx.c - the AMX-BF16 GEMM micro-kernel (TDPBF16PS on a 32 x 32 output block) and its A
 * packer, packed and in place (gemm_kernel.h), FAST mode with BF16 weights.
 *
 * The layouts are the driver's with MR = NR = KG = 32, which are tiles as they lie:
 *   one 32-k group of an A micro-panel is 32 rows of 64 bytes: two A tiles (rows 0-15, 16-31)
 *     at stride 64;
 *   one 32-k group of a B panel ([kpad / 2][32][2] bf16 pairs) is 16 pair rows of 128 bytes:
 *     two B tiles side by side (columns 0-15 at byte 0, 16-31 at byte 64) at stride 128.
 * Tiles 0-3 hold the 2 x 2 C block (rows 0-15 / 16-31 x columns 0-15 / 16-31), 4-5 A, 6-7 B;
 * each 32-step of K is four tile loads and four TDPBF16PS. Every output's sum is the
 * instruction's, 32 k at a time: even and odd products in two FMA chains from zero, their sum
 * added to C (docs/NUMERICS.md §13), whatever the driver's K chunks (they are whole groups and
 * continue from the stored C exactly), so packed, in place, any thread count: the same bits.
 * K is zero-padded to whole groups by the packers (a zero pair adds +0 to both chains).
 *
 * The driver keeps the B chunk of a panel in L1 while the A chunks stream from L2 (gemm_driver.c);
 * with one tile load per TDPBF16PS the L1 must feed it, so the chunk is KC = 256 k (16 KB of B,
 * the descriptor's kc_values). The tile configuration is one static struct, loaded by the first
 * micro-kernel call of a thread in a GEMM and released by the driver at the call's end (the
 * descriptor's release).
 * AMX_VARIANT names the descriptors: gemm_amx_twin.c compiles this file again over the emulator
 * (G4V_AMX_EMU) as the start-up self-test's reference.
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/simd.h"
#include "kernels/x86_avx512/avx512.h"

#include "amx_block.h"

#include <stdint.h>

#ifndef AMX_VARIANT
#define AMX_VARIANT(x) x
#endif

enum { MR = 32, NR = 32, KG = 32, KC = 256 };

/* Eight tiles of 16 rows x 64 bytes. Static storage: the stores of a stack copy could be lost
 * (amx_tile.h), a constant one has none. */
static const g4v_tile_config tiles_cfg = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

/* Rows [0, rows) of x into 32-row bf16 micro-panels: each row's 32-k groups clamped, rounded to
 * bf16 (ties to even, as g4v_f32_to_bf16) and stored as one 64-byte tile row; K's ragged tail
 * and the rows past the edge by the scalar packer. */
static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst_,
                   const g4v_pack_opts *o) {
    uint16_t *dst = dst_;
    int full = klen / KG;
    __m512 lo = _mm512_set1_ps(o->lo), hi = _mm512_set1_ps(o->hi);
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * ldx;
        uint16_t *d = dst + (size_t)(r / MR) * MR * (size_t)kpad + (size_t)(r % MR) * KG;
        for (int g = 0; g < full; g++, d += MR * KG) {
            __m512 v0 = _mm512_loadu_ps(xr + (size_t)g * KG);
            __m512 v1 = _mm512_loadu_ps(xr + (size_t)g * KG + 16);
            if (o->clamp) {
                v0 = _mm512_min_ps(hi, _mm512_max_ps(lo, v0));
                v1 = _mm512_min_ps(hi, _mm512_max_ps(lo, v1));
            }
            _mm256_storeu_si256((__m256i *)d, _mm512_cvtepi32_epi16(bf16_bits(v0)));
            _mm256_storeu_si256((__m256i *)(d + 16), _mm512_cvtepi32_epi16(bf16_bits(v1)));
        }
    }
    g4v_pack_a_scalar(x, ldx, rows, full * KG, klen, kpad, MR, KG, 1, dst, o);
}

/* The 32 x 32 block over kgroups groups, from acc_in (row stride NR) or zero, into y. */
static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    const unsigned char *a = a_, *b = b_;
    g4v_tile_configure(&tiles_cfg);
    if (acc_in)
        AMX_BLOCK_LOAD(acc_in, NR);
    else
        AMX_BLOCK_ZERO();
    for (int g = 0; g < kgroups; g++, a += MR * KG * 2, b += KG / 2 * NR * 4) {
        TILE_LOAD(4, a, KG * 2);
        TILE_LOAD(5, a + 16 * KG * 2, KG * 2);
        TILE_LOAD(6, b, NR * 4);
        TILE_LOAD(7, b + 64, NR * 4);
        TILE_DPBF16PS(0, 4, 6);
        TILE_DPBF16PS(1, 4, 7);
        TILE_DPBF16PS(2, 5, 6);
        TILE_DPBF16PS(3, 5, 7);
    }
    if (!e->clamp && !e->accumulate) { /* straight into y */
        AMX_BLOCK_STORE(y, ldy);
        return;
    }
    _Alignas(64) float c[MR * NR];
    AMX_BLOCK_STORE(c, NR);
    for (int m = 0; m < MR; m++)
        store_row(y + (size_t)m * ldy, _mm512_load_ps(c + m * NR), _mm512_load_ps(c + m * NR + 16),
                  e);
}

const g4v_gemm_kernel AMX_VARIANT(g4v_gemm_amx_bf16) = {.name = "amx-bf16",
                                                       .mr = MR,
                                                       .nr = NR,
                                                       .kg = KG,
                                                       .a_bf16 = 1,
                                                       .b_bf16 = 1,
                                                       .kc_values = KC,
                                                       .pack_a = pack_a,
                                                       .ukr = ukr,
                                                       .release = amx_block_release};

/* ---- in place (gemm_inplace.c): W's 32-row tiles copied per K chunk as the A micro-panel (its
 * rows are the tile rows as stored), X rounded and packed as the B pairs, the 32 x 32 block of
 * Yᵀ written transposed ---- */

static void pack_x(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    pack_x_pairs32(x, ldx, rows, klen, kpad, dst, o);
}

/* tile[r * 32 + c] (r: W row, c: X row) to Y[c][r] with the epilogue: four 16 x 16 blocks
 * transposed in registers; partial blocks (the matrices' edges) by the scalar store. */
static void store_t(const float *tile, int nr, int rows, int cols, float *y, size_t ldy,
                    const g4v_ukr_epi *e) {
    if (rows != MR || cols != NR || nr != NR) {
        g4v_store_t_scalar(tile, nr, rows, cols, y, ldy, e);
        return;
    }
    __m512 lo = _mm512_set1_ps(e->lo), hi = _mm512_set1_ps(e->hi);
    for (int rb = 0; rb < 2; rb++)
        for (int cb = 0; cb < 2; cb++) {
            __m512 v[16];
            for (int i = 0; i < 16; i++)
                v[i] = _mm512_loadu_ps(tile + (size_t)(rb * 16 + i) * NR + cb * 16);
            transpose16(v);
            for (int j = 0; j < 16; j++) {
                float *d = y + (size_t)(cb * 16 + j) * ldy + rb * 16;
                __m512 o = v[j];
                if (e->clamp) o = _mm512_min_ps(hi, _mm512_max_ps(lo, o));
                if (e->accumulate) o = _mm512_add_ps(_mm512_loadu_ps(d), o);
                _mm512_storeu_ps(d, o);
            }
        }
}

const g4v_gemm_kernel AMX_VARIANT(g4v_gemm_amx_bf16_inplace) = {
    .name = "amx-bf16-inplace",
    .mr = MR,
    .nr = NR,
    .kg = KG,
    .a_bf16 = 1,
    .b_bf16 = 1,
    .kc_values = KC,
    .pack_a = pack_a,
    .ukr = ukr,
    .release = amx_block_release,
    .inner = &AMX_VARIANT(g4v_gemm_amx_bf16),
    .pack_x = pack_x,
    .store_t = store_t};
