/* attention_avx2.c - flash-style attention with AVX2 + FMA (same contract as attention.c).
 *
 * First, when a->kv is given, K and V are copied head-major (one [L, d] block per kv head), so a
 * tile of keys is contiguous: in the encoder's [L, Hkv*d] layout the rows of one head sit 3 KB
 * apart and a 64-key tile maps onto a quarter of the L1 sets, evicting itself. Measured with
 * bench_attention at L = 2304 on one core: 45 GFLOP/s without the copy, 61 with it. The copy is
 * O(L*d) against the O(L^2*d) of the products.
 *
 * A task is (head, tile of QB = 24 queries); it walks the keys in tiles of KB = 64 with the
 * online softmax of attention.c (running max m, sum l, unnormalised O, rescaled by
 * exp(m_old - m_new) when the max moves). 24 queries are three ymm registers, and both products
 * are 4 x 3-register blocks: 12 accumulators, enough independent FMA chains to keep both FMA
 * pipes busy (8 left them waiting on latency). Layout as in attention.c, query index fastest:
 * qT[c][i], S[j][i], O[c][i].
 *  - logits: 4 keys x 24 queries, one FMA per channel, channels in order;
 *  - softmax: max, exp and sum vectorised over the queries with a polynomial exp for
 *    non-positive arguments (exp_nonpos_ps, exp_avx2.h);
 *  - P.V: 4 channels x 24 queries of O, one FMA per key, keys in order.
 * Everything is f32, nothing is rounded to bf16. Differences from the portable kernel come only
 * from FMA's single rounding and the polynomial exp (<= 2 ulp): tests measure the bound. Each task
 * writes only its own [24, d] output tile, so results do not depend on the thread count. Compiled
 * with -mavx2 -mfma (isa_flags.cmake); called only when CPUID reports both.
 */
#include "attention_isa.h"

#ifdef G4V_ATTN_HAVE_X86
#include "exp_avx2.h"
#include "gemm_simd.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

enum { QV = 3, QB = 8 * QV, KB = 64, KEYS_PER_PACK_TASK = 512 };

void g4v_exp_avx2(const float *x, float *y, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, exp_ps(_mm256_loadu_ps(x + i)));
    if (i < n) {
        float bx[8] = {0}, by[8];
        for (size_t t = i; t < n; t++)
            bx[t - i] = x[t];
        _mm256_storeu_ps(by, exp_ps(_mm256_loadu_ps(bx)));
        for (size_t t = i; t < n; t++)
            y[t] = by[t - i];
    }
}

void g4v_exp_nonpos_avx2(const float *x, float *y, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, exp_nonpos_ps(_mm256_loadu_ps(x + i)));
    if (i < n) {
        float bx[8] = {0}, by[8];
        for (size_t t = i; t < n; t++)
            bx[t - i] = x[t];
        _mm256_storeu_ps(by, exp_nonpos_ps(_mm256_loadu_ps(bx)));
        for (size_t t = i; t < n; t++)
            y[t] = by[t - i];
    }
}

/* S[j][0..QB) = scale * q . k_j for the nk keys of this tile; each sum runs c = 0..d-1. */
static void tile_logits(const float *qT, const float *k0, size_t ldk, int d, int nk, float scale,
                        float *S) {
    __m256 sc = _mm256_set1_ps(scale);
    int j = 0;
    for (; j + 4 <= nk; j += 4) {
        const float *k = k0 + (size_t)j * ldk;
        __m256 acc[4][QV];
        G4V_UNROLL(4)
        for (int r = 0; r < 4; r++)
            G4V_UNROLL(3) for (int v = 0; v < QV; v++) acc[r][v] = _mm256_setzero_ps();
        for (int c = 0; c < d; c++) {
            __m256 q[QV];
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                q[v] = _mm256_load_ps(qT + (size_t)c * QB + 8 * v);
            G4V_UNROLL(4) for (int r = 0; r < 4; r++) {
                __m256 b = _mm256_broadcast_ss(k + (size_t)r * ldk + c);
                G4V_UNROLL(3)
                for (int v = 0; v < QV; v++)
                    acc[r][v] = _mm256_fmadd_ps(q[v], b, acc[r][v]);
            }
        }
        G4V_UNROLL(4)
        for (int r = 0; r < 4; r++)
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                _mm256_store_ps(S + (size_t)(j + r) * QB + 8 * v, _mm256_mul_ps(acc[r][v], sc));
    }
    for (; j < nk; j++) { /* ragged end of the keys: one at a time */
        const float *k = k0 + (size_t)j * ldk;
        __m256 acc[QV];
        G4V_UNROLL(3) for (int v = 0; v < QV; v++) acc[v] = _mm256_setzero_ps();
        for (int c = 0; c < d; c++) {
            __m256 b = _mm256_broadcast_ss(k + c);
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                acc[v] = _mm256_fmadd_ps(_mm256_load_ps(qT + (size_t)c * QB + 8 * v), b, acc[v]);
        }
        G4V_UNROLL(3)
        for (int v = 0; v < QV; v++)
            _mm256_store_ps(S + (size_t)j * QB + 8 * v, _mm256_mul_ps(acc[v], sc));
    }
}

/* Folds one key tile into (m, l, O): new max, corr = exp(m_old - m_new), p = exp(s - m_new)
 * over S, l = l * corr + p (keys in order), O = O * corr + P V (keys in order per output). */
static void tile_update(float *S, const float *v0, size_t ldv, int d, int nk, float *m, float *l,
                        float *O) {
    __m256 mx[QV], corr[QV], sum[QV];
    G4V_UNROLL(3) for (int v = 0; v < QV; v++) mx[v] = _mm256_load_ps(m + 8 * v);
    for (int j = 0; j < nk; j++)
        G4V_UNROLL(3)
    for (int v = 0; v < QV; v++)
        mx[v] = _mm256_max_ps(mx[v], _mm256_load_ps(S + (size_t)j * QB + 8 * v));
    G4V_UNROLL(3) for (int v = 0; v < QV; v++) {
        corr[v] = exp_nonpos_ps(_mm256_sub_ps(_mm256_load_ps(m + 8 * v), mx[v]));
        sum[v] = _mm256_mul_ps(_mm256_load_ps(l + 8 * v), corr[v]);
    }
    for (int j = 0; j < nk; j++) {
        float *s = S + (size_t)j * QB;
        G4V_UNROLL(3) for (int v = 0; v < QV; v++) {
            __m256 p = exp_nonpos_ps(_mm256_sub_ps(_mm256_load_ps(s + 8 * v), mx[v]));
            _mm256_store_ps(s + 8 * v, p);
            sum[v] = _mm256_add_ps(sum[v], p);
        }
    }
    G4V_UNROLL(3) for (int v = 0; v < QV; v++) {
        _mm256_store_ps(m + 8 * v, mx[v]);
        _mm256_store_ps(l + 8 * v, sum[v]);
    }

    int c = 0;
    for (; c + 4 <= d; c += 4) {
        float *o = O + (size_t)c * QB;
        __m256 acc[4][QV];
        G4V_UNROLL(4)
        for (int r = 0; r < 4; r++)
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++) acc[r][v] =
                _mm256_mul_ps(_mm256_load_ps(o + (size_t)r * QB + 8 * v), corr[v]);
        const float *vr = v0 + c;
        for (int j = 0; j < nk; j++, vr += ldv) {
            __m256 p[QV];
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                p[v] = _mm256_load_ps(S + (size_t)j * QB + 8 * v);
            G4V_UNROLL(4) for (int r = 0; r < 4; r++) {
                __m256 b = _mm256_broadcast_ss(vr + r);
                G4V_UNROLL(3)
                for (int v = 0; v < QV; v++)
                    acc[r][v] = _mm256_fmadd_ps(p[v], b, acc[r][v]);
            }
        }
        G4V_UNROLL(4)
        for (int r = 0; r < 4; r++)
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++) _mm256_store_ps(o + (size_t)r * QB + 8 * v, acc[r][v]);
    }
    for (; c < d; c++) { /* channels beyond a multiple of 4 */
        float *o = O + (size_t)c * QB;
        __m256 acc[QV];
        G4V_UNROLL(3)
        for (int v = 0; v < QV; v++)
            acc[v] = _mm256_mul_ps(_mm256_load_ps(o + 8 * v), corr[v]);
        for (int j = 0; j < nk; j++) {
            __m256 b = _mm256_broadcast_ss(v0 + (size_t)j * ldv + c);
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                acc[v] = _mm256_fmadd_ps(_mm256_load_ps(S + (size_t)j * QB + 8 * v), b, acc[v]);
        }
        G4V_UNROLL(3) for (int v = 0; v < QV; v++) _mm256_store_ps(o + 8 * v, acc[v]);
    }
}

typedef struct {
    const g4v_attn_args *a;
    int q_tiles, pack_chunks;
    const float *k, *v; /* kv head 0 of K and V: packed (ld = d, heads L*d apart) or as given */
    size_t ldk, ldv, head_k, head_v;
} attn_job;

/* Copies keys [chunk * KEYS_PER_PACK_TASK, ...) of one kv head of K and V into a->kv. */
static void pack_task(void *varg, int task, int worker) {
    (void)worker;
    const attn_job *job = varg;
    const g4v_attn_args *a = job->a;
    int h = task / job->pack_chunks, j0 = (task % job->pack_chunks) * KEYS_PER_PACK_TASK;
    int j1 = a->L - j0 < KEYS_PER_PACK_TASK ? a->L : j0 + KEYS_PER_PACK_TASK, d = a->d;
    float *kd = a->kv + (size_t)h * a->L * d, *vd = kd + (size_t)a->Hkv * a->L * d;
    for (int j = j0; j < j1; j++) {
        const float *ks = a->k + (size_t)j * a->ldk + (size_t)h * d;
        const float *vs = a->v + (size_t)j * a->ldv + (size_t)h * d;
        for (int c = 0; c < d; c++) {
            kd[(size_t)j * d + c] = ks[c];
            vd[(size_t)j * d + c] = vs[c];
        }
    }
}

/* Scratch per worker, 32-byte aligned floats: qT, O [d][QB]; S [KB][QB]; m, l [QB]. Fits in
 * g4v_attention_scratch_floats(d) (sized for the portable kernel's larger tiles) plus the
 * alignment slack below. */
static void attn_task(void *varg, int task, int worker) {
    const attn_job *job = varg;
    const g4v_attn_args *a = job->a;
    int h = task / job->q_tiles, qt = task % job->q_tiles;
    int kvh = h / (a->H / a->Hkv), d = a->d;
    int q_start = qt * QB, nq = a->L - q_start < QB ? a->L - q_start : QB;
    const float *k = job->k + (size_t)kvh * job->head_k, *v = job->v + (size_t)kvh * job->head_v;

    float *base = a->scratch + (size_t)worker * g4v_attention_scratch_floats(d);
    float *qT = (float *)(((uintptr_t)base + 31) & ~(uintptr_t)31);
    float *O = qT + (size_t)QB * d, *S = O + (size_t)QB * d;
    float *m = S + (size_t)KB * QB, *l = m + QB;
    /* Lanes i >= nq of a last, partial tile run on zero queries: finite, never written out. */
    for (int i = 0; i < QB; i++) {
        if (i < nq) {
            const float *q = a->q + (size_t)(q_start + i) * a->ldq + (size_t)h * d;
            for (int c = 0; c < d; c++)
                qT[(size_t)c * QB + i] = q[c];
        } else {
            for (int c = 0; c < d; c++)
                qT[(size_t)c * QB + i] = 0.0f;
        }
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    for (size_t i = 0; i < (size_t)QB * d; i++)
        O[i] = 0.0f;

    for (int k_start = 0; k_start < a->L; k_start += KB) {
        int nk = a->L - k_start < KB ? a->L - k_start : KB;
        tile_logits(qT, k + (size_t)k_start * job->ldk, job->ldk, d, nk, a->scale, S);
        tile_update(S, v + (size_t)k_start * job->ldv, job->ldv, d, nk, m, l, O);
    }
    for (int i = 0; i < nq; i++) {
        float *out = a->out + (size_t)(q_start + i) * a->ldo + (size_t)h * d;
        float inv = 1.0f / l[i];
        for (int c = 0; c < d; c++)
            out[c] = O[(size_t)c * QB + i] * inv;
    }
}

void g4v_attention_avx2(g4v_pool *pool, const g4v_attn_args *a) {
    if (a->L <= 0) return;
    attn_job job = {a,
                    (a->L + QB - 1) / QB,
                    (a->L + KEYS_PER_PACK_TASK - 1) / KEYS_PER_PACK_TASK,
                    a->k,
                    a->v,
                    a->ldk,
                    a->ldv,
                    (size_t)a->d,
                    (size_t)a->d};
    if (a->kv) {
        g4v_pool_run(pool, a->Hkv * job.pack_chunks, pack_task, &job);
        size_t head = (size_t)a->L * (size_t)a->d;
        job.k = a->kv;
        job.v = a->kv + (size_t)a->Hkv * head;
        job.ldk = job.ldv = (size_t)a->d;
        job.head_k = job.head_v = head;
    }
    g4v_pool_run(pool, a->H * job.q_tiles, attn_task, &job);
}
#endif
