/* attention_avx512bf16.c - flash-style attention with both products on the bf16 dot-product unit
 * (vdpbf16ps), for FAST models only (registered with G4V_KERNEL_FAST_ONLY, dispatch.h).
 *
 * The online softmax of the f32 kernels (vec/attention_tile.h) over the shared walk
 * (attention_walk.h), tiled for this unit: a task is one head and up to NSUB (8) register tiles of
 * 48 queries; keys come in tiles of 64, each rounded and packed once per task and then used by all
 * its query tiles (not once per query tile, which would repeat the work NSUB times); the products
 * run in blocks of 8 keys (Q Kᵀ) and 8 channels (P V), 24 accumulators each. With these
 * roundings, as flash-attention implementations do:
 *  - k and v are rounded to bf16 (nearest even) when a key tile is packed, q when a task packs its
 *    queries, after multiplying them by scale * log2(e): q.k is then the logit in log2 units, so
 *    p = 2^(s - m) by a degree-4 polynomial (exp2_nonpos), with no multiply per logit;
 *  - logits, the running max and sum and the rescaling stay f32;
 *  - the probabilities p are rounded to bf16 for P V, and the running sum adds the rounded p (the
 *    pair against (1, 1) on the dot-product unit), so the output is an exact convex combination
 *    of the rows of bf16 V it used.
 * Each vdpbf16ps adds the products of one pair (two channels for Q Kᵀ, two keys for P V) into an
 * f32 accumulator: half the instructions of the f32 FMA kernel for the same work, at the same
 * per-instruction rate on Zen 4/5. The accuracy cost is measured in docs/NUMERICS.md (about a bf16
 * ulp of the logit's scale on each logit: sharp attention amplifies it), which is why PRECISE never
 * uses this variant.
 *
 * Packed layouts (32-bit words holding a bf16 pair, low half first, as vdpbf16ps reads them):
 *  - qP[cp][i]  = (q_i[2cp], q_i[2cp+1]): the task's queries, a zmm = 16 queries of one pair;
 *  - kb[j][c]   = k_j[c] as bf16: a broadcast 32-bit load at channel 2cp is the pair;
 *  - vP[jp][c]  = (v_2jp[c], v_2jp+1[c]): two key rows interleaved, broadcast per channel;
 *  - pP[jp][i]  = (p_2jp[i], p_2jp+1[i]): the tile's probabilities, 16 queries per zmm.
 * An odd head_dim gets a zero channel, an odd key count a zero key (p = 0, v = 0): both add exact
 * zeros. Each task writes only its own output tile: bits do not depend on the thread count.
 * A caller that runs several calls over the same keys (the encoder: one per chunk of queries)
 * prepares kb and vP once per layer (prepare_kv, the descriptor's K/V form, a->kv_prepared); a task
 * then reads its key tiles from there instead of packing them: the same words, the same bits.
 */
#include "kernels/attention_walk.h"
#include "kernels/dispatch.h"

#define G4V_VEC_BITS 512
#include "bf16_round.h"
#include "kernels/vec/vec.h"

#include "base/dtype.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* QB queries per register tile, up to NSUB register tiles per task (each key tile it rounds and
 * packs serves all of them), KB keys per key tile, RBK keys / RBC channels per product block. */
enum { QV = 3, QB = 16 * QV, NSUB = 8, KB = 64, RBK = 8, RBC = 8 };
enum { Q_PREFETCH = 8 }; /* query rows ahead that pack_queries asks the cache for */

/* Logits are kept in log2 units (scale * log2(e) * q.k), so that p = 2^(s - m): the same softmax,
 * without the multiply by log2(e) inside the exponential. */
#define LOG2E 1.44269504088896341f

/* x itself when 16 floats are there, else the n < 16 floats copied into t and zero-padded: a
 * 16-float load from the result never reads past x[n). (No vector-valued helper: the emulated
 * build must not outline one.) */
static inline const float *padded16(const float *x, int n, float t[16]) {
    if (n >= 16) return x;
    memset(t, 0, sizeof(float) * 16);
    memcpy(t, x, sizeof(float) * (size_t)n);
    return t;
}

/* 2^x for x <= 0: the softmax's p = 2^(s - m), logits being in log2 units (pack_queries folds
 * scale * log2(e) into q). p is rounded to bf16 (relative step 2^-8) right after, so a degree-4
 * polynomial for 2^f, f = x - round(x) in [-1/2, 1/2], is enough: 2.7e-6 relative error (fitted
 * for relative error, evaluated in f32), 4 FMAs where the f32 kernels' expf spends 11 multiplies
 * and FMAs on the pipes vdpbf16ps needs; vrndscaleps and vscalefps take n = round(x) out and put
 * 2^n back in one instruction each (fewer instructions than a shift-and-add of the exponent
 * bits, same bits). x must be finite: a very negative x gives 0 or a subnormal, which the bf16
 * conversion flushes to 0 (a key that far below the tile's largest term adds nothing). */
static inline __m512 exp2_nonpos(__m512 x) {
    __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(9.570007212e-3f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.591785163e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.402474731e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931217909e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.999992847e-1f));
    return _mm512_scalef_ps(p, n); /* p * 2^n */
}

/* The running max's correction 2^(m - mnew): m is -inf before the first key tile (and -inf - x
 * has no finite exponent), so x is clamped at -125 first; 2^-125 against the new max is 0 in
 * effect, as the -inf start intends. */
static inline __m512 exp2_correction(__m512 x) {
    return exp2_nonpos(_mm512_max_ps(x, _mm512_set1_ps(-125.0f)));
}

/* qP[cp][i] = (bf16(s q_i[2cp]), bf16(s q_i[2cp + 1])) for the tile's queries i < nq, zero words
 * for the lanes after them and for the pad channel of an odd d; s = qscale = scale * log2(e), so
 * that q.k is the logit in log2 units with no multiply per logit. Each query row is scaled and
 * rounded 16 channels at a time: the bf16 of channels (2cp, 2cp + 1) side by side are the pair's
 * word. */
static void pack_queries(const float *q0, size_t ldq, int d, int nq, float qscale, uint32_t *qP) {
    int np = (d + 1) / 2;
    for (int i = 0; i < QB; i++) {
        const float *q = q0 + (size_t)i * ldq;
        /* The rows are a head's slice of [L, H d] rows, ldq apart: each is a miss the hardware
         * prefetcher does not foresee (profiles show the kernel waiting on this load), so the
         * row Q_PREFETCH ahead is asked for now. */
        if (i + Q_PREFETCH < nq)
            for (int c = 0; c < d; c += 16)
                __builtin_prefetch(q + (size_t)Q_PREFETCH * ldq + c);
        if (i >= nq) {
            for (int cp = 0; cp < np; cp++)
                qP[(size_t)cp * QB + i] = 0;
            continue;
        }
        for (int c = 0; c < d; c += 16) {
            int n = d - c < 16 ? d - c : 16;
            float t[16];
            uint32_t w[8];
            __m512 x =
                _mm512_mul_ps(_mm512_loadu_ps(padded16(q + c, n, t)), _mm512_set1_ps(qscale));
            __m512i b = bf16_bits(x);
            _mm256_storeu_si256((__m256i *)w, _mm512_cvtepi32_epi16(b));
            for (int k = 0; k < (n + 1) / 2; k++)
                qP[(size_t)(c / 2 + k) * QB + i] = w[k];
        }
    }
}

/* kb[j][0..dp) = bf16(k_j), with a zero channel when d is odd. */
static void pack_keys(const float *k0, size_t ldk, int d, int dp, int nk, uint16_t *kb) {
    for (int j = 0; j < nk; j++) {
        const float *k = k0 + (size_t)j * ldk;
        uint16_t *dst = kb + (size_t)j * dp;
        int c = 0;
        for (; c + 16 <= d; c += 16)
            _mm256_storeu_si256((__m256i *)(dst + c),
                                _mm512_cvtepi32_epi16(bf16_bits(_mm512_loadu_ps(k + c))));
        for (; c < d; c++)
            dst[c] = g4v_f32_to_bf16(k[c]);
        if (dp > d) dst[d] = 0;
    }
}

/* vP[jp][0..d) = (bf16(v_2jp[c]), bf16(v_2jp+1[c])); a missing last key of an odd tile is 0. */
static void pack_values(const float *v0, size_t ldv, int d, int nk, uint32_t *vP) {
    for (int jp = 0; jp < (nk + 1) / 2; jp++) {
        const float *a = v0 + (size_t)(2 * jp) * ldv, *b = a + ldv;
        int has_b = 2 * jp + 1 < nk;
        uint32_t *dst = vP + (size_t)jp * d;
        for (int c = 0; c < d; c += 16) {
            int n = d - c < 16 ? d - c : 16;
            float ta[16], tb[16];
            __m512i w = bf16_bits(_mm512_loadu_ps(padded16(a + c, n, ta)));
            if (has_b)
                w = _mm512_or_si512(
                    w, _mm512_slli_epi32(bf16_bits(_mm512_loadu_ps(padded16(b + c, n, tb))), 16));
            if (n == 16) {
                _mm512_storeu_si512(dst + c, w);
            } else {
                uint32_t t[16];
                _mm512_storeu_si512(t, w);
                memcpy(dst + c, t, sizeof(uint32_t) * (size_t)n);
            }
        }
    }
}

/* S[j][0..QB) = q . k_j for the nk keys of the tile (q already scaled), over the np channel pairs
 * in order; mnew = the largest of m (the running max) and the tile's logits, per query. */
static void tile_logits(const uint32_t *qP, const uint16_t *kb, int dp, int nk, float *S,
                        const float *m, float *mnew) {
    int np = dp / 2;
    __m512 mx[QV];
    G4V_UNROLL(3)
    for (int v = 0; v < QV; v++)
        mx[v] = _mm512_load_ps(m + 16 * v);
    int j = 0;
    for (; j + RBK <= nk; j += RBK) {
        const uint16_t *k = kb + (size_t)j * dp;
        __m512 acc[RBK][QV];
        G4V_UNROLL(8)
        for (int r = 0; r < RBK; r++) {
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                acc[r][v] = _mm512_setzero_ps();
        }
        for (int cp = 0; cp < np; cp++) {
            __m512i q[QV];
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                q[v] = _mm512_loadu_si512(qP + (size_t)cp * QB + 16 * v);
            G4V_UNROLL(8)
            for (int r = 0; r < RBK; r++) {
                uint32_t pair;
                memcpy(&pair, k + (size_t)r * dp + 2 * cp, sizeof pair);
                __m512i b = _mm512_set1_epi32((int)pair);
                G4V_UNROLL(3)
                for (int v = 0; v < QV; v++)
                    acc[r][v] = _mm512_dpbf16_ps(acc[r][v], g4v_as_bh(q[v]), g4v_as_bh(b));
            }
        }
        G4V_UNROLL(8)
        for (int r = 0; r < RBK; r++) {
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++) {
                __m512 sv = acc[r][v];
                mx[v] = _mm512_max_ps(mx[v], sv);
                _mm512_store_ps(S + (size_t)(j + r) * QB + 16 * v, sv);
            }
        }
    }
    for (; j < nk; j++) { /* ragged end of the keys: one at a time */
        const uint16_t *k = kb + (size_t)j * dp;
        __m512 acc[QV];
        G4V_UNROLL(3)
        for (int v = 0; v < QV; v++)
            acc[v] = _mm512_setzero_ps();
        for (int cp = 0; cp < np; cp++) {
            uint32_t pair;
            memcpy(&pair, k + 2 * cp, sizeof pair);
            __m512i b = _mm512_set1_epi32((int)pair);
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                acc[v] = _mm512_dpbf16_ps(
                    acc[v], g4v_as_bh(_mm512_loadu_si512(qP + (size_t)cp * QB + 16 * v)),
                    g4v_as_bh(b));
        }
        G4V_UNROLL(3)
        for (int v = 0; v < QV; v++) {
            __m512 sv = acc[v];
            mx[v] = _mm512_max_ps(mx[v], sv);
            _mm512_store_ps(S + (size_t)j * QB + 16 * v, sv);
        }
    }
    G4V_UNROLL(3)
    for (int v = 0; v < QV; v++)
        _mm512_store_ps(mnew + 16 * v, mx[v]);
}

/* Folds one key tile into (m, l, O) given the new max mnew (tile_logits): corr = 2^(m - mnew),
 * p = bf16(2^(s - mnew)) packed in key pairs into pP, l = l * corr + p (keys in order),
 * O = O * corr + P V (key pairs in order per output), m = mnew. */
static void tile_update(const float *S, uint32_t *pP, const uint32_t *vP, int d, int nk, float *m,
                        const float *mnew, float *l, float *O) {
    __m512 mx[QV], corr[QV], sum[QV];
    G4V_UNROLL(3)
    for (int v = 0; v < QV; v++)
        mx[v] = _mm512_load_ps(mnew + 16 * v);
    G4V_UNROLL(3)
    for (int v = 0; v < QV; v++) {
        corr[v] = exp2_correction(_mm512_sub_ps(_mm512_load_ps(m + 16 * v), mx[v]));
        sum[v] = _mm512_mul_ps(_mm512_load_ps(l + 16 * v), corr[v]);
    }
    const __m512i ones = _mm512_set1_epi32(0x3f803f80); /* the bf16 pair (1, 1) */
    int npairs = (nk + 1) / 2;
    for (int jp = 0; jp < npairs; jp++) {
        const float *s0 = S + (size_t)(2 * jp) * QB, *s1 = s0 + QB;
        int has1 = 2 * jp + 1 < nk;
        G4V_UNROLL(3)
        for (int v = 0; v < QV; v++) {
            __m512 p0 = exp2_nonpos(_mm512_sub_ps(_mm512_load_ps(s0 + 16 * v), mx[v]));
            __m512 p1 = has1 ? exp2_nonpos(_mm512_sub_ps(_mm512_load_ps(s1 + 16 * v), mx[v]))
                             : _mm512_setzero_ps();
            __m512i w = bf16_pairs(p0, p1);
            _mm512_store_si512(pP + (size_t)jp * QB + 16 * v, w);
            /* the sum adds the rounded p: the pair against (1, 1) on the dot-product unit */
            sum[v] = _mm512_dpbf16_ps(sum[v], g4v_as_bh(w), g4v_as_bh(ones));
        }
    }
    G4V_UNROLL(3)
    for (int v = 0; v < QV; v++) {
        _mm512_store_ps(m + 16 * v, mx[v]);
        _mm512_store_ps(l + 16 * v, sum[v]);
    }

    int c = 0;
    for (; c + RBC <= d; c += RBC) {
        float *o = O + (size_t)c * QB;
        __m512 acc[RBC][QV];
        G4V_UNROLL(8)
        for (int r = 0; r < RBC; r++) {
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                acc[r][v] = _mm512_mul_ps(_mm512_load_ps(o + (size_t)r * QB + 16 * v), corr[v]);
        }
        const uint32_t *vr = vP + c;
        for (int jp = 0; jp < npairs; jp++, vr += d) {
            __m512i p[QV];
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                p[v] = _mm512_load_si512(pP + (size_t)jp * QB + 16 * v);
            G4V_UNROLL(8)
            for (int r = 0; r < RBC; r++) {
                __m512i b = _mm512_set1_epi32((int)vr[r]);
                G4V_UNROLL(3)
                for (int v = 0; v < QV; v++)
                    acc[r][v] = _mm512_dpbf16_ps(acc[r][v], g4v_as_bh(p[v]), g4v_as_bh(b));
            }
        }
        G4V_UNROLL(8)
        for (int r = 0; r < RBC; r++) {
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                _mm512_store_ps(o + (size_t)r * QB + 16 * v, acc[r][v]);
        }
    }
    for (; c < d; c++) { /* channels beyond a multiple of 4 */
        float *o = O + (size_t)c * QB;
        __m512 acc[QV];
        G4V_UNROLL(3)
        for (int v = 0; v < QV; v++)
            acc[v] = _mm512_mul_ps(_mm512_load_ps(o + 16 * v), corr[v]);
        for (int jp = 0; jp < npairs; jp++) {
            __m512i b = _mm512_set1_epi32((int)vP[(size_t)jp * d + c]);
            G4V_UNROLL(3)
            for (int v = 0; v < QV; v++)
                acc[v] = _mm512_dpbf16_ps(
                    acc[v], g4v_as_bh(_mm512_load_si512(pP + (size_t)jp * QB + 16 * v)),
                    g4v_as_bh(b));
        }
        G4V_UNROLL(3)
        for (int v = 0; v < QV; v++)
            _mm512_store_ps(o + 16 * v, acc[v]);
    }
}

/* The prepared form (prepare_kv): what pack_keys and pack_values write per key
 * tile, laid out for all nk keys of every kv head, so that a tile of it is the packed tile. */
typedef struct {
    uint16_t *kb;            /* [Hkv][nk][dp] */
    uint32_t *vP;            /* [Hkv][ceil(nk/2)][d] */
    size_t head_kb, head_vp; /* kv head strides in elements */
} kv_form;

static size_t round64(size_t n) {
    return (n + 63) & ~(size_t)63;
}

/* The form's layout for nk keys: head strides, where vP starts (bytes) and the whole size. */
static void kv_layout(int nk, int Hkv, int d, kv_form *f, size_t *v_off, size_t *bytes) {
    size_t dp = (size_t)(d + 1) & ~(size_t)1, np = ((size_t)nk + 1) / 2;
    f->head_kb = (size_t)nk * dp;
    f->head_vp = np * (size_t)d;
    *v_off = round64((size_t)Hkv * f->head_kb * sizeof(uint16_t));
    *bytes = *v_off + round64((size_t)Hkv * f->head_vp * sizeof(uint32_t));
}

static kv_form kv_form_of(const void *base, int nk, int Hkv, int d) {
    kv_form f;
    size_t v_off, bytes;
    kv_layout(nk, Hkv, d, &f, &v_off, &bytes);
    f.kb = (uint16_t *)base;
    f.vP = (uint32_t *)((char *)base + v_off);
    return f;
}

static size_t kv_bytes(int nk, int Hkv, int d) {
    kv_form f;
    size_t v_off, bytes;
    kv_layout(nk, Hkv, d, &f, &v_off, &bytes);
    return bytes;
}

enum { PREP_KEYS = 4 * KB }; /* keys per preparation task (even: key pairs stay whole) */

typedef struct {
    const g4v_attn_walk *job;
    kv_form f;
    int j0, j1, nk_all; /* the keys [j0, j1) of a form for nk_all keys */
    int first, blocks;  /* PREP_KEYS-key blocks of the absolute key grid: first .. first+blocks */
} prep_job;

/* vP's half for key j (low half: even j) of channel c, as a 16-bit slot: the keys of a pair may
 * come from two calls (a piece of keys that starts or ends at an odd index). */
static void pack_value_half(const float *v, int d, int j, uint32_t *vP) {
    uint16_t *h = (uint16_t *)(vP + (size_t)(j / 2) * d) + (j & 1);
    for (int c = 0; c < d; c++)
        h[2 * (size_t)c] = g4v_f32_to_bf16(v[c]);
}

static void prep_task(void *varg, int task, int worker) {
    (void)worker;
    const prep_job *pj = varg;
    const g4v_attn_args *a = pj->job->a;
    int nb = pj->blocks, g = task / nb, b = pj->first + task % nb, d = a->d, dp = (d + 1) & ~1;
    int s = b * PREP_KEYS > pj->j0 ? b * PREP_KEYS : pj->j0; /* absolute keys [s, e) */
    int e = (b + 1) * PREP_KEYS < pj->j1 ? (b + 1) * PREP_KEYS : pj->j1;
    const float *k = a->k + (size_t)g * pj->job->head_k + (size_t)(s - pj->j0) * a->ldk;
    const float *v = a->v + (size_t)g * pj->job->head_v;
    uint32_t *vP = pj->f.vP + (size_t)g * pj->f.head_vp;
#define V_ROW(j) (v + (size_t)((j) - pj->j0) * a->ldv)
    pack_keys(k, a->ldk, d, dp, e - s, pj->f.kb + (size_t)g * pj->f.head_kb + (size_t)s * dp);
    if (s & 1) pack_value_half(V_ROW(s), d, s, vP), s++; /* the second key of a pair */
    int pairs_end = e == pj->nk_all ? e : e & ~1; /* the form's last odd key: pack_values pads */
    if (pairs_end > s) pack_values(V_ROW(s), a->ldv, d, pairs_end - s, vP + (size_t)(s / 2) * d);
    if (pairs_end < e) pack_value_half(V_ROW(e - 1), d, e - 1, vP); /* its pair's next call */
#undef V_ROW
}
typedef struct {
    uint32_t *qP;
    float *O, *m, *l;
} sub_tile;

/* Scratch per worker (scratch_floats(d), 64-byte aligned pieces): per register tile qP [dp/2][QB]
 * words, O [d][QB], m, l [QB]; one S [KB][QB], mnew [QB], pP [KB/2][QB], kb [KB][dp] bf16,
 * vP [KB/2][d] words. Each piece is rounded up to 16 floats (g4v_attn_take), plus the slack to
 * align the start. */
static size_t scratch_floats(int d) {
    size_t dp2 = (size_t)(d + 1) / 2, rnd = 16;
    size_t per_tile = QB * dp2 + QB * (size_t)d + 2 * QB + 3 * rnd;
    return NSUB * per_tile + KB * QB + QB + (KB / 2) * QB + KB * dp2 + (KB / 2) * (size_t)d +
           5 * rnd + 16;
}

static void attn_task(void *varg, int task, int worker) {
    const g4v_attn_walk *w = varg;
    const g4v_attn_args *a = w->a;
    g4v_attn_task tk = g4v_attn_task_of(w, task, worker);
    int h = tk.h, kvh = tk.kvh, d = a->d, dp = (d + 1) & ~1;
    int q0 = tk.q0, nsub = (tk.nq + QB - 1) / QB;
    /* a->k and a->v may be NULL when the keys come prepared */
    const float *k = a->kv_prepared ? NULL : a->k + (size_t)kvh * w->head_k;
    const float *v = a->kv_prepared ? NULL : a->v + (size_t)kvh * w->head_v;

    float *p = tk.scratch;
    sub_tile t[NSUB];
    for (int s = 0; s < nsub; s++) {
        t[s].qP = g4v_attn_take(&p, (size_t)QB * (size_t)(dp / 2));
        t[s].O = g4v_attn_take(&p, (size_t)QB * d);
        t[s].m = g4v_attn_take(&p, QB);
        t[s].l = g4v_attn_take(&p, QB);
        int qs = q0 + s * QB, nq = a->nq - qs < QB ? a->nq - qs : QB;
        /* Lanes i >= nq of a last, partial tile run on zero queries: finite, never written out. */
        pack_queries(a->q + (size_t)qs * a->ldq + (size_t)h * d, a->ldq, d, nq, a->scale * LOG2E,
                     t[s].qP);
        g4v_attn_state_init(QB, d, t[s].m, t[s].l, t[s].O);
    }
    float *S = g4v_attn_take(&p, (size_t)KB * QB), *mnew = g4v_attn_take(&p, QB);
    uint32_t *pP = g4v_attn_take(&p, (size_t)(KB / 2) * QB);
    uint16_t *kb = g4v_attn_take(&p, (size_t)KB * dp / 2);
    uint32_t *vP = g4v_attn_take(&p, (size_t)(KB / 2) * d);

    kv_form pre = a->kv_prepared ? kv_form_of(a->kv_prepared, a->nk, a->Hkv, d) : (kv_form){0};
    for (int k_start = 0; k_start < a->nk; k_start += KB) {
        int nk = a->nk - k_start < KB ? a->nk - k_start : KB;
        if (a->kv_prepared) { /* the tile as pack_keys / pack_values would write it */
            kb = pre.kb + (size_t)kvh * pre.head_kb + (size_t)k_start * dp;
            vP = pre.vP + (size_t)kvh * pre.head_vp + (size_t)(k_start / 2) * d;
        } else {
            pack_keys(k + (size_t)k_start * a->ldk, a->ldk, d, dp, nk, kb);
            pack_values(v + (size_t)k_start * a->ldv, a->ldv, d, nk, vP);
        }
        for (int s = 0; s < nsub; s++) {
            tile_logits(t[s].qP, kb, dp, nk, S, t[s].m, mnew);
            tile_update(S, pP, vP, d, nk, t[s].m, mnew, t[s].l, t[s].O);
        }
    }
    for (int s = 0; s < nsub; s++) {
        int qs = q0 + s * QB, nq = a->nq - qs < QB ? a->nq - qs : QB;
        g4v_attn_write_out(a, h, qs, nq, QB, t[s].O, t[s].l);
    }
}

static void prepare_kv(g4v_pool *pool, const g4v_attn_args *a, int j0, int nk_all, void *dst) {
    if (a->nk <= 0) return;
    g4v_attn_walk job = g4v_attn_walk_of(a, QB * NSUB, scratch_floats(a->d), NULL);
    int j1 = j0 + a->nk, first = j0 / PREP_KEYS;
    prep_job pj = {.job = &job,
                   .f = kv_form_of(dst, nk_all, a->Hkv, a->d),
                   .j0 = j0,
                   .j1 = j1,
                   .nk_all = nk_all,
                   .first = first,
                   .blocks = (j1 + PREP_KEYS - 1) / PREP_KEYS - first};
    g4v_pool_run(pool, a->Hkv * pj.blocks, prep_task, &pj);
}

static void attention(g4v_pool *pool, const g4v_attn_args *a) {
    g4v_attn_walk w = g4v_attn_walk_of(a, QB * NSUB, scratch_floats(a->d), NULL);
    g4v_attn_walk_run(pool, &w, attn_task);
}

/* The prepared form: per kv head the keys rounded to bf16 ([nk][d rounded up to even], a zero pad
 * channel), then per kv head the values as bf16 key pairs ([ceil(nk/2)][d] 32-bit words, a zero
 * pad key). Pieces may start and end at odd keys (the value pair they split is written half by
 * each). */
const g4v_attention_kernel g4v_attention_avx512_bf16dp = {.run = attention,
                                                          .scratch_floats = scratch_floats,
                                                          .kv_bytes = kv_bytes,
                                                          .prepare_kv = prepare_kv};
