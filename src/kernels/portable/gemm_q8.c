/* gemm_q8.c - the INT8 mode's portable micro-kernel and the scalar INT8 A packer (gemm_q8.h's
 * arithmetic in plain C, any CPU). It is the specification the SIMD INT8 kernels must match bit
 * for bit, with g4v_gemm_ref's INT8 branch (gemm_ref.c), which computes the same from the raw
 * weight. Compiled with -ffp-contract=off like the rest of this folder.
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/gemm_q8.h"

#include <stdint.h>
#include <string.h>

enum { MR = 4, NR = 16, KG = 4 };

void g4v_pack_a_q8_scalar(const float *x, size_t ldx, int rows, int klen, int kpad, int mr,
                          int kg, int u8, void *dst_, const g4v_pack_opts *o) {
    unsigned char *dst = dst_;
    int prow = (rows + mr - 1) / mr * mr;
    size_t panel = (size_t)mr * (size_t)kpad + sizeof(float) * (size_t)mr;
    for (int r = 0; r < prow; r++) {
        unsigned char *p = dst + (size_t)(r / mr) * panel;
        const float *xr = x + (size_t)r * ldx;
        float amax = 0.0f, inv = 0.0f, scale = 0.0f;
        if (r < rows) {
            for (int k = 0; k < klen; k++)
                amax = g4v_q8_amax_step(amax, o->clamp ? g4v_clampf(xr[k], o->lo, o->hi) : xr[k]);
            scale = g4v_q8_scale(amax, &inv);
        }
        for (int k = 0; k < kpad; k++) {
            int8_t q = 0;
            if (r < rows && k < klen)
                q = g4v_q8_code(o->clamp ? g4v_clampf(xr[k], o->lo, o->hi) : xr[k], inv);
            size_t at = ((size_t)(k / kg) * (size_t)mr + (size_t)(r % mr)) * (size_t)kg +
                        (size_t)(k % kg);
            p[at] = u8 ? (unsigned char)(q + 128) : (unsigned char)q;
        }
        memcpy(p + (size_t)mr * (size_t)kpad + sizeof(float) * (size_t)(r % mr), &scale,
               sizeof scale);
    }
}

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                   const g4v_pack_opts *o) {
    g4v_pack_a_q8_scalar(x, ldx, rows, klen, kpad, MR, KG, 0, dst, o);
}

static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    (void)acc_in; /* never chunked (gemm_kernel.h) */
    const int8_t *a = a_, *b = b_;
    int32_t acc[MR][NR];
    memset(acc, 0, sizeof acc);
    for (int g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG)
        for (int m = 0; m < MR; m++)
            for (int n = 0; n < NR; n++)
                for (int j = 0; j < KG; j++)
                    acc[m][n] += (int32_t)a[m * KG + j] * (int32_t)b[n * KG + j];
    float sa[MR], sw[NR];
    memcpy(sa, a, sizeof sa); /* a and b now point at the scales behind the codes */
    memcpy(sw, b, sizeof sw);
    for (int m = 0; m < MR; m++)
        for (int n = 0; n < NR; n++) {
            float v = g4v_q8_dequant(acc[m][n], sa[m], sw[n]);
            if (e->clamp) v = g4v_clampf(v, e->lo, e->hi);
            float *d = y + (size_t)m * ldy + n;
            *d = e->accumulate ? *d + v : v;
        }
}

const g4v_gemm_kernel g4v_gemm_portable_q8 = {
    .name = "portable-q8", .mr = MR, .nr = NR, .kg = KG, .int8 = 1, .pack_a = pack_a, .ukr = ukr};
