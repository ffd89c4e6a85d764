/* attention_tile.h - the flash-attention kernel of the SIMD variants, written once over the
 * vector vocabulary of vec.h. An ISA file defines G4V_VEC_BITS and ATTENTION_TILE_NAME (the
 * variant's g4v_attention_kernel descriptor to define, kernels.h) and includes this header once:
 * x86_avx2/attention_avx2.c (8-float ymm), x86_avx512/attention_avx512.c (16-float zmm),
 * arm64_neon/attention_neon.c (4-float q registers, six per tile).
 *
 * K and V are best given head-major (hsk = nk*d, ldk = d: a tile of keys is one contiguous block),
 * as the encoder writes them (g4v_heads_post.dst): in a row-major [L, Hkv*d] layout the rows of one
 * head sit 3 KB apart and a 64-key tile maps onto a quarter of the L1 sets, evicting itself
 * (bench_attention measures both layouts). Both layouts give the same bits.
 *
 * A task is (head, 96 consecutive queries) as NSUB register tiles of QV vectors (QB queries)
 * (4 x 24 with AVX2 and NEON, 2 x 48 with AVX-512); it walks the keys in tiles of KB = 64 with
 * the online softmax of portable/attention.c (running max m, sum l, unnormalised O, rescaled by
 * exp(m_old - m_new) when the max moves), each key tile serving all its register tiles while in
 * L1. Both products are 4 x QV-vector register blocks: 12 accumulators on x86, enough independent
 * FMA chains to keep two FMA pipes busy (8 left them waiting on latency); 24 on NEON (four
 * pipes). Layout as in the portable kernel, query index fastest: qT[c][i], S[j][i], O[c][i].
 *  - logits: 4 keys x QB queries, one FMA per channel, channels in order;
 *  - softmax: max, exp and sum vectorised over the queries (vec_exp_nonpos, <= 2 ulp);
 *  - P.V: 4 channels x QB queries of O, one FMA per key, keys in order.
 * Everything is f32, nothing is rounded to bf16. Differences from the portable kernel come only
 * from FMA's single rounding and the polynomial exp: tests measure the bound. Each task writes
 * only its own [QB, d] output tile, so results do not depend on the thread count, and the
 * variants differ from each other only in QB (the order of every sum is the same).
 */
#ifndef G4V_KERNELS_ATTENTION_TILE_H
#define G4V_KERNELS_ATTENTION_TILE_H

#include "vec.h"
#include "vec_exp.h"

#include "base/pool.h"
#include "kernels/attention_walk.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* QV vectors of queries per register tile (ATTENTION_QV, 3 unless the ISA file says: NEON's
 * 4-float vectors take 6), QB queries per register tile, NSUB tiles per task (96 queries in
 * every variant), KB keys per key tile. */
#ifndef ATTENTION_QV
#define ATTENTION_QV 3
#endif
enum { QV = ATTENTION_QV, QB = V_W * QV, NSUB = 96 / QB, KB = 64 };

/* S[j][0..QB) = scale * q . k_j for the nk keys of this tile; each sum runs c = 0..d-1. */
static void tile_logits(const float *qT, const float *k0, size_t ldk, int d, int nk, float scale,
                        float *S) {
    V_T sc = V_SET1(scale);
    int j = 0;
    for (; j + 4 <= nk; j += 4) {
        const float *k = k0 + (size_t)j * ldk;
        V_T acc[4][QV];
        G4V_UNROLL(4)
        for (int r = 0; r < 4; r++) {
            G4V_UNROLL(ATTENTION_QV)
            for (int v = 0; v < QV; v++)
                acc[r][v] = V_ZERO();
        }
        for (int c = 0; c < d; c++) {
            V_T q[QV];
            G4V_UNROLL(ATTENTION_QV)
            for (int v = 0; v < QV; v++)
                q[v] = V_LOAD(qT + (size_t)c * QB + V_W * v);
            G4V_UNROLL(4)
            for (int r = 0; r < 4; r++) {
                V_T b = V_BCAST(k + (size_t)r * ldk + c);
                G4V_UNROLL(ATTENTION_QV)
                for (int v = 0; v < QV; v++)
                    acc[r][v] = V_FMA(q[v], b, acc[r][v]);
            }
        }
        G4V_UNROLL(4)
        for (int r = 0; r < 4; r++) {
            G4V_UNROLL(ATTENTION_QV)
            for (int v = 0; v < QV; v++)
                V_STORE(S + (size_t)(j + r) * QB + V_W * v, V_MUL(acc[r][v], sc));
        }
    }
    for (; j < nk; j++) { /* ragged end of the keys: one at a time */
        const float *k = k0 + (size_t)j * ldk;
        V_T acc[QV];
        G4V_UNROLL(ATTENTION_QV)
        for (int v = 0; v < QV; v++)
            acc[v] = V_ZERO();
        for (int c = 0; c < d; c++) {
            V_T b = V_BCAST(k + c);
            G4V_UNROLL(ATTENTION_QV)
            for (int v = 0; v < QV; v++)
                acc[v] = V_FMA(V_LOAD(qT + (size_t)c * QB + V_W * v), b, acc[v]);
        }
        G4V_UNROLL(ATTENTION_QV)
        for (int v = 0; v < QV; v++)
            V_STORE(S + (size_t)j * QB + V_W * v, V_MUL(acc[v], sc));
    }
}

/* Folds one key tile into (m, l, O): new max, corr = exp(m_old - m_new), p = exp(s - m_new)
 * over S, l = l * corr + p (keys in order), O = O * corr + P V (keys in order per output). */
static void tile_update(float *S, const float *v0, size_t ldv, int d, int nk, float *m, float *l,
                        float *O) {
    V_T mx[QV], corr[QV], sum[QV];
    G4V_UNROLL(ATTENTION_QV)
    for (int v = 0; v < QV; v++)
        mx[v] = V_LOAD(m + V_W * v);
    for (int j = 0; j < nk; j++) {
        G4V_UNROLL(ATTENTION_QV)
        for (int v = 0; v < QV; v++)
            mx[v] = V_MAX(mx[v], V_LOAD(S + (size_t)j * QB + V_W * v));
    }
    G4V_UNROLL(ATTENTION_QV)
    for (int v = 0; v < QV; v++) {
        corr[v] = vec_exp_nonpos(V_SUB(V_LOAD(m + V_W * v), mx[v]));
        sum[v] = V_MUL(V_LOAD(l + V_W * v), corr[v]);
    }
    for (int j = 0; j < nk; j++) {
        float *s = S + (size_t)j * QB;
        G4V_UNROLL(ATTENTION_QV)
        for (int v = 0; v < QV; v++) {
            V_T p = vec_exp_nonpos(V_SUB(V_LOAD(s + V_W * v), mx[v]));
            V_STORE(s + V_W * v, p);
            sum[v] = V_ADD(sum[v], p);
        }
    }
    G4V_UNROLL(ATTENTION_QV)
    for (int v = 0; v < QV; v++) {
        V_STORE(m + V_W * v, mx[v]);
        V_STORE(l + V_W * v, sum[v]);
    }

    int c = 0;
    for (; c + 4 <= d; c += 4) {
        float *o = O + (size_t)c * QB;
        V_T acc[4][QV];
        G4V_UNROLL(4)
        for (int r = 0; r < 4; r++) {
            G4V_UNROLL(ATTENTION_QV)
            for (int v = 0; v < QV; v++)
                acc[r][v] = V_MUL(V_LOAD(o + (size_t)r * QB + V_W * v), corr[v]);
        }
        const float *vr = v0 + c;
        for (int j = 0; j < nk; j++, vr += ldv) {
            V_T p[QV];
            G4V_UNROLL(ATTENTION_QV)
            for (int v = 0; v < QV; v++)
                p[v] = V_LOAD(S + (size_t)j * QB + V_W * v);
            G4V_UNROLL(4)
            for (int r = 0; r < 4; r++) {
                V_T b = V_BCAST(vr + r);
                G4V_UNROLL(ATTENTION_QV)
                for (int v = 0; v < QV; v++)
                    acc[r][v] = V_FMA(p[v], b, acc[r][v]);
            }
        }
        G4V_UNROLL(4)
        for (int r = 0; r < 4; r++) {
            G4V_UNROLL(ATTENTION_QV)
            for (int v = 0; v < QV; v++)
                V_STORE(o + (size_t)r * QB + V_W * v, acc[r][v]);
        }
    }
    for (; c < d; c++) { /* channels beyond a multiple of 4 */
        float *o = O + (size_t)c * QB;
        V_T acc[QV];
        G4V_UNROLL(ATTENTION_QV)
        for (int v = 0; v < QV; v++)
            acc[v] = V_MUL(V_LOAD(o + V_W * v), corr[v]);
        for (int j = 0; j < nk; j++) {
            V_T b = V_BCAST(v0 + (size_t)j * ldv + c);
            G4V_UNROLL(ATTENTION_QV)
            for (int v = 0; v < QV; v++)
                acc[v] = V_FMA(V_LOAD(S + (size_t)j * QB + V_W * v), b, acc[v]);
        }
        G4V_UNROLL(ATTENTION_QV)
        for (int v = 0; v < QV; v++)
            V_STORE(o + V_W * v, acc[v]);
    }
}

/* Per worker, 64-byte aligned floats: per register tile qT, O [d][QB], m, l [QB]; one S [KB][QB];
 * and the slack for the alignment. */
static size_t tile_scratch_floats(int d) {
    return (size_t)NSUB * (2 * (size_t)QB * (size_t)d + 2 * (size_t)QB) + (size_t)KB * QB + 16;
}

/* One register tile's running state: its queries transposed, and the online softmax's O, m, l
 * (attention_walk.h). */
typedef struct {
    float *qT, *O, *m, *l;
} sub_tile;

/* A task (attention_walk.h) is NSUB register tiles of consecutive queries of one head, walking
 * the keys together: each K and V tile is used by all of them while it is in L1, which divides
 * the traffic from L2/L3 by NSUB (K and V of one head are 5 MB at L = 10,080). Every tile's
 * arithmetic is what it would be alone, so the tiling changes speed, never results.
 * Scratch per worker, 64-byte aligned floats: per tile qT, O [d][QB], m, l [QB]; one S [KB][QB]:
 * tile_scratch_floats(d) (above), which is also the stride between the workers' pieces. */
static void attn_task(void *varg, int task, int worker) {
    const g4v_attn_walk *w = varg;
    const g4v_attn_args *a = w->a;
    g4v_attn_task t = g4v_attn_task_of(w, task, worker);
    int d = a->d, nsub = (t.nq + QB - 1) / QB;
    const float *k = a->k + (size_t)t.kvh * w->head_k, *v = a->v + (size_t)t.kvh * w->head_v;

    float *p = t.scratch;
    sub_tile st[NSUB];
    for (int s = 0; s < nsub; s++) {
        st[s].qT = p;
        st[s].O = p + (size_t)QB * d;
        st[s].m = st[s].O + (size_t)QB * d;
        st[s].l = st[s].m + QB;
        p = st[s].l + QB;
        int qs = t.q0 + s * QB, nq = a->nq - qs < QB ? a->nq - qs : QB;
        /* Lanes i >= nq of a last, partial tile run on zero queries: finite, never written out. */
        for (int i = 0; i < QB; i++) {
            if (i < nq) {
                const float *q = a->q + (size_t)(qs + i) * a->ldq + (size_t)t.h * d;
                for (int c = 0; c < d; c++)
                    st[s].qT[(size_t)c * QB + i] = q[c];
            } else {
                for (int c = 0; c < d; c++)
                    st[s].qT[(size_t)c * QB + i] = 0.0f;
            }
        }
        g4v_attn_state_init(QB, d, st[s].m, st[s].l, st[s].O);
    }
    float *S = p;

    for (int k_start = 0; k_start < a->nk; k_start += KB) {
        int nk = a->nk - k_start < KB ? a->nk - k_start : KB;
        const float *kt = k + (size_t)k_start * a->ldk, *vt = v + (size_t)k_start * a->ldv;
        for (int s = 0; s < nsub; s++) {
            tile_logits(st[s].qT, kt, a->ldk, d, nk, a->scale, S);
            tile_update(S, vt, a->ldv, d, nk, st[s].m, st[s].l, st[s].O);
        }
    }
    for (int s = 0; s < nsub; s++) {
        int qs = t.q0 + s * QB, nq = a->nq - qs < QB ? a->nq - qs : QB;
        g4v_attn_write_out(a, t.h, qs, nq, QB, st[s].O, st[s].l);
    }
}

static void tile_attention(g4v_pool *pool, const g4v_attn_args *a) {
    g4v_attn_walk w = g4v_attn_walk_of(a, QB * NSUB, tile_scratch_floats(a->d), NULL);
    g4v_attn_walk_run(pool, &w, attn_task);
}

/* The variant's descriptor: reads K and V as they are (no prepared form). */
const g4v_attention_kernel ATTENTION_TILE_NAME = {.run = tile_attention,
                                                  .scratch_floats = tile_scratch_floats};

#endif
