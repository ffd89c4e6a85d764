/* gemm_q8_avx512vnni.c - the INT8 mode's AVX512-VNNI micro-kernel (vpdpbusd, 12 x 32 tile) and
 * its A packer (per-row quantization, gemm_q8.h).
 *
 * vpdpbusd multiplies UNSIGNED bytes by signed bytes, 4 per 32-bit lane, and adds the 4 products
 * to an int32 lane. A's codes are stored + 128 (unsigned 1..255) and B's as signed -127..127, so
 * each lane sums (qa + 128)·qw; the kernel starts every sum from -128·Σ_k qw[n][k] (stored with
 * the panel), which leaves exactly Σ qa·qw. No intermediate saturates (vpdpbusd does not saturate;
 * 255·127·K < 2^31 for K <= 2^16). The 24 accumulators (12 rows x 2 zmm) cover vpdpbusd's latency
 * as the bf16 kernel's do; A's 4-byte groups are broadcast from memory. Dequantization is
 * gemm_q8.h's (float)acc · (sa · sw), so results equal the portable kernel's bit for bit.
 * Compiled with the AVX-512 flags plus -mavx512vnni (src/kernels/kernels.cmake), and without
 * FMA contraction (the dequantizing multiply must not fuse with the accumulate's add).
 */
#include "kernels/dispatch.h"
#include "kernels/gemm_kernel.h"
#include "kernels/gemm_q8.h"
#include "kernels/simd.h"
#include "kernels/x86_avx512/avx512.h"

#include <stdint.h>
#include <string.h>

enum { MR = 12, NR = 32, KG = 4 };

/* One row's codes (+128) at the panel positions of row r % MR. */
static void pack_row(const float *xr, int klen, int kpad, unsigned char *p, int mrow,
                     const g4v_pack_opts *o) {
    __m512 lo = _mm512_set1_ps(o->lo), hi = _mm512_set1_ps(o->hi);
    __m512 vmax = _mm512_setzero_ps();
    int full = klen / 16 * 16;
    for (int k = 0; k < full; k += 16) {
        __m512 v = _mm512_loadu_ps(xr + k);
        if (o->clamp) v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
        vmax = _mm512_max_ps(_mm512_abs_ps(v), vmax); /* NaN lanes keep vmax, as gemm_q8.h */
    }
    float lanes[16], amax = 0.0f, inv;
    _mm512_storeu_ps(lanes, vmax);
    for (int i = 0; i < 16; i++)
        amax = lanes[i] > amax ? lanes[i] : amax;
    for (int k = full; k < klen; k++) {
        float a = fabsf(o->clamp ? g4v_clampf(xr[k], o->lo, o->hi) : xr[k]);
        amax = a > amax ? a : amax;
    }
    float scale = g4v_q8_scale(amax, &inv);
    __m512 vinv = _mm512_set1_ps(inv), qlo = _mm512_set1_ps(-127.0f), qhi = _mm512_set1_ps(127.0f);
    __m512i off = _mm512_set1_epi32(128);
    int32_t q[16];
    for (int k = 0; k < full; k += 16) {
        __m512 v = _mm512_loadu_ps(xr + k);
        if (o->clamp) v = _mm512_min_ps(hi, _mm512_max_ps(lo, v));
        __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v, vinv), qlo), qhi);
        _mm512_storeu_si512(q, _mm512_add_epi32(_mm512_cvtps_epi32(t), off));
        for (int g = 0; g < 4; g++) {
            unsigned char *d = p + ((size_t)((k >> 2) + g) * MR + (size_t)mrow) * KG;
            for (int j = 0; j < 4; j++)
                d[j] = (unsigned char)q[4 * g + j];
        }
    }
    for (int k = full; k < kpad; k++) {
        int8_t c = k < klen ? g4v_q8_code(o->clamp ? g4v_clampf(xr[k], o->lo, o->hi) : xr[k], inv)
                            : 0;
        p[((size_t)(k / KG) * MR + (size_t)mrow) * KG + (size_t)(k % KG)] =
            (unsigned char)(c + 128);
    }
    memcpy(p + (size_t)MR * (size_t)kpad + sizeof(float) * (size_t)mrow, &scale, sizeof scale);
}

static void pack_a(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst_,
                   const g4v_pack_opts *o) {
    unsigned char *dst = dst_;
    size_t panel = g4v_gemm_a_panel_bytes(&g4v_gemm_avx512_vnni_q8, kpad);
    int prow = (rows + MR - 1) / MR * MR;
    for (int r = 0; r < prow; r++) {
        unsigned char *p = dst + (size_t)(r / MR) * panel;
        if (r < rows) {
            pack_row(x + (size_t)r * ldx, klen, kpad, p, r % MR, o);
            continue;
        }
        static const float zero = 0.0f; /* a row past the edge: scale 0 (codes are never read
                                           into a stored output, but are set) */
        for (int k = 0; k < kpad; k++)
            p[((size_t)(k / KG) * MR + (size_t)(r % MR)) * KG + (size_t)(k % KG)] = 128;
        memcpy(p + (size_t)MR * (size_t)kpad + sizeof(float) * (size_t)(r % MR), &zero,
               sizeof zero);
    }
}

/* c += vpdpbusd(a, b). As inline assembly natively: GCC 12 compiles the intrinsic in this loop
 * with a register copy and a stack store per instruction (the accumulators never stay in
 * registers), which halved the kernel's speed. SIMDe builds use the intrinsic. */
#ifdef G4V_SIMDE
#define Q8_DPBUSD(c, a, b) ((c) = _mm512_dpbusd_epi32((c), (a), (b)))
#else
#define Q8_DPBUSD(c, a, b) __asm__("vpdpbusd %2, %1, %0" : "+v"(c) : "v"(a), "v"(b))
#endif

/* The 12 rows, spelled out (no array of accumulators for the compiler to keep in memory). */
#define Q8_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define Q8_DECL(m) __m512i c##m##_0 = z0, c##m##_1 = z1;
#define Q8_STEP(m)                                                                                 \
    {                                                                                              \
        __m512i av = _mm512_set1_epi32(a[m]);                                                      \
        Q8_DPBUSD(c##m##_0, av, b0);                                                               \
        Q8_DPBUSD(c##m##_1, av, b1);                                                               \
    }
#define Q8_STORE(m)                                                                                \
    {                                                                                              \
        __m512 s = _mm512_set1_ps(sa[m]);                                                          \
        __m512 v0 = _mm512_mul_ps(_mm512_cvtepi32_ps(c##m##_0), _mm512_mul_ps(s, w0));             \
        __m512 v1 = _mm512_mul_ps(_mm512_cvtepi32_ps(c##m##_1), _mm512_mul_ps(s, w1));             \
        store_row(y + (size_t)(m)*ldy, v0, v1, e);                                                 \
    }

static void ukr(int kgroups, const void *a_, const void *b_, const float *acc_in, float *y,
                size_t ldy, const g4v_ukr_epi *e) {
    (void)acc_in; /* never chunked (gemm_kernel.h) */
    const int32_t *a = a_; /* one 4-code group per int32 */
    const int32_t *b = b_;
    const float *sw = (const float *)(b + (size_t)kgroups * NR);
    const int32_t *corr = (const int32_t *)(sw + NR);
    __m512i z0 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(corr));
    __m512i z1 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(corr + 16));
    Q8_ROWS(Q8_DECL)
    for (int g = 0; g < kgroups; g++, a += MR, b += NR) {
        __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 16);
        Q8_ROWS(Q8_STEP)
    }
    const float *sa = (const float *)a; /* the scales follow the codes */
    __m512 w0 = _mm512_loadu_ps(sw), w1 = _mm512_loadu_ps(sw + 16);
    Q8_ROWS(Q8_STORE)
}

const g4v_gemm_kernel g4v_gemm_avx512_vnni_q8 = {.name = "avx512-vnni-q8",
                                                 .mr = MR,
                                                 .nr = NR,
                                                 .kg = KG,
                                                 .int8 = 1,
                                                 .a_u8 = 1,
                                                 .pack_a = pack_a,
                                                 .ukr = ukr};
