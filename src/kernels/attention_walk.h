/* attention_walk.h - the walk every tiled attention variant shares (vec/attention_tile.h, the
 * FAST variants in x86_avx512bf16/ and x86_amx/): the tasks, each worker's scratch, and the online
 * softmax's state around the variant's own products. Plain C, no vectors: it decides where work
 * goes and what state a query tile carries, never an arithmetic result, so every variant keeps
 * its own bits.
 *
 *  - Tasks: one per (head h, block of q_task consecutive queries); query head h reads kv head
 *    h / (H / Hkv). A task writes only its own [nq, d] output block, so results do not depend on
 *    the thread count or the order of tasks.
 *  - Scratch: worker w owns a->scratch + w * scratch_floats (the variant's scratch_floats(d), the
 *    stride g4v_attention_scratch_floats bounds), used from its first 64-byte boundary and cut
 *    into 64-byte aligned pieces by g4v_attn_take.
 *  - Online softmax state per query tile of qb queries (query index fastest): the running max
 *    m[qb] (-inf before the first key tile), the running sum l[qb] (0) and the unnormalised output
 *    O[d][qb] (0); a variant folds each key tile into them (its own rescale by the running max's
 *    correction, its own exp); at the end out[i][c] = O[c][i] * (1 / l[i]).
 */
#ifndef G4V_KERNELS_ATTENTION_WALK_H
#define G4V_KERNELS_ATTENTION_WALK_H

#include "base/pool.h"
#include "kernels/kernels.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef struct g4v_attn_walk {
    const g4v_attn_args *a;
    int q_task;            /* queries per task */
    int q_blocks;          /* tasks per head */
    size_t head_k, head_v; /* kv head strides (a->hsk, a->hsv with 0 read as d) */
    size_t worker_floats;  /* scratch floats per worker */
    const void *variant;   /* what the variant's task function needs besides a (or NULL) */
} g4v_attn_walk;

/* One task: head h reads kv head kvh; queries [q0, q0 + nq); scratch: its worker's piece from
 * its first 64-byte boundary. */
typedef struct g4v_attn_task {
    int h, kvh, q0, nq;
    float *scratch;
} g4v_attn_task;

static inline g4v_attn_walk g4v_attn_walk_of(const g4v_attn_args *a, int q_task,
                                             size_t worker_floats, const void *variant) {
    return (g4v_attn_walk){.a = a,
                           .q_task = q_task,
                           .q_blocks = (a->nq + q_task - 1) / q_task,
                           .head_k = a->hsk ? a->hsk : (size_t)a->d,
                           .head_v = a->hsv ? a->hsv : (size_t)a->d,
                           .worker_floats = worker_floats,
                           .variant = variant};
}

static inline g4v_attn_task g4v_attn_task_of(const g4v_attn_walk *w, int task, int worker) {
    const g4v_attn_args *a = w->a;
    g4v_attn_task t;
    t.h = task / w->q_blocks;
    t.kvh = t.h / (a->H / a->Hkv);
    t.q0 = task % w->q_blocks * w->q_task;
    t.nq = a->nq - t.q0 < w->q_task ? a->nq - t.q0 : w->q_task;
    float *base = a->scratch + (size_t)worker * w->worker_floats;
    t.scratch = (float *)(((uintptr_t)base + 63) & ~(uintptr_t)63);
    return t;
}

/* n 32-bit cells from a bump pointer, rounded up to whole cache lines (16 floats): a variant's
 * scratch_floats counts each piece rounded up to 16, plus 16 for the start's alignment. */
static inline void *g4v_attn_take(float **p, size_t n) {
    void *r = *p;
    *p += (n + 15) & ~(size_t)15;
    return r;
}

/* A query tile's state before its first key tile: m = -inf, l = 0, O = 0. */
static inline void g4v_attn_state_init(int qb, int d, float *m, float *l, float *O) {
    for (int i = 0; i < qb; i++) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
    }
    for (size_t i = 0; i < (size_t)qb * (size_t)d; i++)
        O[i] = 0.0f;
}

/* out rows [qs, qs + nq) of head h: out[i][c] = O[c][i] * (1 / l[i]). */
static inline void g4v_attn_write_out(const g4v_attn_args *a, int h, int qs, int nq, int qb,
                                      const float *O, const float *l) {
    int d = a->d;
    for (int i = 0; i < nq; i++) {
        float *out = a->out + (size_t)(qs + i) * a->ldo + (size_t)h * d;
        float inv = 1.0f / l[i];
        for (int c = 0; c < d; c++)
            out[c] = O[(size_t)c * qb + i] * inv;
    }
}

/* Every task of the walk on pool (nothing when there are no queries or no keys). */
static inline void g4v_attn_walk_run(g4v_pool *pool, const g4v_attn_walk *w, g4v_task_fn fn) {
    if (w->a->nq <= 0 || w->a->nk <= 0) return;
    g4v_pool_run(pool, w->a->H * w->q_blocks, fn, (void *)w);
}

#endif
