/* attention_amx.c - flash-style attention with both products on Intel AMX tiles (TDPBF16PS), for
 * FAST models only (G4V_KERNEL_FAST_ONLY), written over the tile vocabulary of amx_tile.h: real
 * tile instructions here, the emulator in the SIMDe test build and in the start-up self-test's
 * twin (attention_amx_twin.c defines G4V_AMX_EMU and AMX_VARIANT, then includes this file).
 *
 * The walk is attention_walk.h's: a task is one head and up to NSUB query tiles of QT = 16
 * queries; keys come in blocks of KB = 64, each used by all the task's query tiles. Both products
 * are transposed so that every vector of the softmax holds 16 queries (no horizontal reduction):
 *  - S^T = K Q^T: C tiles S[j][i] (16 keys x 16 queries), A = 16 keys x 32 channels of K (bf16,
 *    row-major, channels zero-padded to dp, a multiple of 32: d = 64 is two 32-steps, d = 72
 *    three), B = Q as channel pairs (qP[cp][i] = (q_i[2cp], q_i[2cp+1])). From zero per block;
 *    four C tiles (64 keys) are stored to S, f32.
 *  - The online softmax in f32 zmm vectors over S, keys in order: mnew = max(m, s_j over the
 *    block's keys), corr = exp(m - mnew), p_j = exp(s_j - mnew) rounded to bf16 (nearest even) and
 *    packed in key pairs, pP[jp][i] = (p_2jp[i], p_2jp+1[i]); l = l * corr, then + p_j for every
 *    key j of the block in order, adding the ROUNDED p_j (so the output is a convex combination
 *    of the bf16 rows of V it used); m = mnew. exp is vec/vec_exp.h's vec_exp_nonpos, the same as
 *    the f32 variants'.
 *  - O^T += V^T P^T: O lives in f32 scratch O[c][i]; per block it is rescaled there (O *= corr,
 *    vectors), then each channel tile (16 channels, the last d % 16) is loaded as C, gets two
 *    TDPBF16PS (keys 0-31, 32-63: A = V^T, 16 channels x 32 keys, B = a 32-key step of pP) and is
 *    stored back: no partial sum stays in a tile between blocks.
 * Rounding: q is multiplied by scale (f32) and rounded to bf16, k and v are rounded to bf16 (all
 * nearest even, as g4v_f32_to_bf16), p as above. Each tile product follows TDPBF16PS's own order
 * (amx_emu.h: even and odd FMA chains from 0 over the 16 pairs of a 32-step, their sum, then added
 * to C; bf16 and C inputs that are denormal read as zero, denormal results flushed): so the logits
 * of d = 72 are ((0 + t0) + t1) + t2 over the three 32-channel steps, and a block's P V adds its
 * two 32-key steps to the rescaled O in turn. Keys past nk in the last block are zero rows of K and
 * V with p = 0 (their logits are never read); query lanes past nq are zero queries, never written
 * out. Output: O[c][i] * (1 / l[i]).
 *
 * Tiles: one configuration for every call with the same d (tiles 0-5: 16 rows x 64 bytes; 6-7:
 * d % 16 rows for the last channel tile, unconfigured when d % 16 = 0). Tile use: S^T: C 0-3,
 * A 4, B 5; O^T: B 2 and 3 (pP's two steps), C 0 and A 4/5 for a full channel tile, C 6 and A 7
 * for the last partial one. Each task configures its thread (g4v_tile_configure: loaded only when
 * the thread holds another configuration) and releases the tiles (TILERELEASE) when it ends, so
 * a task is one configuration load and one release, and no tile state outlives a task.
 *
 * K/V form (prepare_kv, the descriptor's kv_bytes): per kv head, the keys as bf16 rows [nkp][dp]
 * (nkp = nk rounded up to KB, pad keys and channels zero), then per kv head and key block V^T as
 * bf16 [d][KB] (a block's A tiles contiguous, 128-byte rows). A task without the form packs each
 * block into scratch the same way: the same bytes, the same bits. Pieces of keys may start and
 * end anywhere; the piece that ends at nk zeroes the pad keys.
 */
#ifndef AMX_VARIANT
#define AMX_VARIANT(x) x
#endif

#include "kernels/dispatch.h"

#define G4V_VEC_BITS 512
#include "kernels/attention_walk.h"
#include "kernels/vec/vec.h"
#include "kernels/vec/vec_exp.h"
#include "kernels/x86_avx512/avx512.h"

#include "amx_tile.h"

#include "base/dtype.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* QT queries per query tile (a tile's 16 columns), NSUB query tiles per task, KB keys per block
 * (two 32-key steps of P V), PREP_BLOCKS key blocks per preparation task. */
enum { QT = 16, NSUB = 6, KB = 64, PREP_BLOCKS = 4 };

/* Channels padded to whole 32-channel steps of S^T's K dimension. */
static int padded_d(int d) {
    return (d + 31) & ~31;
}

static g4v_tile_config tile_config(int d) {
    int r = d % 16, wr = r ? 64 : 0;
    int rows[8] = {16, 16, 16, 16, 16, 16, r, r}, colsb[8] = {64, 64, 64, 64, 64, 64, wr, wr};
    return g4v_tile_config_make(8, rows, colsb);
}

/* qP[cp][i] = (bf16(scale q_i[2cp]), bf16(scale q_i[2cp+1])) for i < nq, zero words for the lanes
 * past nq and the pad channels. */
static void pack_queries(const float *q0, size_t ldq, int d, int dp, int nq, float scale,
                         uint32_t *qP) {
    memset(qP, 0, sizeof(uint32_t) * (size_t)(dp / 2) * QT);
    uint16_t *h = (uint16_t *)qP;
    for (int i = 0; i < nq; i++) {
        const float *q = q0 + (size_t)i * ldq;
        for (int c = 0; c < d; c++)
            h[2 * ((size_t)(c / 2) * QT + i) + (c & 1)] = g4v_f32_to_bf16(q[c] * scale);
    }
}

/* Keys [lo, hi) of a block (k and v at key lo's rows): kb[j][0..dp) = bf16(k_j) with zero pad
 * channels, vT[c][j] = bf16(v_j[c]). */
static void pack_block(const float *k, size_t ldk, const float *v, size_t ldv, int d, int dp,
                       int lo, int hi, uint16_t *kb, uint16_t *vT) {
    for (int j = lo; j < hi; j++) {
        const float *kr = k + (size_t)(j - lo) * ldk, *vr = v + (size_t)(j - lo) * ldv;
        uint16_t *dst = kb + (size_t)j * dp;
        for (int c = 0; c < d; c++)
            dst[c] = g4v_f32_to_bf16(kr[c]);
        for (int c = d; c < dp; c++)
            dst[c] = 0;
        for (int c = 0; c < d; c++)
            vT[(size_t)c * KB + j] = g4v_f32_to_bf16(vr[c]);
    }
}

/* The pad keys [from, KB) of a block: zero rows of K, zero columns of V^T. */
static void zero_block_tail(int d, int dp, int from, uint16_t *kb, uint16_t *vT) {
    if (from >= KB) return;
    memset(kb + (size_t)from * dp, 0, sizeof(uint16_t) * (size_t)(KB - from) * dp);
    for (int c = 0; c < d; c++)
        memset(vT + (size_t)c * KB + from, 0, sizeof(uint16_t) * (size_t)(KB - from));
}

/* S[j][i] (j < KB, i < QT) = q~_i . k~_j over dp channels, 32 per tile product, on tiles. */
static void block_logits(const uint32_t *qP, const uint16_t *kb, int dp, float *S) {
    size_t ks = (size_t)dp * sizeof(uint16_t), kg = (size_t)16 * dp;
    TILE_ZERO(0);
    TILE_ZERO(1);
    TILE_ZERO(2);
    TILE_ZERO(3);
    for (int st = 0; st < dp / 32; st++) {
        TILE_LOAD(5, qP + (size_t)st * 16 * QT, QT * sizeof(uint32_t));
        const uint16_t *k = kb + 32 * st;
        TILE_LOAD(4, k, ks);
        TILE_DPBF16PS(0, 4, 5);
        TILE_LOAD(4, k + kg, ks);
        TILE_DPBF16PS(1, 4, 5);
        TILE_LOAD(4, k + 2 * kg, ks);
        TILE_DPBF16PS(2, 4, 5);
        TILE_LOAD(4, k + 3 * kg, ks);
        TILE_DPBF16PS(3, 4, 5);
    }
    TILE_STORE(0, S, QT * sizeof(float));
    TILE_STORE(1, S + 16 * QT, QT * sizeof(float));
    TILE_STORE(2, S + 32 * QT, QT * sizeof(float));
    TILE_STORE(3, S + 48 * QT, QT * sizeof(float));
}

/* The softmax of one block (nk of its keys real): m, l updated, pP filled (zero words past the
 * real keys), O rescaled by corr = exp(m_old - m_new). */
static void block_softmax(const float *S, int nk, int d, float *m, float *l, uint32_t *pP,
                          float *O) {
    __m512 mx = _mm512_load_ps(m);
    for (int j = 0; j < nk; j++)
        mx = _mm512_max_ps(mx, _mm512_load_ps(S + (size_t)j * QT));
    __m512 corr = vec_exp_nonpos(_mm512_sub_ps(_mm512_load_ps(m), mx));
    __m512 sum = _mm512_mul_ps(_mm512_load_ps(l), corr);
    const __m512i hi_half = _mm512_set1_epi32((int)0xffff0000u);
    for (int jp = 0; jp < KB / 2; jp++) {
        int j = 2 * jp;
        __m512i w = _mm512_setzero_si512();
        if (j < nk) {
            __m512 p0 = vec_exp_nonpos(_mm512_sub_ps(_mm512_load_ps(S + (size_t)j * QT), mx));
            __m512 p1 = j + 1 < nk ? vec_exp_nonpos(_mm512_sub_ps(
                                         _mm512_load_ps(S + (size_t)(j + 1) * QT), mx))
                                   : _mm512_setzero_ps();
            w = _mm512_or_si512(bf16_bits(p0), _mm512_slli_epi32(bf16_bits(p1), 16));
            /* the sum adds the rounded p, key by key */
            sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_slli_epi32(w, 16)));
            if (j + 1 < nk)
                sum = _mm512_add_ps(sum, _mm512_castsi512_ps(_mm512_and_si512(w, hi_half)));
        }
        _mm512_store_si512(pP + (size_t)jp * QT, w);
    }
    _mm512_store_ps(m, mx);
    _mm512_store_ps(l, sum);
    for (int c = 0; c < d; c++) {
        float *o = O + (size_t)c * QT;
        _mm512_store_ps(o, _mm512_mul_ps(_mm512_load_ps(o), corr));
    }
}

/* O[c][i] += sum over the block's keys j of v~_j[c] p~_j[i], on tiles: per channel tile, keys
 * 0-31 then 32-63. */
static void block_values(const uint32_t *pP, const uint16_t *vT, int d, float *O) {
    const size_t os = QT * sizeof(float), vs = KB * sizeof(uint16_t);
    TILE_LOAD(2, pP, QT * sizeof(uint32_t));
    TILE_LOAD(3, pP + 16 * QT, QT * sizeof(uint32_t));
    int ct = 0;
    for (; ct < d / 16; ct++) {
        float *o = O + (size_t)ct * 16 * QT;
        const uint16_t *v = vT + (size_t)ct * 16 * KB;
        TILE_LOAD(0, o, os);
        TILE_LOAD(4, v, vs);
        TILE_DPBF16PS(0, 4, 2);
        TILE_LOAD(5, v + 32, vs);
        TILE_DPBF16PS(0, 5, 3);
        TILE_STORE(0, o, os);
    }
    if (d % 16) { /* the last d % 16 channels: tiles 6 and 7 have that many rows */
        float *o = O + (size_t)ct * 16 * QT;
        const uint16_t *v = vT + (size_t)ct * 16 * KB;
        TILE_LOAD(6, o, os);
        TILE_LOAD(7, v, vs);
        TILE_DPBF16PS(6, 7, 2);
        TILE_LOAD(7, v + 32, vs);
        TILE_DPBF16PS(6, 7, 3);
        TILE_STORE(6, o, os);
    }
}

/* The K/V form for nk keys: where V^T starts (bytes) and the whole size; element strides. */
typedef struct {
    uint16_t *kb, *vT;
    size_t head_k, head_v; /* per kv head, in bf16 elements */
} kv_form;

static size_t round64(size_t n) {
    return (n + 63) & ~(size_t)63;
}

static void kv_layout(int nk, int Hkv, int d, kv_form *f, size_t *v_off, size_t *bytes) {
    size_t nkp = ((size_t)nk + KB - 1) / KB * KB;
    f->head_k = nkp * (size_t)padded_d(d);
    f->head_v = nkp * (size_t)d;
    *v_off = round64((size_t)Hkv * f->head_k * sizeof(uint16_t));
    *bytes = *v_off + round64((size_t)Hkv * f->head_v * sizeof(uint16_t));
}

static kv_form kv_form_of(const void *base, int nk, int Hkv, int d) {
    kv_form f;
    size_t v_off, bytes;
    kv_layout(nk, Hkv, d, &f, &v_off, &bytes);
    f.kb = (uint16_t *)base;
    f.vT = (uint16_t *)((char *)base + v_off);
    return f;
}

static size_t kv_bytes(int nk, int Hkv, int d) {
    kv_form f;
    size_t v_off, bytes;
    kv_layout(nk, Hkv, d, &f, &v_off, &bytes);
    return bytes;
}

/* Scratch per worker: per query tile qP [dp/2][QT] words, O [d][QT], m, l [QT]; one S [KB][QT],
 * pP [KB/2][QT] words, and a packed block (kb [KB][dp], vT [d][KB] bf16); each piece rounded up
 * to 16 floats, plus 16 for the alignment of the start. */
static size_t r16(size_t n) {
    return (n + 15) & ~(size_t)15;
}

static size_t scratch_floats(int d) {
    size_t dp = (size_t)padded_d(d);
    size_t per_tile = r16(dp / 2 * QT) + r16((size_t)d * QT) + 2 * r16(QT);
    return NSUB * per_tile + r16((size_t)KB * QT) + r16(KB / 2 * QT) + r16(KB * dp / 2) +
           r16((size_t)d * KB / 2) + 16;
}

static void attn_task(void *varg, int task, int worker) {
    const g4v_attn_walk *w = varg;
    const g4v_attn_args *a = w->a;
    g4v_attn_task t = g4v_attn_task_of(w, task, worker);
    int d = a->d, dp = padded_d(d), nsub = (t.nq + QT - 1) / QT;
    float *p = t.scratch;
    uint32_t *qP[NSUB];
    float *O[NSUB], *m[NSUB], *l[NSUB];
    for (int s = 0; s < nsub; s++) {
        qP[s] = g4v_attn_take(&p, (size_t)(dp / 2) * QT);
        O[s] = g4v_attn_take(&p, (size_t)d * QT);
        m[s] = g4v_attn_take(&p, QT);
        l[s] = g4v_attn_take(&p, QT);
        int qs = t.q0 + s * QT, nq = a->nq - qs < QT ? a->nq - qs : QT;
        pack_queries(a->q + (size_t)qs * a->ldq + (size_t)t.h * d, a->ldq, d, dp, nq, a->scale,
                     qP[s]);
        g4v_attn_state_init(QT, d, m[s], l[s], O[s]);
    }
    float *S = g4v_attn_take(&p, (size_t)KB * QT);
    uint32_t *pP = g4v_attn_take(&p, (size_t)(KB / 2) * QT);
    uint16_t *kb = g4v_attn_take(&p, (size_t)KB * dp / 2);
    uint16_t *vT = g4v_attn_take(&p, (size_t)d * KB / 2);
    kv_form pre = a->kv_prepared ? kv_form_of(a->kv_prepared, a->nk, a->Hkv, d) : (kv_form){0};

    g4v_tile_config cfg = tile_config(d);
    g4v_tile_configure(&cfg);
    for (int k0 = 0; k0 < a->nk; k0 += KB) {
        int nk = a->nk - k0 < KB ? a->nk - k0 : KB;
        if (a->kv_prepared) {
            kb = pre.kb + (size_t)t.kvh * pre.head_k + (size_t)k0 * dp;
            vT = pre.vT + (size_t)t.kvh * pre.head_v + (size_t)k0 * d;
        } else {
            pack_block(a->k + (size_t)t.kvh * w->head_k + (size_t)k0 * a->ldk, a->ldk,
                       a->v + (size_t)t.kvh * w->head_v + (size_t)k0 * a->ldv, a->ldv, d, dp, 0,
                       nk, kb, vT);
            zero_block_tail(d, dp, nk, kb, vT);
        }
        for (int s = 0; s < nsub; s++) {
            block_logits(qP[s], kb, dp, S);
            block_softmax(S, nk, d, m[s], l[s], pP, O[s]);
            block_values(pP, vT, d, O[s]);
        }
    }
    TILE_RELEASE();
    for (int s = 0; s < nsub; s++) {
        int qs = t.q0 + s * QT, nq = a->nq - qs < QT ? a->nq - qs : QT;
        g4v_attn_write_out(a, t.h, qs, nq, QT, O[s], l[s]);
    }
}

static void attention(g4v_pool *pool, const g4v_attn_args *a) {
    g4v_attn_walk w = g4v_attn_walk_of(a, QT * NSUB, scratch_floats(a->d), NULL);
    g4v_attn_walk_run(pool, &w, attn_task);
}

/* Preparation: a task is one kv head and up to PREP_BLOCKS key blocks of the piece [j0, j1) of
 * the form for nk_all keys. */
typedef struct {
    const g4v_attn_args *a;
    kv_form f;
    size_t head_k, head_v; /* a's kv head strides in floats */
    int j0, j1, nk_all;
    int first, blocks; /* key blocks first .. first + blocks - 1 */
    int tasks_per_head;
} prep_job;

static void prep_task(void *varg, int task, int worker) {
    (void)worker;
    const prep_job *pj = varg;
    const g4v_attn_args *a = pj->a;
    int d = a->d, dp = padded_d(d), g = task / pj->tasks_per_head;
    int b0 = pj->first + task % pj->tasks_per_head * PREP_BLOCKS;
    int b1 = b0 + PREP_BLOCKS < pj->first + pj->blocks ? b0 + PREP_BLOCKS : pj->first + pj->blocks;
    for (int b = b0; b < b1; b++) {
        int s = b * KB > pj->j0 ? b * KB : pj->j0; /* absolute keys [s, e) */
        int e = (b + 1) * KB < pj->j1 ? (b + 1) * KB : pj->j1;
        uint16_t *kb = pj->f.kb + (size_t)g * pj->f.head_k + (size_t)b * KB * dp;
        uint16_t *vT = pj->f.vT + (size_t)g * pj->f.head_v + (size_t)b * KB * d;
        pack_block(a->k + (size_t)g * pj->head_k + (size_t)(s - pj->j0) * a->ldk, a->ldk,
                   a->v + (size_t)g * pj->head_v + (size_t)(s - pj->j0) * a->ldv, a->ldv, d, dp,
                   s - b * KB, e - b * KB, kb, vT);
        if (e == pj->nk_all) zero_block_tail(d, dp, e - b * KB, kb, vT);
    }
}

static void prepare_kv(g4v_pool *pool, const g4v_attn_args *a, int j0, int nk_all, void *dst) {
    if (a->nk <= 0) return;
    int j1 = j0 + a->nk, first = j0 / KB, blocks = (j1 + KB - 1) / KB - first;
    prep_job pj = {.a = a,
                   .f = kv_form_of(dst, nk_all, a->Hkv, a->d),
                   .head_k = a->hsk ? a->hsk : (size_t)a->d,
                   .head_v = a->hsv ? a->hsv : (size_t)a->d,
                   .j0 = j0,
                   .j1 = j1,
                   .nk_all = nk_all,
                   .first = first,
                   .blocks = blocks,
                   .tasks_per_head = (blocks + PREP_BLOCKS - 1) / PREP_BLOCKS};
    g4v_pool_run(pool, a->Hkv * pj.tasks_per_head, prep_task, &pj);
}

const g4v_attention_kernel AMX_VARIANT(g4v_attention_amx) = {.run = attention,
                                                             .scratch_floats = scratch_floats,
                                                             .kv_bytes = kv_bytes,
                                                             .prepare_kv = prepare_kv};
