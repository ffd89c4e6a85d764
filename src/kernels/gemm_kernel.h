/* gemm_kernel.h - the interface between the portable GEMM driver (gemm_driver.c, gemm_pack.c) and
 * its micro-kernels (gemm_<isa>.c in the ISA folders, registered in variants.def).
 *
 * BLIS-style: the driver packs A (activations) per call and B (weights) once per model into
 * micro-panels, and a per-ISA micro-kernel multiplies one MR-row A micro-panel by one NR-column B
 * panel over the whole (padded) K, keeping the MR x NR accumulators in registers. Everything else
 * (blocking, threading, edges) is shared C.
 *
 * Layouts (K is padded with zeros to kpad, a multiple of the kernel's KG; rows/columns past the
 * matrix edge are zero):
 *   A micro-panel, MR rows: element (m, k) at index ((k / KG) * MR + m) * KG + k % KG, so each
 *     row's KG consecutive k values are contiguous (one vector load/store when packing) and the
 *     kernel broadcasts them from fixed offsets. Element type f32, or bf16 (a_bf16) whose
 *     consecutive (even, odd) k pairs form the 32-bit operands of vdpbf16ps.
 *   B panel, NR columns: f32 [kpad][NR], or (b_bf16) bf16 pairs [kpad / 2][NR][2]: the 32-bit
 *     word for (pair p, column n) holds W[n][2p] in its low half and W[n][2p + 1] in its high half.
 *
 * The kernel's sum for each (m, n) runs over k in an order fixed by the kernel alone (never by
 * blocking or threads): sequential k for the FMA kernels, pairs for vdpbf16ps.
 *
 * INT8 kernels (int8 set; INT8 mode, gemm_q8.h; KG = 4): codes are bytes.
 *   A micro-panel: MR x kpad codes in the layout above (signed, or a_u8: code + 128 as unsigned,
 *     the operand vpdpbusd wants), then MR f32 row scales sa; rows past the edge have scale 0.
 *   B panel: [kpad / 4][NR][4] signed codes (the 32-bit word for (group, column) holds W's 4
 *     consecutive k), then NR f32 column scales sw, then NR int32 corrections 128·Σ_k qw[n][k]
 *     (what the +128 shift of A adds to each sum; a_u8 kernels start their sums from minus it).
 *   The kernel always runs over the whole K (acc_in is NULL: int32 sums are never split into
 *   chunks) and writes the dequantized result, then the epilogue.
 *
 * Blocked INT8 kernels (int8 and q8_blocks set; INT8_BLOCKS mode, gemm_q8.h; KG = G4V_Q8_BLOCK =
 * 32, so kpad is whole blocks and the ukr's kgroups counts blocks):
 *   A micro-panel: MR x kpad codes in the layout above with KG = 32 (each row's 32 codes of a
 *     block contiguous; signed, or a_u8: + 128), then [kpad / 32][MR] f32 block scales.
 *   B panel: [kpad / 4][NR][4] signed codes as for INT8, then [kpad / 32][NR] f32 block scales,
 *     then [kpad / 32][NR] int32 corrections 128·Σ_{k in block} qw[n][k].
 */
#ifndef G4V_KERNELS_GEMM_KERNEL_H
#define G4V_KERNELS_GEMM_KERNEL_H

#include "gemm.h"
#include "kernels.h"

#include <stddef.h>
#include <stdint.h>

/* v clamped to [lo, hi] (lo <= hi; NaN stays NaN), as every GEMM clamp is defined. */
static inline float g4v_clampf(float v, float lo, float hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* Output epilogue as the micro-kernel applies it: y = clamp(acc) when clamp is set (lo <= hi),
 * then Y = accumulate ? Y + y : y. */
typedef struct g4v_ukr_epi {
    float lo, hi;
    int clamp;
    int accumulate;
} g4v_ukr_epi;

/* How A is prepared while packing: clamp to [lo, hi] when clamp is set, then round to bf16
 * (round-to-nearest-even, as g4v_round_bf16) when round is set. */
typedef struct g4v_pack_opts {
    float lo, hi;
    int clamp;
    int round;
} g4v_pack_opts;

/* Packs rows [0, rows) x columns [0, klen) of X (row stride ldx) into ceil(rows / MR) A
 * micro-panels of MR x kpad elements each, back to back at dst (kpad >= klen, a multiple of KG). */
typedef void (*g4v_pack_a_fn)(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                              const g4v_pack_opts *o);

/* acc = (acc_in ? acc_in : 0) + A·B over kgroups groups of KG k values, for the full MR x NR
 * tile; then the epilogue; then rows 0..MR-1, columns 0..NR-1 of y (row stride ldy) are written.
 * acc_in, when given, is an MR x NR row-major tile (it may be y itself with ldy == NR). */
typedef void (*g4v_ukr_fn)(int kgroups, const void *a, const void *b, const float *acc_in, float *y,
                           size_t ldy, const g4v_ukr_epi *e);

/* In-place kernels (gemm_inplace.c): BF16 weights read where they lie (the checkpoint's mapping),
 * with no packed copy. The roles of the inner micro-kernel's operands swap: W, [N, K] row-major
 * as stored, is the broadcast operand (its MR-row tiles copied, one K chunk at a time, into the
 * A layout above, a few KB that stay in L1 and serve every activation panel of a task), and X
 * is packed as the inner kernel's B panels (NR rows of X per panel). The kernel then computes
 * an MR x NR tile of Yᵀ (rows: W rows, columns: X rows) with the inner kernel's own arithmetic,
 * so every (m, n) sum runs in the same order with the same roundings as the packed kernel's:
 * the same bits. store_t writes that tile transposed into Y. */

/* Packs rows [0, rows) x columns [0, klen) of X (row stride ldx), clamped and rounded per o, into
 * ceil(rows / NR) B panels of the inner kernel (f32 [kpad][NR], or bf16 pairs [kpad / 2][NR][2]
 * when pairs), back to back at dst; rows and k past the edge are zero. */
typedef void (*g4v_pack_x_fn)(const float *x, size_t ldx, int rows, int klen, int kpad, void *dst,
                              const g4v_pack_opts *o);

/* Groups [0, groups) of KG values of W rows [0, rows) (bf16 as stored, row stride ldw) widened to
 * f32 into the inner kernel's A layout at dst (element (r, k) at ((k / KG) * MR + r) * KG +
 * k % KG): the vector form of gemm_inplace.c's W tile copy for the FMA kernels. */
typedef void (*g4v_pack_w_fn)(const uint16_t *w, size_t ldw, int rows, int groups, float *dst);

/* Y[c][r] from tile[r * nr + c] for r < rows, c < cols, with epilogue e (clamp, accumulate). */
typedef void (*g4v_store_t_fn)(const float *tile, int nr, int rows, int cols, float *y,
                               size_t ldy, const g4v_ukr_epi *e);

/* The largest MR x NR block a micro-kernel may compute, in floats: 32 x 32 (the AMX kernels).
 * The drivers keep a block of this size on the stack for edges and partial sums; a kernel whose
 * block is larger is refused when a weight is prepared (gemm_pack.c). */
enum { G4V_GEMM_MAX_TILE = 32 * 32 };

/* A micro-kernel and its A packer. The CPU features it needs are in its variants.def line. */
typedef struct g4v_gemm_kernel {
    const char *name;   /* for logs and tests, e.g. "avx512-bf16dp" */
    int mr, nr, kg;     /* tile rows, tile columns, k values per A group (even) */
    /* Blocking hint: K values per chunk (a multiple of kg), chosen for the kernel (the AMX
     * kernels keep their reused panel's chunk in L1); 0: the drivers' L2 rule (gemm_pack.c). */
    int kc_values;
    /* Called once on every thread of the pool when a g4v_gemm call with this kernel ends (NULL:
     * nothing to do): the AMX kernels release the tile state there (gemm_driver.c). */
    void (*release)(void);
    int a_bf16, b_bf16; /* operand formats (see the layouts above) */
    int int8, a_u8;     /* INT8 mode kernel; its A codes shifted to unsigned (see above) */
    int q8_blocks;      /* int8 kernel of the blocked variant (INT8_BLOCKS mode, see above) */
    g4v_pack_a_fn pack_a;
    g4v_ukr_fn ukr;
    /* In-place kernels only (see above): the micro-kernel run with swapped roles (its mr, nr, kg
     * and formats are this kernel's), the X packer into its B panels, the transposing store
     * (NULL: g4v_store_t_scalar) and the vector W tile widening for f32 A panels (NULL: plain
     * C). Such a kernel has b_bf16 set (BF16 weights only). */
    const struct g4v_gemm_kernel *inner;
    g4v_pack_x_fn pack_x;
    g4v_store_t_fn store_t;
    g4v_pack_w_fn pack_w; /* NULL: the portable copy; set only where the inner's A is f32 */
} g4v_gemm_kernel;

/* A prepared weight (immutable after g4v_wmat_create). */
struct g4v_wmat {
    int n, k;
    int kpad;    /* K rounded up to the kernel's KG */
    int npanels; /* ceil(N / NR) B panels, back to back at b */
    g4v_math_mode mode;
    const g4v_gemm_kernel *kern;
    g4v_geglu_row_fn *geglu_row; /* the fused GeGLU epilogue's row kernel, from the same table */
    size_t panel_bytes, bytes;
    int owns_b;      /* b is this weight's own block (g4v_wmat_create), else the caller's */
    int in_place;    /* b is W itself, [n][k] bf16 as the caller gave it (kern->inner set) */
    int copied;      /* in place on a bf16 copy of an F32 weight of bf16 values (gemm_pack.c) */
    size_t a_budget; /* bytes of packed A for one K chunk of a task (about half the L2) */
    int kc_groups; /* KG groups per K chunk: a chunk of a B and an A panel fill <= 1/4 of the L2 */
    void *b;
};

/* Whether kernel k computes the contract of gemm.h for this weight dtype and mode (a_bf16 kernels
 * need FAST mode; b_bf16 kernels need BF16 weights; int8 kernels, and only they, INT8 mode). The
 * CPU side is the kernel table's concern. */
int g4v_gemm_kernel_fits(const g4v_gemm_kernel *k, g4v_dtype dtype, g4v_math_mode mode);

/* g4v_wmat_create with the kernel chosen by the caller (tests); it must fit. */
int g4v_wmat_create_with(const g4v_kernels *kt, const g4v_gemm_kernel *kern, const void *w,
                         g4v_dtype dtype, int n, int k, g4v_math_mode mode, g4v_wmat **out,
                         g4v_err *err);
const g4v_gemm_kernel *g4v_wmat_kernel(const g4v_wmat *w);

/* g4v_wmat_create_q8_0_in with the (blocked INT8) kernel chosen by the caller (tests). */
int g4v_wmat_create_q8_0_with(const g4v_kernels *kt, const g4v_gemm_kernel *kern,
                              const void *blocks, int n, int k, g4v_wmat **out, g4v_err *err);

/* Blocking overrides for tests and benchmarks (0 = the default choice). no_scratch forces the
 * allocation-free path that g4v_gemm takes when its scratch cannot be allocated; kc_groups sets
 * the K chunk; out_prefetch 1 / -1 forces on / off the prefetch of each tile's output rows
 * (default: on when N > K; gemm_driver.c, bench/bench_gemm_tune.c). */
typedef struct g4v_gemm_cfg {
    int tiles_per_block;  /* MR-row tiles per task */
    int panels_per_block; /* NR-column panels per task */
    int no_scratch;
    int kc_groups;
    int out_prefetch;
} g4v_gemm_cfg;

void g4v_gemm_cfg_run(g4v_pool *pool, const float *X, size_t ldx, const g4v_wmat *W, float *Y,
                      size_t ldy, size_t m, const g4v_gemm_epi *epi, const g4v_gemm_cfg *cfg);

/* This thread's scratch of at least `bytes` (64-byte aligned), or NULL if it cannot be had.
 * Valid until the next call on the same thread (gemm_scratch.c). */
void *g4v_gemm_scratch(size_t bytes);
/* A second such buffer of the calling thread, for what one g4v_gemm call shares with all its
 * tasks (the in-place driver's packed X), distinct from the one its tasks use. */
void *g4v_gemm_scratch_shared(size_t bytes);

/* Shared by the ISA files (gemm_pack.c): the scalar A packer (any MR, KG, format), used for
 * the ragged tail of K by the vector packers too, and the scalar element preparation. */
void g4v_pack_a_scalar(const float *x, size_t ldx, int rows, int k0, int klen, int kpad, int mr,
                       int kg, int a_bf16, void *dst, const g4v_pack_opts *o);

/* The in-place kernels' scalar X packer (gemm_pack.c), any NR and format: all k of a partial
 * last panel, k from kdone on in the full panels (what a vector packer leaves; 0: everything);
 * and their portable transposing store (gemm_inplace.c). */
void g4v_pack_x_scalar(const float *x, size_t ldx, int rows, int kdone, int klen, int kpad, int nr,
                       int pairs, void *dst, const g4v_pack_opts *o);
void g4v_store_t_scalar(const float *tile, int nr, int rows, int cols, float *y, size_t ldy,
                        const g4v_ukr_epi *e);

/* One g4v_gemm call as the drivers see it: its operands, the epilogue (never NULL here) and what
 * it means for the kernels and the packers (gemm_driver.c fills it once for both drivers). */
typedef struct g4v_gemm_call {
    const float *X;
    size_t ldx;
    const g4v_wmat *W;
    float *Y;
    size_t ldy;
    int m;
    g4v_gemm_epi epi;
    g4v_ukr_epi uepi;   /* the output epilogue as kernels apply it */
    g4v_pack_opts pack; /* input clamp and rounding */
    int no_scratch;
} g4v_gemm_call;

/* g4v_gemm for a weight of an in-place kernel (gemm_inplace.c; g4v_gemm_cfg_run calls it). */
void g4v_gemm_inplace_run(g4v_pool *pool, const g4v_gemm_call *call, const g4v_gemm_cfg *cfg);

/* Bytes of one packed A micro-panel (MR rows over kpad) and of one B panel for kernel k. */
size_t g4v_gemm_a_panel_bytes(const g4v_gemm_kernel *k, int kpad);
size_t g4v_gemm_b_panel_bytes(const g4v_gemm_kernel *k, int kpad);

/* The INT8 A packer every INT8 kernel's pack_a may use for rows it leaves (and the portable one
 * uses for all): rows [0, rows) of x, clamped per o, quantized per row (gemm_q8.h) into
 * ceil(rows / mr) micro-panels of the layout above with groups of kg codes (4 for the VNNI and
 * portable kernels, 64 for AMX's tile rows) at dst. */
void g4v_pack_a_q8_scalar(const float *x, size_t ldx, int rows, int klen, int kpad, int mr,
                          int kg, int u8, void *dst, const g4v_pack_opts *o);

/* Bytes of a blocked INT8 A micro-panel of mr rows over kpad (codes, then block scales). */
static inline size_t g4v_q8b_a_panel_bytes(int mr, int kpad) {
    return (size_t)mr * (size_t)kpad + sizeof(float) * (size_t)mr * (size_t)(kpad / G4V_Q8_BLOCK);
}

/* The same for blocked INT8 kernels: per-(row, 32-block) scales and codes (kpad a multiple of
 * 32), in the blocked A layout above. */
void g4v_pack_a_q8b_scalar(const float *x, size_t ldx, int rows, int klen, int kpad, int mr,
                           int u8, void *dst, const g4v_pack_opts *o);

/* The scale and codes of one block of 32 activations xb[0, len) (len <= 32; the rest zero),
 * clamped per o: codes to q[32]; returns the scale (gemm_q8.h). */
float g4v_q8b_quantize_block(const float *xb, int len, const g4v_pack_opts *o, int8_t q[32]);

#endif
