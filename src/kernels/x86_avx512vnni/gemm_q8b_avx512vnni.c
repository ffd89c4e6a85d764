/* gemm_q8b_avx512vnni.c - the blocked INT8 variant's AVX512-VNNI micro-kernel (vpdpbusd, 6 x 32
 * tile) and its A packer (per-(row, 32-block) quantization, gemm_q8.h; docs/NUMERICS.md §12.4).
 *
 * As the per-channel kernel (gemm_q8_avx512vnni.c): A's codes + 128 (unsigned), B's signed, and
 * every block's int32 sums start from minus the block's +128 correction, which leaves exactly
 * Σ qa·qw for the block. After each block the sums are converted and added to f32 outputs with
 * gemm_q8.h's step, fmaf((float)acc, sa·sw, y), so results equal the portable kernel's bit for
 * bit. The tile is 6 x 32 rather than 12 x 32 because the f32 outputs live in registers beside
 * the int32 sums: 12 + 12 accumulators, 2 B vectors and the scales fit the 32 zmm registers.
 * Compiled with the AVX-512 flags plus -mavx512vnni and without FMA contraction (the scale
 * product must round on its own before the explicit fused multiply-add).
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/gemm_q8.h"
#include "kernels/simd.h"
#include "kernels/x86_avx512/avx512.h"

#include <stdint.h>
#include <string.h>

enum { MR = 6, NR = 32, BK = G4V_Q8_BLOCK, GROUPS = BK / 4 };

/* One row's blocks: codes (+128) and scales at the panel positions of row mrow. */
static void pack_row(const float *xr, int klen, int kpad, unsigned char *p, int mrow,
                     const g4v_pack_opts *o) {
    __m512 lo = _mm512_set1_ps(o->lo), hi = _mm512_set1_ps(o->hi);
    __m512 qlo = _mm512_set1_ps(-127.0f), qhi = _mm512_set1_ps(127.0f);
    __m512i off = _mm512_set1_epi32(128);
    float *scales = (float *)(p + (size_t)MR * (size_t)kpad);
    int nb = kpad / BK;
    for (int b = 0; b < nb; b++) {
        int k0 = b * BK;
        unsigned char *d = p + ((size_t)b * MR + (size_t)mrow) * BK;
        float s;
        if (k0 + BK > klen) { /* the ragged (or empty) last block: the scalar rule */
            int8_t q[BK];
            s = g4v_q8b_quantize_block(xr + k0, klen > k0 ? klen - k0 : 0, o, q);
            for (int k = 0; k < BK; k++)
                d[k] = (unsigned char)(q[k] + 128);
        } else {
            __m512 v0 = _mm512_loadu_ps(xr + k0), v1 = _mm512_loadu_ps(xr + k0 + 16);
            if (o->clamp) {
                v0 = _mm512_min_ps(hi, _mm512_max_ps(lo, v0));
                v1 = _mm512_min_ps(hi, _mm512_max_ps(lo, v1));
            }
            /* NaN lanes lose to the other operand of vmaxps, as gemm_q8.h skips them */
            __m512 m = _mm512_max_ps(_mm512_abs_ps(v1), _mm512_max_ps(_mm512_abs_ps(v0),
                                                                      _mm512_setzero_ps()));
            float lanes[16], amax = 0.0f, inv;
            _mm512_storeu_ps(lanes, m);
            for (int i = 0; i < 16; i++)
                amax = lanes[i] > amax ? lanes[i] : amax;
            s = g4v_q8_scale(amax, &inv);
            __m512 vinv = _mm512_set1_ps(inv);
            __m512 t0 = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v0, vinv), qlo), qhi);
            __m512 t1 = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v1, vinv), qlo), qhi);
            int32_t q[32]; /* codes + 128, 1..255: their low bytes are the packed codes */
            _mm512_storeu_si512(q, _mm512_add_epi32(_mm512_cvtps_epi32(t0), off));
            _mm512_storeu_si512(q + 16, _mm512_add_epi32(_mm512_cvtps_epi32(t1), off));
            for (int k = 0; k < BK; k++)
                d[k] = (unsigned char)q[k];
        }
        memcpy(&scales[(size_t)b * MR + (size_t)mrow], &s, sizeof s);
    }
}

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst_,
                   const g4v_pack_opts *o) {
    unsigned char *dst = dst_;
    size_t panel = g4v_q8b_a_panel_bytes(MR, kpad);
    int prow = (rows + MR - 1) / MR * MR;
    for (int r = 0; r < prow; r++) {
        unsigned char *p = dst + (size_t)(r / MR) * panel;
        if (r < rows) {
            pack_row(x + (size_t)r * ldx, klen, kpad, p, r % MR, o);
            continue;
        }
        /* a row past the edge: codes 0 (+128) and scale 0; never stored, but defined */
        static const float zero = 0.0f;
        float *scales = (float *)(p + (size_t)MR * (size_t)kpad);
        for (int b = 0; b < kpad / BK; b++) {
            memset(p + ((size_t)b * MR + (size_t)(r % MR)) * BK, 128, BK);
            memcpy(&scales[(size_t)b * MR + (size_t)(r % MR)], &zero, sizeof zero);
        }
    }
}

/* c += vpdpbusd(a, b), as inline assembly natively for the reason gemm_q8_avx512vnni.c gives. */
#ifdef G4V_SIMDE
#define Q8B_DPBUSD(c, a, b) ((c) = _mm512_dpbusd_epi32((c), (a), (b)))
#else
#define Q8B_DPBUSD(c, a, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(c) : "v"(a), "v"(b))
#endif


#define Q8B_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define Q8B_FDECL(m) __m512 f##m##_0 = _mm512_setzero_ps(), f##m##_1 = _mm512_setzero_ps();
#define Q8B_IDECL(m) __m512i c##m##_0 = z0, c##m##_1 = z1;
#define Q8B_STEP(m)                                                                                \
    {                                                                                              \
        __m512i av = _mm512_set1_epi32(a[(m)*GROUPS + g]);                                         \
        Q8B_DPBUSD(c##m##_0, av, b0);                                                              \
        Q8B_DPBUSD(c##m##_1, av, b1);                                                              \
    }
#define Q8B_ADD(m)                                                                                 \
    {                                                                                              \
        __m512 s = _mm512_set1_ps(sa[m]);                                                          \
        f##m##_0 = fmadd_exact(_mm512_cvtepi32_ps(c##m##_0), _mm512_mul_ps(s, w0), f##m##_0);  \
        f##m##_1 = fmadd_exact(_mm512_cvtepi32_ps(c##m##_1), _mm512_mul_ps(s, w1), f##m##_1);  \
    }
#define Q8B_STORE(m) store_row(y + (size_t)(m)*ldy, f##m##_0, f##m##_1, e);

static void ukr(int nblocks, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    (void)acc_in; /* never chunked (gemm_kernel.h) */
    const int32_t *a = a_; /* per block: MR rows x 8 groups of 4 codes */
    const int32_t *b = b_; /* per block: 8 groups x NR columns of 4 codes */
    const float *sa = (const float *)(a + (size_t)nblocks * MR * GROUPS);
    const float *sw = (const float *)(b + (size_t)nblocks * NR * GROUPS);
    const int32_t *corr = (const int32_t *)(sw + (size_t)nblocks * NR);
    Q8B_ROWS(Q8B_FDECL)
    for (int blk = 0; blk < nblocks; blk++) {
        __m512i z0 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(corr));
        __m512i z1 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(corr + 16));
        Q8B_ROWS(Q8B_IDECL)
        for (int g = 0; g < GROUPS; g++) {
            __m512i b0 = _mm512_loadu_si512(b + g * NR), b1 = _mm512_loadu_si512(b + g * NR + 16);
            Q8B_ROWS(Q8B_STEP)
        }
        __m512 w0 = _mm512_loadu_ps(sw), w1 = _mm512_loadu_ps(sw + 16);
        Q8B_ROWS(Q8B_ADD)
        a += MR * GROUPS;
        b += NR * GROUPS;
        sa += MR;
        sw += NR;
        corr += NR;
    }
    Q8B_ROWS(Q8B_STORE)
}

const g4v_gemm_kernel g4v_gemm_avx512_vnni_q8b = {.name = "avx512-vnni-q8b",
                                                  .mr = MR,
                                                  .nr = NR,
                                                  .kg = BK,
                                                  .int8 = 1,
                                                  .a_u8 = 1,
                                                  .q8_blocks = 1,
                                                  .pack_a = pack_a,
                                                  .ukr = ukr};
