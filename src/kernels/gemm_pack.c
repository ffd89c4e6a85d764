/* gemm_pack.c - prepared weights: the micro-kernel's choice and packing W into its B panels.
 *
 * The kernel is chosen once per weight (g4v_wmat_create), the first of the kernel table's GEMM
 * kernels (those the CPU runs, best first) that fits the weight dtype and the math mode. BF16
 * weights stay 2 bytes per element in every mode (bf16 pairs; FAST mode uses vdpbf16ps where the
 * CPU has it, otherwise FMA on A rounded to bf16). F16/F32 weights are widened to f32 panels (4
 * bytes per element) because the contract multiplies by W exactly as stored. Panels are zero-padded
 * to whole tiles, so g4v_wmat_bytes can exceed N*K*size when N or K is not a multiple of the tile.
 * Packing is plain C and runs once per model; g4v_gemm (gemm_driver.c) does the per-call work.
 * Also here: the scalar A packer every ISA's micro-kernel uses for what its vectors leave, and
 * the in-place kernels' scalar X packer.
 */
#include "gemm_kernel.h"

#include "base/alloc.h"
#include "dispatch.h"
#include "gemm_q8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the scalar A packer (gemm_kernel.h), shared by every ISA's pack_a for K's ragged tail ---- */

static float prep(float v, const g4v_pack_opts *o) {
    if (o->clamp) v = v < o->lo ? o->lo : v > o->hi ? o->hi : v;
    return o->round ? g4v_round_bf16(v) : v;
}

void g4v_pack_a_scalar(const float *x, size_t ldx, int rows, int k0, int klen, int kpad, int mr,
                       int kg, int a_bf16, void *dst, const g4v_pack_opts *o) {
    int prow = (rows + mr - 1) / mr * mr;
    for (int r = 0; r < prow; r++) {
        int kstart = r < rows ? k0 : 0;
        size_t panel = (size_t)(r / mr) * (size_t)mr * (size_t)kpad;
        for (int k = kstart; k < kpad; k++) {
            float v = r < rows && k < klen ? prep(x[(size_t)r * ldx + (size_t)k], o) : 0.0f;
            size_t at = panel + ((size_t)(k / kg) * (size_t)mr + (size_t)(r % mr)) * (size_t)kg +
                        (size_t)(k % kg);
            if (a_bf16)
                ((uint16_t *)dst)[at] = g4v_f32_to_bf16(v);
            else
                ((float *)dst)[at] = v;
        }
    }
}

/* The scalar X packer of the in-place kernels (gemm_kernel.h): every k of a partial last panel,
 * and k from kdone on in the full panels (what a vector packer leaves; kdone = 0: all). */
void g4v_pack_x_scalar(const float *x, size_t ldx, int rows, int kdone, int klen, int kpad, int nr,
                       int pairs, void *dst, const g4v_pack_opts *o) {
    int full = rows / nr * nr, prow = (rows + nr - 1) / nr * nr;
    for (int r = 0; r < prow; r++) {
        size_t panel = (size_t)(r / nr) * (size_t)nr * (size_t)kpad, c = (size_t)(r % nr);
        for (int k = r < full ? kdone : 0; k < kpad; k++) {
            float v = r < rows && k < klen ? prep(x[(size_t)r * ldx + (size_t)k], o) : 0.0f;
            if (pairs)
                ((uint16_t *)dst)[panel + ((size_t)(k / 2) * (size_t)nr + c) * 2 + k % 2] =
                    g4v_f32_to_bf16(v);
            else
                ((float *)dst)[panel + (size_t)k * (size_t)nr + c] = v;
        }
    }
}

enum { MAX_DIM = 1 << 20 }; /* 1M rows or columns: far beyond any model, keeps sizes in range */

int g4v_gemm_kernel_fits(const g4v_gemm_kernel *k, g4v_dtype dtype, g4v_math_mode mode) {
    if (!k->int8 != !g4v_math_is_int8(mode)) return 0;
    if (k->int8 && !k->q8_blocks != (mode == G4V_MATH_INT8)) return 0;
    if (k->a_bf16 && mode != G4V_MATH_FAST) return 0;
    if (k->b_bf16 && dtype != G4V_DT_BF16) return 0;
    return 1;
}

/* sysconf's cache sizes are glibc's (macOS and the BSDs lack the names; glibc on ARM64 answers
 * 0): elsewhere the guess stands. */
#ifndef _SC_LEVEL2_CACHE_SIZE
#define _SC_LEVEL2_CACHE_SIZE -1
#endif
#ifndef _SC_LEVEL1_DCACHE_SIZE
#define _SC_LEVEL1_DCACHE_SIZE -1
#endif

/* Half of a cache level per core (sysconf's answer, else `guess`), kept within [lo, hi]. */
static size_t half_cache(int name, size_t guess, size_t lo, size_t hi) {
    long c = name >= 0 ? sysconf(name) : -1;
    size_t b = (c > 0 ? (size_t)c : guess) / 2;
    return b < lo ? lo : b > hi ? hi : b;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define G4V_LITTLE_ENDIAN 1
#else
#define G4V_LITTLE_ENDIAN 0
#endif

static uint16_t raw16(const void *w, size_t i) {
    uint16_t h;
    memcpy(&h, (const unsigned char *)w + 2 * i, 2);
    return h;
}

/* B panels of bf16 pairs: word (panel, p, c) = W[n][2p] | W[n][2p+1] << 16, n = panel*NR + c.
 * In little-endian memory that word is simply the 32-bit load of W[n] at element 2p, so full
 * panels are a 32-bit transpose of NR rows, read row by row; the ragged last panel and the odd
 * last k (zero-padded) go element by element. This runs once per weight at model load. */
static void pack_b_pairs(const void *w, int n, int k, const g4v_wmat *m, uint32_t *dst) {
    int nr = m->kern->nr, pairs = m->kpad / 2, full_pairs = k / 2;
    const unsigned char *wb = w;
    for (int pn = 0; pn < m->npanels; pn++, dst += (size_t)pairs * nr) {
        for (int c = 0; c < nr; c++) {
            int col = pn * nr + c;
            size_t row = (size_t)col * (size_t)k;
            int p = 0;
            if (col < n && G4V_LITTLE_ENDIAN)
                for (; p < full_pairs; p++)
                    memcpy(&dst[(size_t)p * nr + c], wb + 2 * (row + 2 * (size_t)p), 4);
            for (; p < pairs; p++) {
                int k0 = 2 * p;
                uint32_t lo = col < n && k0 < k ? raw16(w, row + (size_t)k0) : 0;
                uint32_t hi = col < n && k0 + 1 < k ? raw16(w, row + (size_t)k0 + 1) : 0;
                dst[(size_t)p * nr + c] = lo | hi << 16;
            }
        }
    }
}

/* B panels of f32: element (panel, kk, c) = W[panel*NR + c][kk], exact for every dtype. */
static void pack_b_f32(const void *w, g4v_dtype dtype, int n, int k, const g4v_wmat *m,
                       float *dst) {
    int nr = m->kern->nr;
    for (int pn = 0; pn < m->npanels; pn++)
        for (int kk = 0; kk < m->kpad; kk++)
            for (int c = 0; c < nr; c++, dst++) {
                int col = pn * nr + c;
                *dst = col < n && kk < k ? g4v_load_elem(w, dtype, (size_t)col * k + kk) : 0.0f;
            }
}

/* INT8 B panels (gemm_kernel.h): per column, the scale and codes of gemm_q8.h, 4 consecutive k
 * per 32-bit word, then the panel's scales and +128 corrections. Runs once per weight. */
static void pack_b_q8(const void *w, g4v_dtype dtype, int n, int k, const g4v_wmat *m,
                      unsigned char *dst) {
    int nr = m->kern->nr;
    for (int pn = 0; pn < m->npanels; pn++, dst += m->panel_bytes) {
        float *scales = (float *)(dst + (size_t)m->kpad * nr);
        int32_t *corr = (int32_t *)(scales + nr);
        for (int c = 0; c < nr; c++) {
            int col = pn * nr + c;
            float amax = 0.0f, inv = 0.0f;
            for (int kk = 0; col < n && kk < k; kk++) {
                amax = g4v_q8_amax_step(amax, g4v_load_elem(w, dtype, (size_t)col * k + kk));
            }
            scales[c] = col < n ? g4v_q8_scale(amax, &inv) : 0.0f;
            int32_t sum = 0;
            for (int kk = 0; kk < m->kpad; kk++) {
                int8_t q = col < n && kk < k
                               ? g4v_q8_code(g4v_load_elem(w, dtype, (size_t)col * k + kk), inv)
                               : 0;
                dst[((size_t)(kk / 4) * nr + c) * 4 + kk % 4] = (unsigned char)q;
                sum += q;
            }
            corr[c] = 128 * sum;
        }
    }
}

/* Blocked INT8 B panels (gemm_kernel.h): per column and 32-block, the scale and codes of
 * gemm_q8.h (the codes' layout as pack_b_q8's), then the panel's block scales and +128
 * corrections per block. Runs once per weight. */
static void pack_b_q8b(const void *w, g4v_dtype dtype, int n, int k, const g4v_wmat *m,
                       unsigned char *dst) {
    int nr = m->kern->nr, nb = m->kpad / G4V_Q8_BLOCK;
    for (int pn = 0; pn < m->npanels; pn++, dst += m->panel_bytes) {
        float *scales = (float *)(dst + (size_t)m->kpad * nr);
        int32_t *corr = (int32_t *)(scales + (size_t)nb * nr);
        for (int c = 0; c < nr; c++) {
            int col = pn * nr + c;
            for (int b = 0; b < nb; b++) {
                int k0 = b * G4V_Q8_BLOCK, k1 = k0 + G4V_Q8_BLOCK < k ? k0 + G4V_Q8_BLOCK : k;
                float amax = 0.0f, inv = 0.0f;
                for (int kk = k0; col < n && kk < k1; kk++) {
                    amax = g4v_q8_amax_step(amax, g4v_load_elem(w, dtype, (size_t)col * k + kk));
                }
                scales[(size_t)b * nr + c] = col < n ? g4v_q8_scale(amax, &inv) : 0.0f;
                int32_t sum = 0;
                for (int kk = k0; kk < k0 + G4V_Q8_BLOCK; kk++) {
                    int8_t q = 0;
                    if (col < n && kk < k1)
                        q = g4v_q8_code(g4v_load_elem(w, dtype, (size_t)col * k + kk), inv);
                    dst[((size_t)(kk / 4) * nr + c) * 4 + kk % 4] = (unsigned char)q;
                    sum += q;
                }
                corr[(size_t)b * nr + c] = 128 * sum;
            }
        }
    }
}

/* Blocked INT8 B panels straight from Q8_0 blocks (gemm.h): each block's codes as stored and
 * its f16 d widened (exactly) to f32 as the block scale. */
static void pack_b_q8_0(const unsigned char *blocks, int n, int k, const g4v_wmat *m,
                        unsigned char *dst) {
    int nr = m->kern->nr, nb = k / G4V_Q8_BLOCK;
    for (int pn = 0; pn < m->npanels; pn++, dst += m->panel_bytes) {
        float *scales = (float *)(dst + (size_t)m->kpad * nr);
        int32_t *corr = (int32_t *)(scales + (size_t)nb * nr);
        for (int c = 0; c < nr; c++) {
            int col = pn * nr + c;
            for (int b = 0; b < nb; b++) {
                const unsigned char *src =
                    col < n ? blocks + ((size_t)col * nb + b) * G4V_Q8_0_BLOCK_BYTES : NULL;
                scales[(size_t)b * nr + c] = src ? g4v_load_elem(src, G4V_DT_F16, 0) : 0.0f;
                int32_t sum = 0;
                for (int j = 0; j < G4V_Q8_BLOCK; j++) {
                    int kk = b * G4V_Q8_BLOCK + j;
                    int8_t q = src ? (int8_t)src[2 + j] : 0;
                    dst[((size_t)(kk / 4) * nr + c) * 4 + kk % 4] = (unsigned char)q;
                    sum += q;
                }
                corr[(size_t)b * nr + c] = 128 * sum;
            }
        }
    }
}

size_t g4v_gemm_a_panel_bytes(const g4v_gemm_kernel *k, int kpad) {
    if (k->q8_blocks) return g4v_q8b_a_panel_bytes(k->mr, kpad);
    size_t codes = (size_t)k->mr * (size_t)kpad;
    if (k->int8) return codes + sizeof(float) * (size_t)k->mr;
    return codes * (k->a_bf16 ? 2 : 4);
}

size_t g4v_gemm_b_panel_bytes(const g4v_gemm_kernel *k, int kpad) {
    size_t codes = (size_t)k->nr * (size_t)kpad;
    if (k->q8_blocks)
        return codes + (sizeof(float) + sizeof(int32_t)) * (size_t)k->nr *
                           (size_t)(kpad / G4V_Q8_BLOCK);
    if (k->int8) return codes + (sizeof(float) + sizeof(int32_t)) * (size_t)k->nr;
    return codes * (k->b_bf16 ? 2 : 4);
}

/* The panels' bytes for kernel kern: npanels panels of kpad x NR elements. */
static size_t packed_bytes(const g4v_gemm_kernel *kern, int n, int k) {
    if (kern->inner) return 0; /* W is used where it lies */
    int kpad = (k + kern->kg - 1) / kern->kg * kern->kg;
    size_t npanels = (size_t)(n + kern->nr - 1) / (size_t)kern->nr;
    return g4v_gemm_b_panel_bytes(kern, kpad) * npanels;
}

/* G4V_PACK_WEIGHTS=1: BF16 weights packed at load (the in-place kernels' packed twins: the same
 * bits) in every model of the process, as g4v_model_options.pack_weights asks for one model
 * (docs/ARCHITECTURE.md §3). */
static int pack_weights(void) {
    const char *v = getenv("G4V_PACK_WEIGHTS");
    return v && *v && strcmp(v, "0") != 0;
}

/* Whether an F32 weight of count values is taken as BF16 (docs/NUMERICS.md §10): in the float
 * modes, when every value is a bf16 value (its low 16 bits zero: an F32 file written from a
 * bf16 checkpoint). Its BF16 form is then exactly the same numbers, so it takes the BF16
 * kernels and gives its BF16 source's bits on every table. The INT8 modes quantize the values
 * themselves and take any dtype alike. w NULL: no. */
static int f32_as_bf16(const void *w, g4v_dtype dtype, size_t count, g4v_math_mode mode) {
    if (!w || dtype != G4V_DT_F32 || (mode != G4V_MATH_FAST && mode != G4V_MATH_PRECISE))
        return 0;
    const unsigned char *b = w;
    uint16_t lo = 0;
    for (size_t i = 0; i < count && !lo; i++) { /* stops at the first value that is not bf16 */
        uint16_t h;
        memcpy(&h, b + 4 * i + (G4V_LITTLE_ENDIAN ? 0 : 2), 2);
        lo |= h;
    }
    return !lo;
}

/* The bf16 halves of count F32 values that are bf16 values (f32_as_bf16): exact, no rounding. */
static void f32_to_bf16_exact(const void *w, size_t count, uint16_t *dst) {
    const unsigned char *b = w;
    for (size_t i = 0; i < count; i++)
        memcpy(&dst[i], b + 4 * i + (G4V_LITTLE_ENDIAN ? 2 : 0), 2);
}

/* K groups per chunk from the kernel's own blocking hint (gemm_kernel.h kc_values): chunks of
 * equal size, none above the hint. */
static int kc_hint(const g4v_gemm_kernel *kern, int kgroups) {
    int most = kern->kc_values / kern->kg > 0 ? kern->kc_values / kern->kg : 1;
    int nchunks = (kgroups + most - 1) / most;
    return (kgroups + nchunks - 1) / nchunks;
}

/* The first kernel of kt that fits dtype and mode (no in-place one when pack), or NULL. */
static const g4v_gemm_kernel *choose(const g4v_kernels *kt, g4v_dtype dtype, g4v_math_mode mode,
                                     int pack) {
    int packed = pack || pack_weights();
    for (int i = 0; i < kt->ngemm; i++)
        if (!(packed && kt->gemm[i]->inner) && g4v_gemm_kernel_fits(kt->gemm[i], dtype, mode))
            return kt->gemm[i];
    return NULL;
}

/* g4v_wmat_create_with, packing into storage when it is given (the caller's, not freed here),
 * else into a block of its own. */
static int create(const g4v_kernels *kt, const g4v_gemm_kernel *kern, const void *w,
                  g4v_dtype dtype, int as_bf16, int q8_0, int n, int k, g4v_math_mode mode,
                  void *storage, g4v_wmat **out, g4v_err *err) {
    *out = NULL;
    if (n <= 0 || k <= 0) return g4v_fail(err, G4V_ERR_ARG, "weight matrix %dx%d is empty", n, k);
    if (n > MAX_DIM || k > MAX_DIM)
        return g4v_fail(err, G4V_ERR_UNSUPPORTED, "weight matrix %dx%d exceeds %d rows or columns",
                        n, k, MAX_DIM);
    if (!w) return g4v_fail(err, G4V_ERR_ARG, "weight matrix %dx%d has no data", n, k);
    if (q8_0 && (mode != G4V_MATH_INT8_BLOCKS || k % G4V_Q8_BLOCK))
        return g4v_fail(err, G4V_ERR_ARG,
                        "Q8_0 weight %dx%d: used directly only in INT8_BLOCKS mode with whole "
                        "32-blocks",
                        n, k);
    if (dtype != G4V_DT_BF16 && dtype != G4V_DT_F16 && dtype != G4V_DT_F32)
        return g4v_fail(err, G4V_ERR_ARG, "weight dtype %d is not BF16, F16 or F32", (int)dtype);
    if (mode != G4V_MATH_FAST && mode != G4V_MATH_PRECISE && !g4v_math_is_int8(mode))
        return g4v_fail(err, G4V_ERR_ARG, "math mode %d is not FAST, PRECISE, INT8 or INT8_BLOCKS",
                        (int)mode);
    if (g4v_math_is_int8(mode) && k > G4V_Q8_MAX_K)
        return g4v_fail(err, G4V_ERR_UNSUPPORTED,
                        "weight matrix %dx%d: INT8 mode takes at most %d input columns", n, k,
                        G4V_Q8_MAX_K);
    if (kern->mr * kern->nr > G4V_GEMM_MAX_TILE)
        return g4v_fail(err, G4V_ERR_INTERNAL,
                        "GEMM kernel %s computes %d x %d blocks, above the drivers' %d floats",
                        kern->name, kern->mr, kern->nr, (int)G4V_GEMM_MAX_TILE);
    if (!g4v_gemm_kernel_fits(kern, as_bf16 ? G4V_DT_BF16 : dtype, mode))
        return g4v_fail(err, G4V_ERR_INTERNAL,
                        "GEMM kernel %s cannot multiply %s weights in %s mode", kern->name,
                        g4v_dtype_name(dtype),
                        mode == G4V_MATH_FAST      ? "FAST"
                        : mode == G4V_MATH_PRECISE ? "PRECISE"
                        : mode == G4V_MATH_INT8    ? "INT8"
                                                   : "INT8_BLOCKS");
    /* an F32 weight of bf16 values as its BF16 form (f32_as_bf16): a bf16 copy, read in place
     * or packed from; the copy lives in storage (g4v_wmat_packed_bytes counted it) or in a block
     * of the weight's own, or only while packing */
    uint16_t *copy = NULL;
    size_t count = (size_t)n * (size_t)k, copy_bytes = (count * 2 + 63) & ~(size_t)63;
    if (as_bf16) {
        copy = kern->inner && storage ? storage : g4v_malloc_large(copy_bytes);
        if (!copy)
            return g4v_fail(err, G4V_ERR_NOMEM, "out of memory for the bf16 form of a %dx%d weight",
                            n, k);
        f32_to_bf16_exact(w, count, copy);
        w = copy;
        dtype = G4V_DT_BF16;
    }
    int own_copy = as_bf16 && copy != storage;
    g4v_wmat *m = g4v_calloc(1, sizeof *m);
    if (!m) {
        if (own_copy) g4v_free_large(copy);
        return g4v_fail(err, G4V_ERR_NOMEM, "out of memory preparing a %dx%d weight", n, k);
    }
    m->n = n;
    m->k = k;
    m->mode = mode;
    m->kern = kern;
    m->geglu_row = kt->use[G4V_KF_GEGLU_ROW].geglu_row;
    m->kpad = (k + kern->kg - 1) / kern->kg * kern->kg;
    m->npanels = (n + kern->nr - 1) / kern->nr;
    m->panel_bytes = g4v_gemm_b_panel_bytes(kern, m->kpad);
    m->bytes = m->panel_bytes * (size_t)m->npanels;
    /* Blocking (gemm_driver.c): one K chunk of a B panel plus one of an A micro-panel fill at
     * most a quarter of the L2, chunks of equal size; a task's A rows for one chunk fill about
     * half the L2. Not BLIS's L1-sized KC: our kernels load B as whole vectors (2 per 24
     * multiply-adds in the 12 x 32 tile), so a B panel streams from L2 at full speed, while every
     * extra K chunk stores and reloads the task's partial sums. */
    size_t l2_half =
        half_cache(_SC_LEVEL2_CACHE_SIZE, (size_t)512 << 10, (size_t)64 << 10, (size_t)2 << 20);
    m->a_budget = l2_half;
    size_t per_group = (size_t)kern->kg * ((size_t)kern->nr * (kern->b_bf16 ? 2 : 4) +
                                           (size_t)kern->mr * (kern->a_bf16 ? 2 : 4));
    if (kern->int8) per_group = (size_t)kern->kg * (size_t)(kern->nr + kern->mr);
    size_t chunk_budget = l2_half / 2;
    int kgroups = m->kpad / kern->kg,
        kc_max = chunk_budget / per_group > 0 ? (int)(chunk_budget / per_group) : 1;
    int nchunks = (kgroups + kc_max - 1) / kc_max;
    m->kc_groups = (kgroups + nchunks - 1) / nchunks;
    if (kern->kc_values) m->kc_groups = kc_hint(kern, kgroups);
    if (kern->int8) m->kc_groups = kgroups; /* int32 sums are never split (gemm_kernel.h) */
    if (kern->inner) { /* in place (gemm_inplace.c): W tiles, nothing packed or held */
        /* K chunks: a W tile's chunk (the broadcast operand, reused by every X panel of a
         * task) fills at most half the L1; the X panels stream from L2 under it */
        size_t l1_half = half_cache(_SC_LEVEL1_DCACHE_SIZE, (size_t)32 << 10, (size_t)8 << 10,
                                    (size_t)32 << 10);
        size_t tile_group = (size_t)kern->mr * (size_t)kern->kg * (kern->inner->a_bf16 ? 2 : 4);
        int kc_in = l1_half / tile_group > 0 ? (int)(l1_half / tile_group) : 1;
        int chunks_in = (kgroups + kc_in - 1) / kc_in;
        m->kc_groups = (kgroups + chunks_in - 1) / chunks_in;
        if (kern->kc_values) m->kc_groups = kc_hint(kern, kgroups);
        m->npanels = (n + kern->mr - 1) / kern->mr;
        m->panel_bytes = m->bytes = 0;
        m->in_place = 1;
        m->b = (void *)w;
        if (as_bf16) { /* W is the bf16 copy, held by the weight (or in the caller's storage) */
            m->copied = 1;
            m->owns_b = own_copy;
            m->bytes = copy_bytes;
        }
        *out = m;
        return G4V_OK;
    }
    m->owns_b = storage == NULL;
    m->b = storage ? storage : g4v_malloc_large(m->bytes);
    if (!m->b) {
        if (own_copy) g4v_free_large(copy);
        g4v_free(m);
        return g4v_fail(err, G4V_ERR_NOMEM, "out of memory packing a %dx%d weight (%zu bytes)", n,
                        k, (size_t)n * (size_t)k * (kern->b_bf16 ? 2 : 4));
    }
    if (q8_0)
        pack_b_q8_0(w, n, k, m, m->b);
    else if (kern->q8_blocks)
        pack_b_q8b(w, dtype, n, k, m, m->b);
    else if (kern->int8)
        pack_b_q8(w, dtype, n, k, m, m->b);
    else if (kern->b_bf16)
        pack_b_pairs(w, n, k, m, m->b);
    else
        pack_b_f32(w, dtype, n, k, m, m->b);
    if (own_copy) g4v_free_large(copy); /* packed from: no longer needed */
    *out = m;
    return G4V_OK;
}

/* Whether create takes the F32 weight w as BF16 (in range and f32_as_bf16). */
static int as_bf16_of(const void *w, g4v_dtype dtype, int n, int k, g4v_math_mode mode) {
    return n > 0 && k > 0 && n <= MAX_DIM && k <= MAX_DIM &&
           f32_as_bf16(w, dtype, (size_t)n * (size_t)k, mode);
}

int g4v_wmat_create_with(const g4v_kernels *kt, const g4v_gemm_kernel *kern, const void *w,
                         g4v_dtype dtype, int n, int k, g4v_math_mode mode, g4v_wmat **out,
                         g4v_err *err) {
    /* an F32 weight of bf16 values given a BF16 kernel: its BF16 form */
    int as_bf16 = kern->b_bf16 && !kern->int8 && as_bf16_of(w, dtype, n, k, mode);
    return create(kt, kern, w, dtype, as_bf16, 0, n, k, mode, NULL, out, err);
}

int g4v_wmat_create_in(const g4v_kernels *kt, const void *w, g4v_dtype dtype, int n, int k,
                       g4v_math_mode mode, int pack, void *storage, g4v_wmat **out, g4v_err *err) {
    int as_bf16 = as_bf16_of(w, dtype, n, k, mode);
    const g4v_gemm_kernel *kern = choose(kt, as_bf16 ? G4V_DT_BF16 : dtype, mode, pack);
    if (kern) return create(kt, kern, w, dtype, as_bf16, 0, n, k, mode, storage, out, err);
    *out = NULL;
    return g4v_fail(err, G4V_ERR_ARG, "no GEMM kernel for weight dtype %d in math mode %d",
                    (int)dtype, (int)mode);
}

int g4v_wmat_create_q8_0_with(const g4v_kernels *kt, const g4v_gemm_kernel *kern,
                              const void *blocks, int n, int k, g4v_wmat **out, g4v_err *err) {
    return create(kt, kern, blocks, G4V_DT_F32, 0, 1, n, k, G4V_MATH_INT8_BLOCKS, NULL, out,
                  err);
}

int g4v_wmat_create_q8_0_in(const g4v_kernels *kt, const void *blocks, int n, int k,
                            void *storage, g4v_wmat **out, g4v_err *err) {
    /* the dtype only picks the kernel (every blocked INT8 kernel takes any dtype) */
    const g4v_gemm_kernel *kern = choose(kt, G4V_DT_F32, G4V_MATH_INT8_BLOCKS, 0);
    if (kern)
        return create(kt, kern, blocks, G4V_DT_F32, 0, 1, n, k, G4V_MATH_INT8_BLOCKS, storage,
                      out, err);
    *out = NULL;
    return g4v_fail(err, G4V_ERR_ARG, "no GEMM kernel for Q8_0 weights in INT8_BLOCKS mode");
}

int g4v_wmat_create(const g4v_kernels *kt, const void *w, g4v_dtype dtype, int n, int k,
                    g4v_math_mode mode, g4v_wmat **out, g4v_err *err) {
    return g4v_wmat_create_in(kt, w, dtype, n, k, mode, 0, NULL, out, err);
}

size_t g4v_wmat_packed_bytes(const g4v_kernels *kt, const void *w, g4v_dtype dtype, int n, int k,
                             g4v_math_mode mode, int pack) {
    int as_bf16 = as_bf16_of(w, dtype, n, k, mode);
    const g4v_gemm_kernel *kern = choose(kt, as_bf16 ? G4V_DT_BF16 : dtype, mode, pack);
    if (!kern || n <= 0 || k <= 0 || n > MAX_DIM || k > MAX_DIM) return 0;
    if (as_bf16 && kern->inner) /* the bf16 copy it reads in place */
        return ((size_t)n * (size_t)k * 2 + 63) & ~(size_t)63;
    return packed_bytes(kern, n, k);
}

void g4v_wmat_free(g4v_wmat *w) {
    if (!w) return;
    if (w->owns_b) g4v_free_large(w->b);
    g4v_free(w);
}

int g4v_wmat_n(const g4v_wmat *w) {
    return w->n;
}
int g4v_wmat_k(const g4v_wmat *w) {
    return w->k;
}
size_t g4v_wmat_bytes(const g4v_wmat *w) {
    return w->bytes;
}
int g4v_wmat_in_place(const g4v_wmat *w) {
    return w->in_place && !w->copied; /* a bf16 copy is the weight's, not the caller's array */
}
const char *g4v_wmat_kernel_name(const g4v_wmat *w) {
    return w->kern->name;
}
const g4v_gemm_kernel *g4v_wmat_kernel(const g4v_wmat *w) {
    return w->kern;
}
