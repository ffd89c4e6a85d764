/* vec_exp.h - vectorised expf over the vector vocabulary of vec.h (GeGLU's GELU and the
 * softmax's exp). Include after vec.h. Accuracy: <= 1 ulp against the correctly rounded exp over
 * [-87.3, 88] (measured in test_attention, checked there at 2 ulp); the same bits at every width.
 */
#ifndef G4V_KERNELS_VEC_VEC_EXP_H
#define G4V_KERNELS_VEC_VEC_EXP_H

#include "vec.h"

/* e^r for x = n ln2 + r: r from x and n with ln2 split in two (so n ln2 is exact enough), e^r by
 * Cephes' degree-7 expf polynomial. The scale 2^n is applied by the callers. */
static inline V_T vec_exp_reduced_poly(V_T x, V_T n) {
    V_T r = V_FNMA(n, V_SET1(0.693359375f), x);
    r = V_FNMA(n, V_SET1(-2.12194440e-4f), r);
    V_T p = V_SET1(1.9875691500e-4f);
    p = V_FMA(p, r, V_SET1(1.3981999507e-3f));
    p = V_FMA(p, r, V_SET1(8.3334519073e-3f));
    p = V_FMA(p, r, V_SET1(4.1665795894e-2f));
    p = V_FMA(p, r, V_SET1(1.6666665459e-1f));
    p = V_FMA(p, r, V_SET1(5.0000001201e-1f));
    return V_FMA(p, V_MUL(r, r), V_ADD(r, V_SET1(1.0f)));
}

/* exp(x) for x <= 88: n = round(x / ln2), e^r (vec_exp_reduced_poly), times 2^n built in the
 * exponent bits. Results below FLT_MIN (x < -87.336) are flushed to 0, which also covers -inf. */
static inline V_T vec_exp(V_T x) {
    const V_T lo = V_SET1(-87.33654f);
    V_T x0 = x;
    x = V_MIN(V_MAX(x, lo), V_SET1(88.0f));
    V_T n = V_ROUND(V_MUL(x, V_SET1(1.44269504088896341f)));
    V_T p = vec_exp_reduced_poly(x, n);
    VI_T e = VI_SLLI(VI_ADD(V_CVT_I(n), VI_SET1(127)), 23);
    return V_ZERO_IF_LT(V_MUL(p, V_AS_F(e)), x0, lo);
}

/* exp(x) for x <= 0, the softmax's exp(logit - running max): vec_exp with four fewer
 * instructions (it runs once per query x key, ~15% of the attention's instructions). No upper
 * clamp; x below -87.336 (also -inf and NaN) is raised to -87.336 instead of being flushed, so the
 * result is ~FLT_MIN rather than 0: invisible in a softmax sum whose largest term is 1.
 * n = round(x log2 e) comes from adding 1.5 * 2^23, which leaves n in the low bits of t, so 2^n is
 * built from t's bits without a float-to-int conversion. */
static inline V_T vec_exp_nonpos(V_T x) {
    const V_T magic = V_SET1(12582912.0f); /* 1.5 * 2^23, bits 0x4b400000 */
    x = V_MAX(x, V_SET1(-87.33654f));
    V_T t = V_FMA(x, V_SET1(1.44269504088896341f), magic);
    V_T p = vec_exp_reduced_poly(x, V_SUB(t, magic));
    VI_T e = VI_SLLI(VI_ADD(V_AS_I(t), VI_SET1(127 - 0x4b400000)), 23);
    return V_MUL(p, V_AS_F(e));
}

#endif
