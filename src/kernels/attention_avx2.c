/* attention_avx2.c - flash-style attention with AVX2 + FMA (same contract as attention.c).
 *
 * A task is (head, tile of QB = 16 queries); it walks the keys in tiles of KB = 64 with the
 * online softmax of attention.c (running max m, sum l, unnormalised O, rescaled by
 * exp(m_old - m_new) when the max moves). The 16 queries are two ymm registers wide, so the
 * task's state (Q tile, logits, O: 3 x 16 x d floats, 12 KB at d = 64) stays in L1 while the K
 * and V tiles stream through. Layout as in attention.c, query index fastest: qT[c][i], S[j][i],
 * O[c][i].
 *  - logits: a 4-key x 16-query block in 8 accumulators, one FMA per channel, channels in order;
 *  - softmax: max, exp and sum vectorised over the 16 queries with a polynomial exp (exp_avx2.h);
 *  - P.V: a 4-channel x 16-query block of O in 8 accumulators, one FMA per key, keys in order.
 * Everything is f32, nothing is rounded to bf16. Differences from the portable kernel come only
 * from FMA's single rounding and exp_ps (<= 2 ulp): tests measure the bound. Each task writes
 * only its own [16, d] output tile, so results do not depend on the thread count.
 * Compiled with -mavx2 -mfma (isa_flags.cmake); called only when CPUID reports both.
 */
#include "attention_isa.h"

#ifdef G4V_ATTN_HAVE_X86
#include "exp_avx2.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

enum { QB = 16, KB = 64 };

void g4v_exp_avx2(const float *x, float *y, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, exp_ps(_mm256_loadu_ps(x + i)));
    if (i < n) {
        float bx[8] = {0}, by[8];
        for (size_t t = i; t < n; t++) bx[t - i] = x[t];
        _mm256_storeu_ps(by, exp_ps(_mm256_loadu_ps(bx)));
        for (size_t t = i; t < n; t++) y[t] = by[t - i];
    }
}

/* S[j][0..16) = scale * q . k_j for the nk keys of this tile; each sum runs c = 0..d-1. */
static void tile_logits(const float *qT, const float *k0, size_t ldk, int d, int nk, float scale,
                        float *S) {
    __m256 sc = _mm256_set1_ps(scale);
    int j = 0;
    for (; j + 4 <= nk; j += 4) {
        const float *k = k0 + (size_t)j * ldk;
        __m256 a00 = _mm256_setzero_ps(), a01 = a00, a10 = a00, a11 = a00;
        __m256 a20 = a00, a21 = a00, a30 = a00, a31 = a00;
        for (int c = 0; c < d; c++) {
            __m256 q0 = _mm256_load_ps(qT + (size_t)c * QB), q1 = _mm256_load_ps(qT + (size_t)c * QB + 8);
            __m256 b = _mm256_broadcast_ss(k + c);
            a00 = _mm256_fmadd_ps(q0, b, a00);
            a01 = _mm256_fmadd_ps(q1, b, a01);
            b = _mm256_broadcast_ss(k + ldk + c);
            a10 = _mm256_fmadd_ps(q0, b, a10);
            a11 = _mm256_fmadd_ps(q1, b, a11);
            b = _mm256_broadcast_ss(k + 2 * ldk + c);
            a20 = _mm256_fmadd_ps(q0, b, a20);
            a21 = _mm256_fmadd_ps(q1, b, a21);
            b = _mm256_broadcast_ss(k + 3 * ldk + c);
            a30 = _mm256_fmadd_ps(q0, b, a30);
            a31 = _mm256_fmadd_ps(q1, b, a31);
        }
        float *s = S + (size_t)j * QB;
        _mm256_store_ps(s, _mm256_mul_ps(a00, sc));
        _mm256_store_ps(s + 8, _mm256_mul_ps(a01, sc));
        _mm256_store_ps(s + 16, _mm256_mul_ps(a10, sc));
        _mm256_store_ps(s + 24, _mm256_mul_ps(a11, sc));
        _mm256_store_ps(s + 32, _mm256_mul_ps(a20, sc));
        _mm256_store_ps(s + 40, _mm256_mul_ps(a21, sc));
        _mm256_store_ps(s + 48, _mm256_mul_ps(a30, sc));
        _mm256_store_ps(s + 56, _mm256_mul_ps(a31, sc));
    }
    for (; j < nk; j++) { /* ragged end of the keys: one at a time */
        const float *k = k0 + (size_t)j * ldk;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0;
        for (int c = 0; c < d; c++) {
            __m256 b = _mm256_broadcast_ss(k + c);
            a0 = _mm256_fmadd_ps(_mm256_load_ps(qT + (size_t)c * QB), b, a0);
            a1 = _mm256_fmadd_ps(_mm256_load_ps(qT + (size_t)c * QB + 8), b, a1);
        }
        _mm256_store_ps(S + (size_t)j * QB, _mm256_mul_ps(a0, sc));
        _mm256_store_ps(S + (size_t)j * QB + 8, _mm256_mul_ps(a1, sc));
    }
}

/* Folds one key tile into (m, l, O): new max, corr = exp(m_old - m_new), p = exp(s - m_new)
 * over S, l = l * corr + p (keys in order), O = O * corr + P V (keys in order per output). */
static void tile_update(float *S, const float *v0, size_t ldv, int d, int nk, float *m, float *l,
                        float *O) {
    __m256 m0 = _mm256_load_ps(m), m1 = _mm256_load_ps(m + 8);
    __m256 n0 = m0, n1 = m1;
    for (int j = 0; j < nk; j++) {
        n0 = _mm256_max_ps(n0, _mm256_load_ps(S + (size_t)j * QB));
        n1 = _mm256_max_ps(n1, _mm256_load_ps(S + (size_t)j * QB + 8));
    }
    __m256 c0 = exp_ps(_mm256_sub_ps(m0, n0)), c1 = exp_ps(_mm256_sub_ps(m1, n1));
    __m256 l0 = _mm256_mul_ps(_mm256_load_ps(l), c0), l1 = _mm256_mul_ps(_mm256_load_ps(l + 8), c1);
    for (int j = 0; j < nk; j++) {
        float *s = S + (size_t)j * QB;
        __m256 p0 = exp_ps(_mm256_sub_ps(_mm256_load_ps(s), n0));
        __m256 p1 = exp_ps(_mm256_sub_ps(_mm256_load_ps(s + 8), n1));
        _mm256_store_ps(s, p0);
        _mm256_store_ps(s + 8, p1);
        l0 = _mm256_add_ps(l0, p0);
        l1 = _mm256_add_ps(l1, p1);
    }
    _mm256_store_ps(m, n0);
    _mm256_store_ps(m + 8, n1);
    _mm256_store_ps(l, l0);
    _mm256_store_ps(l + 8, l1);

    int c = 0;
    for (; c + 4 <= d; c += 4) {
        float *o = O + (size_t)c * QB;
        __m256 a00 = _mm256_mul_ps(_mm256_load_ps(o), c0), a01 = _mm256_mul_ps(_mm256_load_ps(o + 8), c1);
        __m256 a10 = _mm256_mul_ps(_mm256_load_ps(o + 16), c0), a11 = _mm256_mul_ps(_mm256_load_ps(o + 24), c1);
        __m256 a20 = _mm256_mul_ps(_mm256_load_ps(o + 32), c0), a21 = _mm256_mul_ps(_mm256_load_ps(o + 40), c1);
        __m256 a30 = _mm256_mul_ps(_mm256_load_ps(o + 48), c0), a31 = _mm256_mul_ps(_mm256_load_ps(o + 56), c1);
        const float *v = v0 + c;
        for (int j = 0; j < nk; j++, v += ldv) {
            __m256 p0 = _mm256_load_ps(S + (size_t)j * QB), p1 = _mm256_load_ps(S + (size_t)j * QB + 8);
            __m256 b = _mm256_broadcast_ss(v);
            a00 = _mm256_fmadd_ps(p0, b, a00);
            a01 = _mm256_fmadd_ps(p1, b, a01);
            b = _mm256_broadcast_ss(v + 1);
            a10 = _mm256_fmadd_ps(p0, b, a10);
            a11 = _mm256_fmadd_ps(p1, b, a11);
            b = _mm256_broadcast_ss(v + 2);
            a20 = _mm256_fmadd_ps(p0, b, a20);
            a21 = _mm256_fmadd_ps(p1, b, a21);
            b = _mm256_broadcast_ss(v + 3);
            a30 = _mm256_fmadd_ps(p0, b, a30);
            a31 = _mm256_fmadd_ps(p1, b, a31);
        }
        _mm256_store_ps(o, a00);
        _mm256_store_ps(o + 8, a01);
        _mm256_store_ps(o + 16, a10);
        _mm256_store_ps(o + 24, a11);
        _mm256_store_ps(o + 32, a20);
        _mm256_store_ps(o + 40, a21);
        _mm256_store_ps(o + 48, a30);
        _mm256_store_ps(o + 56, a31);
    }
    for (; c < d; c++) { /* channels beyond a multiple of 4 */
        float *o = O + (size_t)c * QB;
        __m256 a0 = _mm256_mul_ps(_mm256_load_ps(o), c0), a1 = _mm256_mul_ps(_mm256_load_ps(o + 8), c1);
        for (int j = 0; j < nk; j++) {
            __m256 b = _mm256_broadcast_ss(v0 + (size_t)j * ldv + c);
            a0 = _mm256_fmadd_ps(_mm256_load_ps(S + (size_t)j * QB), b, a0);
            a1 = _mm256_fmadd_ps(_mm256_load_ps(S + (size_t)j * QB + 8), b, a1);
        }
        _mm256_store_ps(o, a0);
        _mm256_store_ps(o + 8, a1);
    }
}

typedef struct {
    const g4v_attn_args *a;
    int q_tiles;
} attn_job;

/* Scratch per worker, 32-byte aligned floats: qT, O [d][QB]; S [KB][QB]; m, l [QB]. Fits in
 * g4v_attention_scratch_floats(d) (sized for the portable kernel's larger tiles) plus the
 * alignment slack below. */
static void attn_task(void *varg, int task, int worker) {
    const attn_job *job = varg;
    const g4v_attn_args *a = job->a;
    int h = task / job->q_tiles, qt = task % job->q_tiles;
    int kvh = h / (a->H / a->Hkv), d = a->d;
    int q_start = qt * QB, nq = a->L - q_start < QB ? a->L - q_start : QB;

    float *base = a->scratch + (size_t)worker * g4v_attention_scratch_floats(d);
    float *qT = (float *)(((uintptr_t)base + 31) & ~(uintptr_t)31);
    float *O = qT + (size_t)QB * d, *S = O + (size_t)QB * d;
    float *m = S + (size_t)KB * QB, *l = m + QB;
    /* Lanes i >= nq of a last, partial tile run on zero queries: finite, never written out. */
    for (int i = 0; i < QB; i++) {
        if (i < nq) {
            const float *q = a->q + (size_t)(q_start + i) * a->ldq + (size_t)h * d;
            for (int c = 0; c < d; c++) qT[(size_t)c * QB + i] = q[c];
        } else {
            for (int c = 0; c < d; c++) qT[(size_t)c * QB + i] = 0.0f;
        }
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    for (size_t i = 0; i < (size_t)QB * d; i++) O[i] = 0.0f;

    for (int k_start = 0; k_start < a->L; k_start += KB) {
        int nk = a->L - k_start < KB ? a->L - k_start : KB;
        tile_logits(qT, a->k + (size_t)k_start * a->ldk + (size_t)kvh * d, a->ldk, d, nk,
                    a->scale, S);
        tile_update(S, a->v + (size_t)k_start * a->ldv + (size_t)kvh * d, a->ldv, d, nk, m, l, O);
    }
    for (int i = 0; i < nq; i++) {
        float *out = a->out + (size_t)(q_start + i) * a->ldo + (size_t)h * d;
        float inv = 1.0f / l[i];
        for (int c = 0; c < d; c++) out[c] = O[(size_t)c * QB + i] * inv;
    }
}

void g4v_attention_avx2(g4v_pool *pool, const g4v_attn_args *a) {
    if (a->L <= 0) return;
    attn_job job = {a, (a->L + QB - 1) / QB};
    g4v_pool_run(pool, a->H * job.q_tiles, attn_task, &job);
}
#endif
