/* gemm_q8b.c - the blocked INT8 variant's portable micro-kernel and scalar A packer (gemm_q8.h's
 * per-32-block arithmetic in plain C, any CPU; docs/NUMERICS.md §12.4). It is what the SIMD
 * blocked kernels must match bit for bit, with g4v_gemm_ref's INT8_BLOCKS branch (gemm_ref.c),
 * which computes the same from the raw weight. Layouts: gemm_kernel.h, "Blocked INT8 kernels".
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/gemm_q8.h"

#include <stdint.h>
#include <string.h>

enum { MR = 4, NR = 16, BK = G4V_Q8_BLOCK };

float g4v_q8b_quantize_block(const float *xb, int len, const g4v_pack_opts *o, int8_t q[BK]) {
    float amax = 0.0f, inv;
    for (int k = 0; k < len; k++)
        amax = g4v_q8_amax_step(amax, o->clamp ? g4v_clampf(xb[k], o->lo, o->hi) : xb[k]);
    float scale = g4v_q8_scale(amax, &inv);
    for (int k = 0; k < BK; k++)
        q[k] = k < len ? g4v_q8_code(o->clamp ? g4v_clampf(xb[k], o->lo, o->hi) : xb[k], inv) : 0;
    return scale;
}

void g4v_pack_a_q8b_scalar(const float *x, size_t ldx, int rows, int klen, int kpad, int mr,
                           int u8, void *dst_, const g4v_pack_opts *o) {
    unsigned char *dst = dst_;
    int prow = (rows + mr - 1) / mr * mr, nb = kpad / BK;
    size_t panel = g4v_q8b_a_panel_bytes(mr, kpad);
    for (int r = 0; r < prow; r++) {
        unsigned char *p = dst + (size_t)(r / mr) * panel;
        float *scales = (float *)(p + (size_t)mr * (size_t)kpad);
        for (int b = 0; b < nb; b++) {
            int8_t q[BK];
            int k0 = b * BK, len = r < rows && klen > k0 ? (klen - k0 < BK ? klen - k0 : BK) : 0;
            float s = g4v_q8b_quantize_block(x + (size_t)r * ldx + (size_t)k0, len, o, q);
            unsigned char *d = p + ((size_t)b * (size_t)mr + (size_t)(r % mr)) * BK;
            for (int k = 0; k < BK; k++)
                d[k] = u8 ? (unsigned char)(q[k] + 128) : (unsigned char)q[k];
            memcpy(&scales[(size_t)b * (size_t)mr + (size_t)(r % mr)], &s, sizeof s);
        }
    }
}

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    g4v_pack_a_q8b_scalar(x, ldx, rows, klen, kpad, MR, 0, dst, o);
}

static void ukr(int nblocks, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    (void)acc_in; /* never chunked (gemm_kernel.h) */
    const int8_t *a = a_, *b = b_;
    const float *sa = (const float *)(a + (size_t)MR * BK * (size_t)nblocks);
    const float *sw = (const float *)(b + (size_t)NR * BK * (size_t)nblocks);
    float out[MR][NR];
    memset(out, 0, sizeof out);
    for (int blk = 0; blk < nblocks; blk++, a += MR * BK, b += NR * BK) {
        int32_t acc[MR][NR];
        memset(acc, 0, sizeof acc);
        for (int m = 0; m < MR; m++)
            for (int n = 0; n < NR; n++)
                for (int k = 0; k < BK; k++) /* B: [k / 4][NR][4] within the block */
                    acc[m][n] += (int32_t)a[m * BK + k] * (int32_t)b[(k / 4 * NR + n) * 4 + k % 4];
        for (int m = 0; m < MR; m++)
            for (int n = 0; n < NR; n++)
                out[m][n] = g4v_q8b_step(acc[m][n], sa[blk * MR + m], sw[blk * NR + n], out[m][n]);
    }
    for (int m = 0; m < MR; m++)
        for (int n = 0; n < NR; n++) {
            float v = out[m][n];
            if (e->clamp) v = g4v_clampf(v, e->lo, e->hi);
            float *d = y + (size_t)m * ldy + n;
            *d = e->accumulate ? *d + v : v;
        }
}

const g4v_gemm_kernel g4v_gemm_portable_q8b = {.name = "portable-q8b",
                                               .mr = MR,
                                               .nr = NR,
                                               .kg = BK,
                                               .int8 = 1,
                                               .q8_blocks = 1,
                                               .pack_a = pack_a,
                                               .ukr = ukr};
