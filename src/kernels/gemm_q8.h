/* gemm_q8.h - the INT8 math mode's quantization, shared by the weight packer, the reference and
 * every INT8 micro-kernel (docs/NUMERICS.md §12).
 *
 * INT8 mode computes y = x · Wᵀ as int8 x int8 -> int32:
 *   weights, once at load, per output channel n:  sw[n] = amax_k |W[n, k]| / 127,
 *                                                  qw[n, k] = q(W[n, k], 127 / amax)
 *   activations, per call, per row m (after the input clamp):
 *                                                  sa[m] = amax_k |x'[m, k]| / 127,
 *                                                  qa[m, k] = q(x'[m, k], 127 / amax)
 *   acc[m, n] = Σ_k qa[m, k] · qw[n, k]            (int32, exact: |acc| <= 127² K < 2^31)
 *   y[m, n]   = (float)acc · (sa[m] · sw[n])        (two f32 roundings, in exactly this order)
 * then the output clamp, fused GeGLU and accumulate of gemm.h. q(v, inv) = nearest-even integer
 * of v · inv clamped to [-127, 127] (NaN -> -127); an all-zero (or all-subnormal) row or column
 * gets scale 0 and codes 0. Every kernel computes these exact bits: the integer sum is exact in
 * any order, and the float steps are the same IEEE operations in the same order.
 * -128 never occurs, so |a|·|b| <= 127² and a pair of products fits vpmaddubsw's int16 (AVX2).
 *
 * The blocked variant (G4V_MATH_INT8_BLOCKS, llama.cpp's Q8_0 x Q8_0 layout) scales per block of
 * G4V_Q8_BLOCK = 32 consecutive k instead, on both sides; K is zero-padded to whole blocks:
 *   weights, once at load, per (n, block b): swb[n, b] = amax over the block / 127, codes as
 *     above (or, from a Q8_0 GGUF tensor, the file's codes and its f16 d widened exactly to f32:
 *     codes -128..127 there, never produced here);
 *   activations, per call, per (m, block b) after the input clamp: sab[m, b] the same way;
 *   acc_b[m, n] = Σ_{k in block b} qa · qw                    (int32, exact)
 *   y = 0; for b = 0, 1, ...: y = fmaf((float)acc_b, sab[m, b] · swb[n, b], y)
 * (one rounding for the scale product, one for the fused multiply-add, blocks in order), then the
 * epilogue. Every blocked kernel computes exactly these bits.
 */
#ifndef G4V_KERNELS_GEMM_Q8_H
#define G4V_KERNELS_GEMM_Q8_H

#include "base/dtype.h" /* G4V_Q8_BLOCK: the blocked variant's k values per scale */

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* The largest K an INT8 weight may have: vpdpbusd on activations shifted to unsigned sums up to
 * 255·127·K, which must stay below 2^31. */
enum { G4V_Q8_MAX_K = 1 << 16 };

/* The per-row (or per-column) scale from the largest magnitude; *inv is the quantizing factor. */
static inline float g4v_q8_scale(float amax, float *inv) {
    if (!(amax >= FLT_MIN) || amax == INFINITY) { /* zero, subnormal, NaN or inf: all codes 0 */
        *inv = 0.0f;
        return 0.0f;
    }
    *inv = 127.0f / amax;
    return amax / 127.0f;
}

/* q(v, inv): one code. The clamp comes first, in float, so the rounding never sees overflow. */
static inline int8_t g4v_q8_code(float v, float inv) {
    float t = v * inv;
    t = t > -127.0f ? t : -127.0f; /* NaN -> -127, as vmaxps(t, -127) */
    t = t < 127.0f ? t : 127.0f;
    return (int8_t)(int)nearbyintf(t); /* ties to even (default rounding mode) */
}

/* One step of the amax over a row, column or block (from m = 0): the larger of m and |v|; NaN is
 * skipped (as vmaxps(|v|, acc) does). The scalar and portable loops all fold through it. */
static inline float g4v_q8_amax_step(float m, float v) {
    float a = fabsf(v);
    return a > m ? a : m;
}

/* The dequantized output of one element, as every kernel computes it. */
static inline float g4v_q8_dequant(int32_t acc, float sa, float sw) {
    return (float)acc * (sa * sw);
}

/* One block's step of the blocked variant's output sum (the order and roundings above). */
static inline float g4v_q8b_step(int32_t acc, float sa, float sw, float y) {
    return fmaf((float)acc, sa * sw, y);
}

#endif
