/* attention.c - softmax(scale * Q Kᵀ) V per head without ever holding an L x L matrix.
 *
 * Work is split into tasks of (head, tile of BQ queries). A task walks the keys in tiles of BK,
 * keeping for each of its queries the running max m, the running sum l of exp(s - m) and the
 * unnormalised output O (the "online softmax"); when a new tile raises the max, l and O are
 * rescaled by exp(m_old - m_new). At the end out = O / l. Memory per worker is
 * BQ*BK + BK*d + BQ*d + 2*BQ floats, so L = 10,080 costs nothing extra. Everything is f32 and
 * nothing is rounded to bf16: Gemma 4's scale-1 logits on RMS-normed q/k are large (std ~ sqrt(d)) and
 * the softmax is sharp, so rounding here would be amplified (DESIGN.md "Numerics").
 * Each task writes only its own [BQ, d] output tile, so results do not depend on thread count.
 * No mask: a single unpadded image attends everywhere (SPEC C.0).
 */
#include "kernels.h"

#include <math.h>

enum { BQ = 64, BK = 64 };

size_t g4v_attention_scratch_floats(int d) {
    return (size_t)BQ * BK + (size_t)BK * (size_t)d + (size_t)BQ * (size_t)d + 2 * (size_t)BQ;
}

typedef struct {
    const g4v_attn_args *a;
    int q_tiles;
} attn_job;

/* Logits S[i][j] = scale * q_i . k_j for the current query tile and key tile. The key tile is
 * first transposed (kT[c][j]) so the inner loop runs over j with independent sums (vectorisable
 * without reassociation); each S[i][j] is still summed over c = 0, 1, ..., d-1 in order. */
static void tile_logits(const g4v_attn_args *a, const float *q0, const float *k0, int nq, int nk,
                        float *S, float *kT) {
    int d = a->d;
    for (int j = 0; j < nk; j++) {
        const float *k = k0 + (size_t)j * a->ldk;
        for (int c = 0; c < d; c++) kT[c * BK + j] = k[c];
    }
    for (int i = 0; i < nq; i++) {
        const float *q = q0 + (size_t)i * a->ldq;
        float *s = S + i * BK;
        for (int j = 0; j < nk; j++) s[j] = 0.0f;
        for (int c = 0; c < d; c++) {
            float qc = q[c];
            const float *kc = kT + c * BK;
            for (int j = 0; j < nk; j++) s[j] += qc * kc[j];
        }
        for (int j = 0; j < nk; j++) s[j] *= a->scale;
    }
}

/* o[c] += sum over j of p[j] * v_j[c], j in order, for c in [c0, c0 + CB): a fixed-size block
 * so the accumulators stay in registers while the key rows stream past. */
enum { CB = 16 };
static void pv_block(const float *p, const float *v0, size_t ldv, int nk, float *o) {
    float acc[CB];
    for (int t = 0; t < CB; t++) acc[t] = o[t];
    for (int j = 0; j < nk; j++) {
        const float *v = v0 + (size_t)j * ldv;
        float pj = p[j];
        for (int t = 0; t < CB; t++) acc[t] += pj * v[t];
    }
    for (int t = 0; t < CB; t++) o[t] = acc[t];
}

/* Folds one key tile into the running (m, l, O) of each query of the tile; S is overwritten
 * with the probabilities exp(s - m). */
static void tile_update(const g4v_attn_args *a, float *S, const float *v0, int nq, int nk,
                        float *m, float *l, float *O) {
    int d = a->d;
    for (int i = 0; i < nq; i++) {
        float *s = S + i * BK;
        float mx = m[i];
        for (int j = 0; j < nk; j++) mx = s[j] > mx ? s[j] : mx;
        float *o = O + (size_t)i * d;
        if (mx > m[i]) { /* first tile (m = -inf) gives corr = 0 on zeros: harmless */
            float corr = expf(m[i] - mx);
            l[i] *= corr;
            for (int c = 0; c < d; c++) o[c] *= corr;
            m[i] = mx;
        }
        for (int j = 0; j < nk; j++) {
            s[j] = expf(s[j] - mx);
            l[i] += s[j];
        }
        int c = 0;
        for (; c + CB <= d; c += CB) pv_block(s, v0 + c, a->ldv, nk, o + c);
        for (; c < d; c++) { /* the last d % CB channels */
            float acc = o[c];
            for (int j = 0; j < nk; j++) acc += s[j] * v0[(size_t)j * a->ldv + c];
            o[c] = acc;
        }
    }
}

static void attn_task(void *varg, int task, int worker) {
    const attn_job *job = varg;
    const g4v_attn_args *a = job->a;
    int h = task / job->q_tiles, qt = task % job->q_tiles;
    int kvh = h / (a->H / a->Hkv);
    int q_start = qt * BQ, nq = a->L - q_start < BQ ? a->L - q_start : BQ;
    int d = a->d;

    float *S = a->scratch + (size_t)worker * g4v_attention_scratch_floats(d);
    float *kT = S + BQ * BK, *O = kT + (size_t)BK * d, *m = O + (size_t)BQ * d, *l = m + BQ;
    for (int i = 0; i < nq; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    for (size_t i = 0; i < (size_t)nq * d; i++) O[i] = 0.0f;

    const float *q0 = a->q + (size_t)q_start * a->ldq + (size_t)h * d;
    for (int k_start = 0; k_start < a->L; k_start += BK) {
        int nk = a->L - k_start < BK ? a->L - k_start : BK;
        const float *k0 = a->k + (size_t)k_start * a->ldk + (size_t)kvh * d;
        const float *v0 = a->v + (size_t)k_start * a->ldv + (size_t)kvh * d;
        tile_logits(a, q0, k0, nq, nk, S, kT);
        tile_update(a, S, v0, nq, nk, m, l, O);
    }
    for (int i = 0; i < nq; i++) {
        float *out = a->out + (size_t)(q_start + i) * a->ldo + (size_t)h * d;
        float inv = 1.0f / l[i];
        for (int c = 0; c < d; c++) out[c] = O[(size_t)i * d + c] * inv;
    }
}

void g4v_attention(g4v_pool *pool, const g4v_attn_args *a) {
    if (a->L <= 0) return;
    attn_job job = {a, (a->L + BQ - 1) / BQ};
    g4v_pool_run(pool, a->H * job.q_tiles, attn_task, &job);
}
