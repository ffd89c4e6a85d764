/* gemm_inplace.c - the GEMM driver for BF16 weights used where they lie (gemm_kernel.h, "In-place
 * kernels"): no packed copy of W exists, so a model's weights are its checkpoint's mapped pages,
 * shared by every process that maps the file, and loading packs nothing.
 *
 * X is packed once per call as the inner kernel's B panels (NR rows each, the whole K): with
 * threads in a pass of its own into a buffer every task reads, else by the one task. A task owns
 * a block of X panels and a block of W tiles (MR W rows: output columns); for each tile and K
 * chunk it copies the tile's chunk into the inner kernel's A layout (a few KB, kept in L1 while
 * every X panel of the task passes under it) and runs the inner micro-kernel, which computes
 * the tile of Yᵀ; on the last chunk store_t writes it transposed into Y with the epilogue, and
 * the fused GeGLU runs on every GEGLU_TILES tiles' columns. The per-(m, n) sums are the inner
 * kernel's, in its k order, whatever the chunking or the threads: bit-identical to the packed
 * kernel over the same micro-kernel (tests/kernels/test_gemm.c checks it).
 * Without scratch (its allocation failed) the same loop runs on one X panel and one chunk at a
 * time from stack buffers: slower, the same bits.
 */
#include "gemm_kernel.h"

#include "base/dtype.h"

#include <stdint.h>
#include <string.h>

enum {
    MAX_TILE = G4V_GEMM_MAX_TILE, /* floats in the largest MR x NR block (gemm_kernel.h) */
    STACK_B = 16 << 10, /* bytes of each stack buffer on the allocation-free path */
    GEGLU_TILES = 8     /* W tiles whose output columns get the fused GeGLU together */
};

/* ---- the portable transposing store (gemm_kernel.h) ---- */

void g4v_store_t_scalar(const float *tile, int nr, int rows, int cols, float *y, size_t ldy,
                        const g4v_ukr_epi *e) {
    for (int c = 0; c < cols; c++) {
        float *d = y + (size_t)c * ldy;
        for (int r = 0; r < rows; r++) {
            float v = tile[r * nr + c];
            if (e->clamp) v = g4v_clampf(v, e->lo, e->hi);
            d[r] = e->accumulate ? d[r] + v : v;
        }
    }
}

/* ---- the W tile: MR rows of W, one K chunk, in the inner kernel's A layout ---- */

/* One group of kg values of a W row into the A layout: copied (bf16) or widened (f32). Constant
 * kg (the callers' switch) lets the compiler inline the copy and vectorize the widening. */
static inline void w_group(int a_bf16, int kg, const uint16_t *src, void *dst) {
    if (a_bf16) {
        memcpy(dst, src, (size_t)kg * 2);
    } else {
        float *d = dst;
        for (int i = 0; i < kg; i++) {
            uint32_t u = (uint32_t)src[i] << 16;
            memcpy(&d[i], &u, 4);
        }
    }
}

/* Rows [0, rows) of w (row stride ldw elements, bf16 as stored), k in [0, klen), into the A
 * micro-panel layout of kernel k over kchunk values (element (r, kk) at
 * ((kk / KG) * MR + r) * KG + kk % KG; bf16 as is, or widened exactly to f32); zero past the
 * edges. A copy of at most MR x kchunk elements per tile and chunk, reused by every X panel. */
static void pack_w(const g4v_gemm_kernel *k, const uint16_t *w, size_t ldw, int rows, int klen,
                   int kchunk, void *dst) {
    int mr = k->mr, kg = k->kg, groups = kchunk / kg, full = klen / kg, a_bf16 = k->inner->a_bf16;
    int vec = k->pack_w != NULL; /* the valid rows' full groups by the ISA's widening */
    if (vec && full) k->pack_w(w, ldw, rows, full, dst);
    size_t esize = a_bf16 ? 2 : 4, step = (size_t)mr * (size_t)kg * esize;
    for (int r = 0; r < mr; r++) {
        int g = vec && r < rows ? full : 0;
        const uint16_t *src = w + (size_t)r * ldw + (size_t)g * kg;
        unsigned char *d = (unsigned char *)dst + (size_t)r * (size_t)kg * esize + step * g;
        if (r < rows)
            for (; g < full; g++, d += step, src += kg)
                switch (kg) { /* the kernels' group sizes, as constants */
                case 16: w_group(a_bf16, 16, src, d); break;
                case 8: w_group(a_bf16, 8, src, d); break;
                case 2: w_group(a_bf16, 2, src, d); break;
                default: w_group(a_bf16, kg, src, d); break;
                }
        for (; g < groups; g++, d += step, src += kg) { /* K's tail, rows past N: zero-padded */
            int n = r < rows && g == full ? klen - full * kg : 0;
            memset(d, 0, (size_t)kg * esize);
            if (n) w_group(a_bf16, n, src, d);
        }
    }
}

/* ---- the loop nest ---- */

typedef struct {
    g4v_gemm_call c;  /* the call's operands and epilogue */
    int xpanels, nbm; /* NR-row X panels, split into nbm row blocks */
    int wtiles, nbn;  /* MR-row W tiles, split into nbn column blocks */
    int kc;           /* KG groups per K chunk */
    int nbm_pack;     /* tasks of the packing pass into xs */
    /* X packed once for every task (threads > 1), or NULL: each task packs its own rows */
    const unsigned char *xs;
} ip_job;

/* The finished tile for W rows from n0 (rows of them) and X rows from m0 (cols of them): Y
 * written transposed with the epilogue. */
static void finish_tile(const ip_job *j, const float *tile, int n0, int rows, int m0, int cols) {
    const g4v_gemm_kernel *k = j->c.W->kern;
    float *y = j->c.Y + (size_t)m0 * j->c.ldy + (size_t)n0;
    if (k->store_t)
        k->store_t(tile, k->nr, rows, cols, y, j->c.ldy, &j->c.uepi);
    else
        g4v_store_t_scalar(tile, k->nr, rows, cols, y, j->c.ldy, &j->c.uepi);
}

/* Before the last chunk of a tile (W rows from n0, X rows [m0, m0 + cols)): its Y rows (for
 * writing, when the output is wider than the input, as gemm_driver.c does) and its GeGLU gate
 * rows, written a whole GEMM ago and out of the caches, fetched while the kernel runs. */
static void prefetch_outputs(const ip_job *j, int n0, int m0, int cols) {
    int bytes = j->c.W->kern->mr * (int)sizeof(float);
    for (int i = 0; i < cols; i++) {
        if (j->c.W->n > j->c.W->k) {
            const char *y = (const char *)(j->c.Y + (size_t)(m0 + i) * j->c.ldy + (size_t)n0);
            __builtin_prefetch(y, 1, 3);
            __builtin_prefetch(y + bytes - 1, 1, 3);
        }
        if (j->c.epi.gelu_gate) {
            const float *gr = j->c.epi.gelu_gate + (size_t)(m0 + i) * j->c.epi.ldg + n0;
            const char *g = (const char *)gr;
            __builtin_prefetch(g);
            __builtin_prefetch(g + bytes - 1);
        }
    }
}

/* The fused GeGLU on finished outputs: rows [r0, r1), columns [c0, c1). */
static void geglu(const ip_job *j, int r0, int r1, int c0, int c1) {
    for (int r = r0; r < r1; r++) {
        float *yr = j->c.Y + (size_t)r * j->c.ldy + (size_t)c0;
        const float *g = j->c.epi.gelu_gate + (size_t)r * j->c.epi.ldg + (size_t)c0;
        j->c.W->geglu_row(g, yr, yr, c1 - c0);
    }
}

/* Element bytes of the W tile (the inner kernel's A) and of the X panels (its B). */
static size_t elem_a(const g4v_gemm_kernel *k) {
    return k->inner->a_bf16 ? 2 : 4;
}
static size_t elem_b(const g4v_gemm_kernel *k) {
    return k->inner->b_bf16 ? 2 : 4;
}

/* The W tile's first row, at column k0. */
static const uint16_t *w_at(const g4v_wmat *W, int tile, int k0) {
    return (const uint16_t *)W->b + (size_t)tile * (size_t)W->kern->mr * (size_t)W->k + (size_t)k0;
}

/* Rows of the W tile and of the X panel inside the matrices. */
static int tile_rows(const ip_job *j, int tile) {
    int mr = j->c.W->kern->mr, left = j->c.W->n - tile * mr;
    return left < mr ? left : mr;
}
static int panel_rows(const ip_job *j, int panel) {
    int nr = j->c.W->kern->nr, left = j->c.m - panel * nr;
    return left < nr ? left : nr;
}

/* The allocation-free path for X panels [x0, x1) and W tiles [w0, w1). */
static void task_no_scratch(const ip_job *j, int x0, int x1, int w0, int w1) {
    const g4v_wmat *W = j->c.W;
    const g4v_gemm_kernel *k = W->kern, *in = k->inner;
    static const g4v_ukr_epi none = {0.0f, 0.0f, 0, 0};
    size_t group_b = (size_t)k->nr * (size_t)k->kg * elem_b(k);
    size_t group_a = (size_t)k->mr * (size_t)k->kg * elem_a(k);
    size_t group = group_a > group_b ? group_a : group_b;
    int kc = j->kc < (int)(STACK_B / group) ? j->kc : (int)(STACK_B / group);
    if (kc < 1) kc = 1;
    _Alignas(64) unsigned char xbuf[STACK_B], wbuf[STACK_B];
    _Alignas(64) float acc[MAX_TILE];
    int kgroups = W->kpad / k->kg;
    for (int xp = x0; xp < x1; xp++)
        for (int wt = w0; wt < w1; wt++)
            for (int g = 0; g < kgroups; g += kc) {
                int n = kgroups - g < kc ? kgroups - g : kc;
                int k0 = g * k->kg, klen = W->k - k0 < n * k->kg ? W->k - k0 : n * k->kg;
                k->pack_x(j->c.X + (size_t)xp * k->nr * j->c.ldx + (size_t)k0, j->c.ldx,
                          panel_rows(j, xp), klen, n * k->kg, xbuf, &j->c.pack);
                pack_w(k, w_at(W, wt, k0), (size_t)W->k, tile_rows(j, wt), klen, n * k->kg, wbuf);
                in->ukr(n, wbuf, xbuf, g ? acc : NULL, acc, (size_t)k->nr, &none);
                if (g + n == kgroups) {
                    finish_tile(j, acc, wt * k->mr, tile_rows(j, wt), xp * k->nr,
                                panel_rows(j, xp));
                    if (j->c.epi.gelu_gate)
                        geglu(j, xp * k->nr, xp * k->nr + panel_rows(j, xp), wt * k->mr,
                              wt * k->mr + tile_rows(j, wt));
                }
            }
}

static void task(void *arg, int t, int worker) {
    (void)worker;
    const ip_job *j = arg;
    const g4v_wmat *W = j->c.W;
    const g4v_gemm_kernel *k = W->kern, *in = k->inner;
    static const g4v_ukr_epi none = {0.0f, 0.0f, 0, 0};
    int bm = t / j->nbn, bn = t % j->nbn;
    int x0 = (int)((int64_t)bm * j->xpanels / j->nbm);
    int x1 = (int)((int64_t)(bm + 1) * j->xpanels / j->nbm);
    int w0 = (int)((int64_t)bn * j->wtiles / j->nbn);
    int w1 = (int)((int64_t)(bn + 1) * j->wtiles / j->nbn);
    if (x0 >= x1 || w0 >= w1) return;
    int r0 = x0 * k->nr, r1 = x1 * k->nr < j->c.m ? x1 * k->nr : j->c.m;
    size_t panel_x = (size_t)k->nr * (size_t)W->kpad * elem_b(k), tile = (size_t)k->mr * k->nr;
    int kgroups = W->kpad / k->kg, nchunks = (kgroups + j->kc - 1) / j->kc;
    /* W tiles go in blocks whose partial sums (over the task's X panels) fill at most a quarter
     * of the A budget: within a block, chunk by chunk, each W tile's chunk is copied once and
     * serves every X panel of the task while the X chunk stays in L2 */
    size_t sums = sizeof(float) * tile * (size_t)(x1 - x0);
    int nb = nchunks > 1 ? (int)(W->a_budget / 4 / sums) : w1 - w0;
    if (nb < 1) nb = 1;
    if (nb > w1 - w0) nb = w1 - w0;
    /* packed X for the task's rows (unless shared), one W tile's chunk, then (when K is
     * chunked) the partial sums of one block */
    size_t xbytes = j->xs ? 0 : (panel_x * (size_t)(x1 - x0) + 63) & ~(size_t)63;
    size_t wbytes = ((size_t)k->mr * (size_t)j->kc * k->kg * elem_a(k) + 63) & ~(size_t)63;
    size_t cbytes = nchunks > 1 ? sums * (size_t)nb : 0;
    unsigned char *mine = j->c.no_scratch ? NULL : g4v_gemm_scratch(xbytes + wbytes + cbytes);
    if (!mine) {
        task_no_scratch(j, x0, x1, w0, w1);
        return;
    }
    unsigned char *wbuf = mine + xbytes;
    float *cbuf = (float *)(wbuf + wbytes);
    _Alignas(64) float local[MAX_TILE];
    const unsigned char *xbuf = j->xs ? j->xs + (size_t)x0 * panel_x : mine;
    if (!j->xs)
        k->pack_x(j->c.X + (size_t)r0 * j->c.ldx, j->c.ldx, r1 - r0, W->k, W->kpad, mine,
                  &j->c.pack);
    for (int wb = w0; wb < w1; wb += nb) {
        int we = wb + nb < w1 ? wb + nb : w1;
        for (int c = 0; c < nchunks; c++) {
            int g0 = c * j->kc, n = kgroups - g0 < j->kc ? kgroups - g0 : j->kc;
            int k0 = g0 * k->kg, klen = W->k - k0 < n * k->kg ? W->k - k0 : n * k->kg;
            size_t xoff = (size_t)k0 * k->nr * elem_b(k);
            int last = c == nchunks - 1;
            for (int wt = wb; wt < we; wt++) {
                pack_w(k, w_at(W, wt, k0), (size_t)W->k, tile_rows(j, wt), klen, n * k->kg, wbuf);
                /* the next W chunk to copy (from memory: every row block reads W) is fetched in
                 * slices while this one computes, so its copy does not wait on memory */
                int nt = wt + 1 < we ? wt + 1 : !last ? wb : we < w1 ? we : -1;
                int nk0 = wt + 1 < we ? k0 : !last ? k0 + n * k->kg : 0;
                int nrows = nt >= 0 ? tile_rows(j, nt) : 0;
                int nklen = nt >= 0 ? (W->k - nk0 < j->kc * k->kg ? W->k - nk0 : j->kc * k->kg) : 0;
                /* lines of each row to fetch, spread over the X panels of the task */
                int lines = (nklen * 2 + 63) / 64 + 1, total = nrows * lines;
                int per = (total + (x1 - x0) - 1) / (x1 - x0), row_i = 0, line_i = 0;
                const char *pf = nt >= 0 ? (const char *)w_at(W, nt, nk0) : NULL;
                for (int xp = x0; xp < x1; xp++) {
                    for (int q = 0; q < per && row_i < nrows; q++) {
                        __builtin_prefetch(pf + (size_t)line_i * 64, 0, 2);
                        if (++line_i == lines) {
                            line_i = 0;
                            row_i++;
                            pf += (size_t)W->k * 2;
                        }
                    }
                    if (last) /* the tile's output and gate rows, asked for while it computes */
                        prefetch_outputs(j, wt * k->mr, xp * k->nr, panel_rows(j, xp));
                    float *part = nchunks > 1
                                      ? cbuf + ((size_t)(wt - wb) * (x1 - x0) + (xp - x0)) * tile
                                      : local;
                    in->ukr(n, wbuf, xbuf + (size_t)(xp - x0) * panel_x + xoff, c ? part : NULL,
                            part, (size_t)k->nr, &none);
                    if (last)
                        finish_tile(j, part, wt * k->mr, tile_rows(j, wt), xp * k->nr,
                                    panel_rows(j, xp));
                }
                /* GeGLU on every GEGLU_TILES tiles' columns: rows of ~100 values rather than
                 * one call per tile and row of 12 (the gate and outputs are still in L2) */
                int group_end = (wt - wb + 1) % GEGLU_TILES == 0 || wt == we - 1;
                if (last && j->c.epi.gelu_gate && group_end) {
                    int first = wt - (wt - wb) % GEGLU_TILES;
                    geglu(j, r0, r1, first * k->mr, wt * k->mr + tile_rows(j, wt));
                }
            }
        }
    }
}

/* Task grid: row blocks whose packed X for one K chunk fits the budget, then, with threads,
 * about 4 tasks per thread from row and column blocks (below). */
static void plan(ip_job *j, int threads, const g4v_gemm_cfg *cfg) {
    const g4v_wmat *W = j->c.W;
    const g4v_gemm_kernel *k = W->kern;
    j->kc = cfg && cfg->kc_groups > 0 ? cfg->kc_groups : W->kc_groups;
    size_t chunk_x = (size_t)k->nr * (size_t)j->kc * k->kg * elem_b(k);
    j->xpanels = (j->c.m + k->nr - 1) / k->nr;
    j->wtiles = (W->n + k->mr - 1) / k->mr;
    int per = W->a_budget / chunk_x > 0 ? (int)(W->a_budget / chunk_x) : 1;
    if (cfg && cfg->tiles_per_block > 0) per = cfg->tiles_per_block;
    if (per > j->xpanels) per = j->xpanels;
    j->nbm = (j->xpanels + per - 1) / per;
    j->nbn = 1;
    if (cfg && cfg->panels_per_block > 0) {
        j->nbn = (j->wtiles + cfg->panels_per_block - 1) / cfg->panels_per_block;
        return;
    }
    if (cfg && cfg->tiles_per_block > 0) return;
    if (threads > 1) {
        /* About 4 tasks per thread (a thread slowed by other load hands work to the rest), as
         * row blocks x column blocks. Every row block copies all W tiles it uses once, every
         * column block packs its X rows once unless X is shared: the split that copies the
         * fewest elements, nbm * N (+ nbn * M), wins (never fewer row blocks than the L2
         * budget asks for). */
        int want = 4 * threads, best = 1;
        double cost = -1;
        for (int nbm = 1; nbm <= want && nbm <= j->xpanels; nbm++) {
            int nbn = (want + nbm - 1) / nbm;
            nbn = nbn <= j->wtiles ? nbn : j->wtiles;
            double c = (double)nbm * W->n + (j->xs ? 0.0 : (double)nbn * j->c.m);
            if (nbm * nbn < threads) c += 1e300; /* every thread needs work */
            if (cost < 0 || c < cost) cost = c, best = nbm;
        }
        j->nbm = j->nbm > best ? j->nbm : best;
        int nbn = (want + j->nbm - 1) / j->nbm;
        j->nbn = nbn <= j->wtiles ? nbn : j->wtiles;
    }
}

/* Packs X panels [t * xpanels / n, (t + 1) * xpanels / n) into the shared buffer. */
static void pack_task(void *arg, int t, int worker) {
    (void)worker;
    const ip_job *j = arg;
    const g4v_gemm_kernel *k = j->c.W->kern;
    int n = j->nbm_pack, p0 = (int)((int64_t)t * j->xpanels / n);
    int p1 = (int)((int64_t)(t + 1) * j->xpanels / n);
    if (p0 >= p1) return;
    int r0 = p0 * k->nr, r1 = p1 * k->nr < j->c.m ? p1 * k->nr : j->c.m;
    size_t panel_x = (size_t)k->nr * (size_t)j->c.W->kpad * elem_b(k);
    k->pack_x(j->c.X + (size_t)r0 * j->c.ldx, j->c.ldx, r1 - r0, j->c.W->k, j->c.W->kpad,
              (unsigned char *)j->xs + (size_t)p0 * panel_x, &j->c.pack);
}

void g4v_gemm_inplace_run(g4v_pool *pool, const g4v_gemm_call *call, const g4v_gemm_cfg *cfg) {
    ip_job j;
    memset(&j, 0, sizeof j);
    j.c = *call;
    /* With threads, X is packed once, in a pass of its own, into a buffer every task reads:
     * column blocks then cost no repacking of X (plan()). */
    const g4v_gemm_kernel *k = call->W->kern;
    int threads = g4v_pool_size(pool), xpanels = (call->m + k->nr - 1) / k->nr;
    if (threads > 1 && !call->no_scratch)
        j.xs = g4v_gemm_scratch_shared((size_t)xpanels * (size_t)k->nr * (size_t)call->W->kpad *
                                       elem_b(k));
    plan(&j, threads, cfg);
    if (j.xs) {
        j.nbm_pack = 2 * threads < xpanels ? 2 * threads : xpanels;
        g4v_pool_run(pool, j.nbm_pack, pack_task, &j);
    }
    g4v_pool_run_then(pool, j.nbm * j.nbn, task, &j, k->release);
}
