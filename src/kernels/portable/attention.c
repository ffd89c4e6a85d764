/* attention.c - softmax(scale * Q Kᵀ) V per head without ever holding an L x L matrix.
 *
 * Work is split into tasks of (head, tile of BQ queries). A task walks the keys in tiles of BK,
 * keeping for each of its queries the running max m, the running sum l of exp(s - m) and the
 * unnormalised output O (the "online softmax"); when a new tile raises the max, l and O are
 * rescaled by exp(m_old - m_new). At the end out = O / l. Memory per worker is
 * scratch_floats(d), independent of L, so L = 10,080 costs nothing extra.
 *
 * Everything is f32 and nothing is rounded to bf16: Gemma 4's scale-1 logits on RMS-normed q/k
 * are large (std ~ sqrt(d)) and the softmax is sharp, so rounding here would be amplified
 * (docs/NUMERICS.md §4.4). Each task writes only its own [BQ, d] output tile, so results do not
 * depend on the thread count. No mask: a single unpadded image attends everywhere (docs/NUMERICS.md
 * §4.1).
 *
 * Layout, for plain C that compilers vectorise without reassociating sums: the task keeps its
 * query tile, logits, probabilities and output transposed, query index fastest (qT[c][i],
 * S[j][i], O[c][i]), so every inner loop runs over the queries i of the tile with independent
 * sums. Each logit is still summed over c = 0..d-1 in order and each output over keys j in
 * order; the Q transpose happens once per task, not once per key tile.
 * This is the portable variant; g4v_attention (../attention.c) runs the one of the caller's
 * kernel table (dispatch.h).
 */
#include "kernels/dispatch.h"

#include <math.h>

enum { BQ = 64, BK = 64 };

/* Per worker: the task's qT and O [d][BQ], one key tile of logits S [BK][BQ], m, l and corr. */
static size_t scratch_floats(int d) {
    return 2 * (size_t)BQ * (size_t)d + (size_t)BK * BQ + 3 * (size_t)BQ;
}

typedef struct {
    const g4v_attn_args *a;
    int q_tiles;
} attn_job;

/* S[j][i] = scale * q_i . k_j for the nk keys of this tile (k rows start at k0). Four channels
 * per pass over s, written as ((((s + a0) + a1) + a2) + a3): the same order as one at a time,
 * with a quarter of the loads and stores of s. */
static void tile_logits(const g4v_attn_args *a, const float *qT, const float *k0, int nk,
                        float *S) {
    int d = a->d;
    for (int j = 0; j < nk; j++) {
        const float *k = k0 + (size_t)j * a->ldk;
        float *restrict s = S + (size_t)j * BQ;
        for (int i = 0; i < BQ; i++)
            s[i] = 0.0f;
        int c = 0;
        for (; c + 4 <= d; c += 4) {
            float k_0 = k[c], k_1 = k[c + 1], k_2 = k[c + 2], k_3 = k[c + 3];
            const float *restrict q0 = qT + (size_t)c * BQ, *restrict q1 = q0 + BQ;
            const float *restrict q2 = q1 + BQ, *restrict q3 = q2 + BQ;
            for (int i = 0; i < BQ; i++)
                s[i] = (((s[i] + q0[i] * k_0) + q1[i] * k_1) + q2[i] * k_2) + q3[i] * k_3;
        }
        for (; c < d; c++) {
            float kc = k[c];
            const float *restrict q = qT + (size_t)c * BQ;
            for (int i = 0; i < BQ; i++)
                s[i] += q[i] * kc;
        }
        for (int i = 0; i < BQ; i++)
            s[i] *= a->scale;
    }
}

/* Folds one key tile into the running (m, l, O): new max, rescale by exp(m_old - m_new) (exactly
 * 1 when the max did not move, 0 on the first tile), probabilities p = exp(s - m) written over S,
 * l += p and O += p v, keys in order. */
static void tile_update(const g4v_attn_args *a, float *S, const float *v0, int nk,
                        float *restrict m, float *restrict l, float *restrict corr, float *O) {
    int d = a->d;
    for (int i = 0; i < BQ; i++)
        corr[i] = m[i];
    for (int j = 0; j < nk; j++) {
        const float *restrict s = S + (size_t)j * BQ;
        for (int i = 0; i < BQ; i++)
            m[i] = s[i] > m[i] ? s[i] : m[i];
    }
    for (int i = 0; i < BQ; i++) {
        corr[i] = expf(corr[i] - m[i]);
        l[i] *= corr[i];
    }
    for (int c = 0; c < d; c++) {
        float *restrict o = O + (size_t)c * BQ;
        for (int i = 0; i < BQ; i++)
            o[i] *= corr[i];
    }
    for (int j = 0; j < nk; j++) {
        float *restrict p = S + (size_t)j * BQ;
        for (int i = 0; i < BQ; i++)
            p[i] = expf(p[i] - m[i]);
        for (int i = 0; i < BQ; i++)
            l[i] += p[i];
    }
    int j = 0;
    for (; j + 4 <= nk; j += 4) { /* four keys per pass over O, same order as one at a time */
        const float *restrict p0 = S + (size_t)j * BQ, *restrict p1 = p0 + BQ;
        const float *restrict p2 = p1 + BQ, *restrict p3 = p2 + BQ;
        const float *v = v0 + (size_t)j * a->ldv;
        for (int c = 0; c < d; c++) {
            float v_0 = v[c], v_1 = v[a->ldv + c], v_2 = v[2 * a->ldv + c], v_3 = v[3 * a->ldv + c];
            float *restrict o = O + (size_t)c * BQ;
            for (int i = 0; i < BQ; i++)
                o[i] = (((o[i] + p0[i] * v_0) + p1[i] * v_1) + p2[i] * v_2) + p3[i] * v_3;
        }
    }
    for (; j < nk; j++) {
        const float *restrict p = S + (size_t)j * BQ, *v = v0 + (size_t)j * a->ldv;
        for (int c = 0; c < d; c++) {
            float vc = v[c];
            float *restrict o = O + (size_t)c * BQ;
            for (int i = 0; i < BQ; i++)
                o[i] += p[i] * vc;
        }
    }
}

static void attn_task(void *varg, int task, int worker) {
    const attn_job *job = varg;
    const g4v_attn_args *a = job->a;
    int h = task / job->q_tiles, qt = task % job->q_tiles;
    int kvh = h / (a->H / a->Hkv);
    int q_start = qt * BQ, nq = a->nq - q_start < BQ ? a->nq - q_start : BQ;
    int d = a->d;
    size_t hsk = a->hsk ? a->hsk : (size_t)d, hsv = a->hsv ? a->hsv : (size_t)d;

    float *qT = a->scratch + (size_t)worker * scratch_floats(d);
    float *O = qT + (size_t)BQ * d, *S = O + (size_t)BQ * d;
    float *m = S + (size_t)BK * BQ, *l = m + BQ, *corr = l + BQ;
    /* Lanes i >= nq of a last, partial tile run on zero queries: finite, never written out. */
    for (int i = 0; i < BQ; i++) {
        if (i < nq) {
            const float *q = a->q + (size_t)(q_start + i) * a->ldq + (size_t)h * d;
            for (int c = 0; c < d; c++)
                qT[(size_t)c * BQ + i] = q[c];
        } else {
            for (int c = 0; c < d; c++)
                qT[(size_t)c * BQ + i] = 0.0f;
        }
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    for (size_t i = 0; i < (size_t)BQ * d; i++)
        O[i] = 0.0f;

    for (int k_start = 0; k_start < a->nk; k_start += BK) {
        int nk = a->nk - k_start < BK ? a->nk - k_start : BK;
        const float *k0 = a->k + (size_t)k_start * a->ldk + (size_t)kvh * hsk;
        const float *v0 = a->v + (size_t)k_start * a->ldv + (size_t)kvh * hsv;
        tile_logits(a, qT, k0, nk, S);
        tile_update(a, S, v0, nk, m, l, corr, O);
    }
    for (int i = 0; i < nq; i++) {
        float *out = a->out + (size_t)(q_start + i) * a->ldo + (size_t)h * d;
        float inv = 1.0f / l[i];
        for (int c = 0; c < d; c++)
            out[c] = O[(size_t)c * BQ + i] * inv;
    }
}

static void attention_portable(g4v_pool *pool, const g4v_attn_args *a) {
    if (a->nq <= 0 || a->nk <= 0) return;
    attn_job job = {a, (a->nq + BQ - 1) / BQ};
    g4v_pool_run(pool, a->H * job.q_tiles, attn_task, &job);
}

/* Reads K and V as they are: no prepared form. */
const g4v_attention_kernel g4v_attention_portable = {.run = attention_portable,
                                                     .scratch_floats = scratch_floats};
