/* gemm_driver.c - g4v_gemm: blocking, threading and edges around the micro-kernel (BLIS loop nest).
 *
 * Work is split into tasks by OUTPUT blocks only: a task owns rows [r0, r1) (whole MR-row tiles)
 * and columns of whole NR-wide B panels, and packs its rows of A once (clamp, bf16 rounding) into
 * thread-local scratch. Within a task, K is walked in chunks (BLIS's KC): for each chunk, for
 * each B panel, the micro-kernel runs over every tile of the task's rows, so the chunk of the B
 * panel (about half the L1) stays in L1 while the A chunks (about half the L2) stream from L2.
 * Partial sums of a chunk are stored exactly in f32 and the next chunk continues from them, so
 * every output element is summed by the same kernel in the same order whatever the blocking:
 * results are bit-identical for any thread count and any grid. Tasks never share an output.
 * Tiles at the M/N edges are computed whole into a local tile and only their valid part is
 * written, with the epilogue applied here in the same way as in the kernel.
 * Without scratch (allocation failure) a task packs A per tile and per K chunk into a stack
 * buffer and carries the partial sums in a local tile: slow, allocation-free, same bits.
 * INT8 kernels (gemm_q8.h) are never chunked (int32 sums); their allocation-free path computes
 * the same definition element by element from the packed weight (per channel or per block).
 */
#include "gemm_kernel.h"
#include "gemm_q8.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum {
    MAX_TILE = G4V_GEMM_MAX_TILE, /* floats in the largest MR x NR block (gemm_kernel.h) */
    STACK_A = 16 << 10 /* bytes of packed A per chunk on the allocation-free path */
};

typedef struct {
    g4v_gemm_call c;  /* the call's operands and epilogue */
    int mtiles, nbm;  /* MR-row tiles, split into nbm row blocks */
    int nbn;          /* B panels split into nbn column blocks */
    int kc;           /* KG groups per K chunk */
    int out_prefetch; /* prefetch a finished tile's output rows (g4v_gemm_cfg, run_tile) */
} gemm_job;

/* Writes the valid rows x cols of a computed tile (row stride NR) with the full epilogue. */
static void store_edge(const gemm_job *j, const float *tile, int nr, int rows, int cols, float *y) {
    const g4v_gemm_epi *e = &j->c.epi;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            float v = tile[r * nr + c];
            if (j->c.uepi.clamp) v = g4v_clampf(v, e->out_lo, e->out_hi);
            float *d = y + (size_t)r * j->c.ldy + c;
            *d = e->accumulate ? *d + v : v;
        }
}

/* One MR x NR output tile (rows from r, columns from c) over kgroups groups, starting from
 * acc_in (NULL: zero), finishing the output when `last`, else leaving the partial sums in
 * `partial`. A fused GeGLU runs on the finished tile while it is still in L1. */
static void run_tile(const gemm_job *j, int kgroups, const void *a, const void *b,
                     const float *acc_in, float *partial, int last, int r, int c, int rows,
                     int cols) {
    const g4v_gemm_kernel *k = j->c.W->kern;
    static const g4v_ukr_epi none = {0.0f, 0.0f, 0, 0};
    float *y = j->c.Y + (size_t)r * j->c.ldy + (size_t)c;
    /* The output rows are in no cache when Y is written once and is large: ask for them, for
     * writing, while the kernel computes, rather than miss on its stores at the end (plan()). */
    if (last && j->out_prefetch)
        for (int i = 0; i < rows; i++)
            for (int o = 0; o < cols * (int)sizeof(float); o += 64)
                __builtin_prefetch((const char *)(y + (size_t)i * j->c.ldy) + o, 1, 3);
    if (last && j->c.epi.gelu_gate) /* its gate values were written a whole GEMM ago (out of L2):
                                     fetched while the kernel runs, not when GeGLU needs them */
        for (int i = 0; i < rows; i++) {
            const char *g = (const char *)(j->c.epi.gelu_gate + (size_t)(r + i) * j->c.epi.ldg + c);
            for (int o = 0; o < cols * (int)sizeof(float); o += 64)
                __builtin_prefetch(g + o);
        }
    if (!last) {
        k->ukr(kgroups, a, b, acc_in, partial, (size_t)k->nr, &none);
        return;
    }
    if (rows == k->mr && cols == k->nr) {
        k->ukr(kgroups, a, b, acc_in, y, j->c.ldy, &j->c.uepi);
    } else {
        k->ukr(kgroups, a, b, acc_in, partial, (size_t)k->nr, &none);
        store_edge(j, partial, k->nr, rows, cols, y);
    }
    if (j->c.epi.gelu_gate)
        for (int i = 0; i < rows; i++) {
            float *yr = y + (size_t)i * j->c.ldy;
            const float *g = j->c.epi.gelu_gate + (size_t)(r + i) * j->c.epi.ldg + (size_t)c;
            j->c.W->geglu_row(g, yr, yr, cols);
        }
}

/* The epilogue of one output row segment computed by an allocation-free INT8 path: row[0, cols)
 * holds the dequantized sums for row r, columns [c0, c0 + cols); clamp, fused GeGLU, then store
 * or accumulate into Y, as the micro-kernels and store_edge do. */
static void finish_row(const gemm_job *j, int r, int c0, float *row, int cols) {
    if (j->c.uepi.clamp)
        for (int c = 0; c < cols; c++)
            row[c] = g4v_clampf(row[c], j->c.epi.out_lo, j->c.epi.out_hi);
    if (j->c.epi.gelu_gate)
        j->c.W->geglu_row(j->c.epi.gelu_gate + (size_t)r * j->c.epi.ldg + (size_t)c0, row, row,
                          cols);
    float *y = j->c.Y + (size_t)r * j->c.ldy + (size_t)c0;
    for (int c = 0; c < cols; c++)
        y[c] = j->c.epi.accumulate ? y[c] + row[c] : row[c];
}

/* The allocation-free INT8 path for rows [r0, r1), panels [p0, p1): gemm_q8.h's arithmetic
 * straight from the packed B panels (codes, scales), each row's codes recomputed per panel. */
static void task_no_scratch_q8(const gemm_job *j, int r0, int r1, int p0, int p1) {
    const g4v_wmat *W = j->c.W;
    int nr = W->kern->nr;
    const g4v_pack_opts *o = &j->c.pack;
    float row[MAX_TILE];
    for (int r = r0; r < r1; r++) {
        const float *x = j->c.X + (size_t)r * j->c.ldx;
        float amax = 0.0f, inv;
        for (int k = 0; k < W->k; k++)
            amax = g4v_q8_amax_step(amax, o->clamp ? g4v_clampf(x[k], o->lo, o->hi) : x[k]);
        float sa = g4v_q8_scale(amax, &inv);
        for (int p = p0; p < p1; p++) {
            const int8_t *b =
                (const int8_t *)((const unsigned char *)W->b + (size_t)p * W->panel_bytes);
            const float *sw = (const float *)(b + (size_t)W->kpad * nr);
            int cols = W->n - p * nr < nr ? W->n - p * nr : nr;
            for (int c = 0; c < cols; c++) {
                int32_t acc = 0;
                for (int k = 0; k < W->k; k++) {
                    int8_t q = g4v_q8_code(o->clamp ? g4v_clampf(x[k], o->lo, o->hi) : x[k], inv);
                    acc += (int32_t)q * b[((size_t)(k / 4) * nr + c) * 4 + k % 4];
                }
                row[c] = g4v_q8_dequant(acc, sa, sw[c]);
            }
            finish_row(j, r, p * nr, row, cols);
        }
    }
}

/* The same for the blocked variant: each row's block codes and scales, then each column's sum
 * over the blocks in order (gemm_q8.h), straight from the packed B panels. */
static void task_no_scratch_q8b(const gemm_job *j, int r0, int r1, int p0, int p1) {
    const g4v_wmat *W = j->c.W;
    int nr = W->kern->nr, nb = W->kpad / G4V_Q8_BLOCK;
    float row[MAX_TILE];
    for (int r = r0; r < r1; r++) {
        const float *x = j->c.X + (size_t)r * j->c.ldx;
        for (int p = p0; p < p1; p++) {
            const int8_t *b =
                (const int8_t *)((const unsigned char *)W->b + (size_t)p * W->panel_bytes);
            const float *sw = (const float *)(b + (size_t)W->kpad * nr);
            int cols = W->n - p * nr < nr ? W->n - p * nr : nr;
            for (int c = 0; c < cols; c++)
                row[c] = 0.0f;
            for (int blk = 0; blk < nb; blk++) {
                int8_t q[G4V_Q8_BLOCK];
                int k0 = blk * G4V_Q8_BLOCK;
                int len = W->k - k0 < G4V_Q8_BLOCK ? W->k - k0 : G4V_Q8_BLOCK;
                float sa = g4v_q8b_quantize_block(x + k0, len, &j->c.pack, q);
                for (int c = 0; c < cols; c++) {
                    int32_t acc = 0;
                    for (int t = 0; t < G4V_Q8_BLOCK; t++)
                        acc += (int32_t)q[t] * b[((size_t)((k0 + t) / 4) * nr + c) * 4 + t % 4];
                    row[c] = g4v_q8b_step(acc, sa, sw[(size_t)blk * nr + c], row[c]);
                }
            }
            finish_row(j, r, p * nr, row, cols);
        }
    }
}

/* The allocation-free path for rows [r0, r1), panels [p0, p1). */
static void task_no_scratch(const gemm_job *j, int r0, int r1, int p0, int p1) {
    const g4v_wmat *W = j->c.W;
    const g4v_gemm_kernel *k = W->kern;
    if (k->q8_blocks) {
        task_no_scratch_q8b(j, r0, r1, p0, p1);
        return;
    }
    if (k->int8) {
        task_no_scratch_q8(j, r0, r1, p0, p1);
        return;
    }
    size_t asize = k->a_bf16 ? 2 : 4, bsize = k->b_bf16 ? 2 : 4;
    size_t group_a = (size_t)k->mr * (size_t)k->kg * asize;
    int kc = j->kc < (int)(STACK_A / group_a) ? j->kc : (int)(STACK_A / group_a);
    if (kc < 1) kc = 1;
    _Alignas(64) unsigned char abuf[STACK_A];
    _Alignas(64) float acc[MAX_TILE];
    int kgroups = W->kpad / k->kg;
    for (int r = r0; r < r1; r += k->mr) {
        int rows = r1 - r < k->mr ? r1 - r : k->mr;
        for (int p = p0; p < p1; p++) {
            int cols = W->n - p * k->nr < k->nr ? W->n - p * k->nr : k->nr;
            const unsigned char *b = (const unsigned char *)W->b + (size_t)p * W->panel_bytes;
            for (int g = 0; g < kgroups; g += kc) {
                int n = kgroups - g < kc ? kgroups - g : kc;
                int k0 = g * k->kg, klen = W->k - k0 < n * k->kg ? W->k - k0 : n * k->kg;
                k->pack_a(j->c.X + (size_t)r * j->c.ldx + (size_t)k0, j->c.ldx, rows, klen,
                          n * k->kg, abuf, &j->c.pack);
                run_tile(j, n, abuf, b + (size_t)g * k->kg * k->nr * bsize, g ? acc : NULL, acc,
                         g + n == kgroups, r, p * k->nr, rows, cols);
            }
        }
    }
}

static void task(void *arg, int t, int worker) {
    (void)worker;
    const gemm_job *j = arg;
    const g4v_wmat *W = j->c.W;
    const g4v_gemm_kernel *k = W->kern;
    int bm = t / j->nbn, bn = t % j->nbn;
    int t0 = (int)((int64_t)bm * j->mtiles / j->nbm);
    int t1 = (int)((int64_t)(bm + 1) * j->mtiles / j->nbm);
    int p0 = (int)((int64_t)bn * W->npanels / j->nbn);
    int p1 = (int)((int64_t)(bn + 1) * W->npanels / j->nbn);
    int r0 = t0 * k->mr, r1 = t1 * k->mr < j->c.m ? t1 * k->mr : j->c.m;
    if (r0 >= r1 || p0 >= p1) return;
    /* element sizes for the K-chunk offsets; INT8 kernels have one chunk (offsets 0) */
    size_t asize = k->a_bf16 ? 2 : 4, bsize = k->b_bf16 ? 2 : 4;
    size_t panel_a = g4v_gemm_a_panel_bytes(k, W->kpad), tile = (size_t)k->mr * k->nr;
    int kgroups = W->kpad / k->kg, nchunks = (kgroups + j->kc - 1) / j->kc;
    /* packed A for the task's rows, then (when K is chunked) the partial sums of its tiles */
    size_t abytes = (panel_a * (size_t)(t1 - t0) + 63) & ~(size_t)63;
    size_t cbytes = nchunks > 1 ? sizeof(float) * tile * (size_t)(t1 - t0) * (size_t)(p1 - p0) : 0;
    unsigned char *a = j->c.no_scratch ? NULL : g4v_gemm_scratch(abytes + cbytes);
    if (!a) {
        task_no_scratch(j, r0, r1, p0, p1);
        return;
    }
    float *cbuf = (float *)(a + abytes);
    _Alignas(64) float local[MAX_TILE];
    k->pack_a(j->c.X + (size_t)r0 * j->c.ldx, j->c.ldx, r1 - r0, W->k, W->kpad, a, &j->c.pack);
    for (int c = 0; c < nchunks; c++) {
        int g0 = c * j->kc, n = kgroups - g0 < j->kc ? kgroups - g0 : j->kc;
        size_t aoff = (size_t)g0 * k->mr * k->kg * asize, boff = (size_t)g0 * k->kg * k->nr * bsize;
        for (int p = p0; p < p1; p++) {
            int cols = W->n - p * k->nr < k->nr ? W->n - p * k->nr : k->nr;
            const unsigned char *b =
                (const unsigned char *)W->b + (size_t)p * W->panel_bytes + boff;
            for (int r = r0, i = 0; r < r1; r += k->mr, i++) {
                int rows = r1 - r < k->mr ? r1 - r : k->mr;
                float *part =
                    nchunks > 1 ? cbuf + ((size_t)(p - p0) * (t1 - t0) + i) * tile : local;
                run_tile(j, n, a + (size_t)i * panel_a + aoff, b, c ? part : NULL, part,
                         c == nchunks - 1, r, p * k->nr, rows, cols);
            }
        }
    }
}

/* Task grid: row blocks whose A for one K chunk fits the A budget, at least 4 per thread and a
 * multiple of the thread count when there are enough tiles (equal shares), and column blocks
 * only when rows are too few to give every thread work. The grid changes speed, never results. */
static void plan(gemm_job *j, int threads, const g4v_gemm_cfg *cfg) {
    const g4v_wmat *W = j->c.W;
    const g4v_gemm_kernel *k = W->kern;
    j->kc = cfg && cfg->kc_groups > 0 && !k->int8 ? cfg->kc_groups : W->kc_groups;
    /* Prefetch the output rows when the output is wider than the input (N > K, as the MLP's gate
     * and up projections): Y's write misses are then the call's largest memory stream, while
     * for N <= K the input and weight streams dominate and the prefetch brings nothing.
     * Prefetches change no bits. */
    j->out_prefetch = cfg && cfg->out_prefetch ? cfg->out_prefetch > 0 : W->n > W->k;
    size_t chunk_a = (size_t)k->mr * (size_t)j->kc * k->kg * (k->int8 ? 1 : k->a_bf16 ? 2 : 4);
    j->mtiles = (j->c.m + k->mr - 1) / k->mr;
    int per = W->a_budget / chunk_a > 0 ? (int)(W->a_budget / chunk_a) : 1;
    if (cfg && cfg->tiles_per_block > 0) per = cfg->tiles_per_block;
    if (per > j->mtiles) per = j->mtiles;
    j->nbm = (j->mtiles + per - 1) / per;
    j->nbn = 1;
    if (cfg && cfg->panels_per_block > 0) {
        j->nbn = (W->npanels + cfg->panels_per_block - 1) / cfg->panels_per_block;
        return;
    }
    if (cfg && cfg->tiles_per_block > 0) return;
    if (threads > 1) {
        /* at least 4 tasks per thread: a thread slowed by other load hands work to the rest */
        int nbm = j->nbm > 4 * threads ? j->nbm : 4 * threads;
        nbm = (nbm + threads - 1) / threads * threads;
        j->nbm = nbm <= j->mtiles ? nbm : j->mtiles;
        if (j->nbm < threads) {
            int nbn = (threads + j->nbm - 1) / j->nbm;
            j->nbn = nbn <= W->npanels ? nbn : W->npanels;
        }
    }
}

/* No clamp, no GeGLU gate, no accumulate: Y = X Wᵀ. */
g4v_gemm_epi g4v_gemm_epi_none(void) {
    g4v_gemm_epi e = {-INFINITY, INFINITY, -INFINITY, INFINITY, 0, NULL, 0};
    return e;
}

static int unbounded(float lo, float hi) {
    return lo == -INFINITY && hi == INFINITY;
}

void g4v_gemm_cfg_run(g4v_pool *pool, const float *X, size_t ldx, const g4v_wmat *W, float *Y,
                      size_t ldy, size_t m, const g4v_gemm_epi *epi, const g4v_gemm_cfg *cfg) {
    if (m == 0 || m > INT_MAX) return; /* the encoder's rows are far below 2^31 (checked there) */
    g4v_gemm_call c;
    memset(&c, 0, sizeof c);
    c.X = X;
    c.ldx = ldx;
    c.W = W;
    c.Y = Y;
    c.ldy = ldy;
    c.m = (int)m;
    c.epi = epi ? *epi : g4v_gemm_epi_none();
    c.uepi.lo = c.epi.out_lo;
    c.uepi.hi = c.epi.out_hi;
    c.uepi.clamp = !unbounded(c.epi.out_lo, c.epi.out_hi);
    c.uepi.accumulate = c.epi.accumulate != 0;
    c.pack.lo = c.epi.in_lo;
    c.pack.hi = c.epi.in_hi;
    c.pack.clamp = !unbounded(c.epi.in_lo, c.epi.in_hi);
    c.pack.round = W->mode == G4V_MATH_FAST;
    c.no_scratch = cfg ? cfg->no_scratch : 0;
    if (W->in_place) {
        g4v_gemm_inplace_run(pool, &c, cfg);
        return;
    }
    gemm_job j;
    memset(&j, 0, sizeof j);
    j.c = c;
    plan(&j, g4v_pool_size(pool), cfg);
    g4v_pool_run_then(pool, j.nbm * j.nbn, task, &j, W->kern->release);
}

void g4v_gemm(g4v_pool *pool, const float *X, size_t ldx, const g4v_wmat *W, float *Y, size_t ldy,
              size_t m, const g4v_gemm_epi *epi) {
    g4v_gemm_cfg_run(pool, X, ldx, W, Y, ldy, m, epi, NULL);
}
