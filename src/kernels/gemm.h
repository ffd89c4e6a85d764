/* gemm.h - y = x · Wᵀ for the encoder's linears, with weights prepared once per model.
 *
 * W is stored [N, K] (PyTorch Linear layout: N outputs, K inputs) in BF16/F16/F32. g4v_wmat_create
 * prepares it once (packing into whatever layout the fastest available kernel wants); the result is
 * immutable and shared by threads. g4v_gemm computes, for every row m < M and output n < N:
 *
 *     x' = clamp(X[m, :], epi.in_lo, epi.in_hi)            (identity when the bounds are ±inf)
 *     x' = mode == FAST ? bf16(x') : x'                     (round-to-nearest-even)
 *     acc = Σ_k x'[k] · W[n, k]                             (f32 accumulation, W exact as stored)
 *     y  = clamp(acc, epi.out_lo, epi.out_hi)
 *     y  = epi.gelu_gate ? gelu_tanh(G[m, n]) * y : y        (fused GeGLU, the table's geglu_row)
 *     Y[m, n] = epi.accumulate ? Y[m, n] + y : y
 *
 * The summation order is fixed per (m, n) regardless of thread count, so results are
 * bit-identical for any pool size. g4v_gemm_ref is the portable specification in code; every fast
 * kernel is tested against it.
 *
 * Implementation (gemm_kernel.h): BLIS-style packing (gemm_pack.c) and loop nest (gemm_driver.c)
 * in C around one micro-kernel per ISA, chosen once per weight from the kernel table the caller
 * passes (dispatch.h: the CPU's features, capped by G4V_ISA=portable|avx2|avx512):
 *   FAST, BF16 weights:  avx512-bf16dp (vdpbf16ps) > avx512-bf16w > avx2-bf16w > portable-bf16w
 *   PRECISE, BF16:       avx512-bf16w > avx2-bf16w > portable-bf16w
 *                        each preceded by its in-place form (…-inplace, gemm_inplace.c), which
 *                        reads W where the caller's array lies and gives the same bits
 *   F16/F32 weights:     avx512-f32 > avx2-f32 > portable-f32
 *   INT8, any dtype:     avx512-vnni-q8 > avx-vnni-q8 > avx2-q8 > portable-q8 (gemm_q8.h: x and W
 *                        quantized to int8, exact int32 sums, one fixed dequantization; every
 *                        kernel matches g4v_gemm_ref bit for bit)
 *   INT8_BLOCKS:         avx512-vnni-q8b > portable-q8b (the same with per-32-block scales)
 * Numerics: the portable kernels match g4v_gemm_ref bit for bit; the FMA kernels (…-f32,
 * …-bf16w) sum k in order with one rounding per step, which is bit-identical to the reference
 * whenever products are exact (FAST mode with BF16/F16 weights) and within K·2⁻²⁴·Σ|x'w| of it
 * otherwise; vdpbf16ps sums each (even, odd) k pair before accumulating (and flushes subnormal
 * inputs), also within that bound.
 * F32 weights of bf16 values (every value's low 16 bits zero, checked per weight at
 * g4v_wmat_create: an F32 file written from a bf16 checkpoint) are taken as BF16 in FAST and
 * PRECISE: a bf16 copy (2 bytes per element, read in place or packed from), the BF16 kernels, and
 * so the bits of the BF16 source on every table (docs/NUMERICS.md §10).
 * Memory (g4v_wmat_bytes): BF16 weights are used in place (0 bytes held; the caller's array must
 * outlive the weight) where the CPU has an in-place kernel (x86 and portable), else packed at 2
 * bytes per element; F16/F32 weights are held as f32 (4 bytes) since W is used exactly as
 * stored. Tiles are zero-padded (N to the tile width, K to 8 or 16).
 * Scratch: g4v_gemm packs a task's rows of A (and keeps partial sums when K is split into
 * chunks) in a per-thread buffer, allocated by a thread's first call with the largest shape and
 * reused afterwards (a few MB at most; freed when the thread exits), so the hot path does not
 * allocate once warm. If that allocation fails it falls back to an allocation-free path with the
 * same results.
 * Requirements: in_lo <= in_hi and out_lo <= out_hi (not NaN); ldx >= K, ldy >= N; Y must not
 * overlap X.
 */
#ifndef G4V_KERNELS_GEMM_H
#define G4V_KERNELS_GEMM_H

#include "base/dtype.h"
#include "base/error.h"
#include "base/pool.h"
#include "kernels.h"

#include <stddef.h>

/* The math mode is the public g4v_math_mode (g4v.h, through base/error.h). What each one means at
 * a GEMM: G4V_MATH_FAST rounds activations to bf16 at the GEMM inputs (bf16 dot products);
 * G4V_MATH_PRECISE keeps f32 activations, f32 products of the exact weights; G4V_MATH_INT8 is
 * int8 x int8 -> int32 with weights per output channel and activations per row (gemm_q8.h);
 * G4V_MATH_INT8_BLOCKS is the same with both scales per 32-block of K (gemm_q8.h, llama.cpp's
 * Q8_0 x Q8_0). */

/* Whether mode is one of the INT8 modes (per channel or per block). */
static inline int g4v_math_is_int8(g4v_math_mode mode) {
    return mode == G4V_MATH_INT8 || mode == G4V_MATH_INT8_BLOCKS;
}

typedef struct g4v_wmat g4v_wmat;

typedef struct g4v_gemm_epi {
    float in_lo, in_hi;   /* input clamp; -INFINITY/INFINITY for none */
    float out_lo, out_hi; /* output clamp */
    int accumulate;       /* nonzero: Y += result (fused residual add) */
    /* Fused GeGLU: when non-NULL, the result is multiplied by gelu_tanh of the same element of
     * G (row stride ldg), computed by the weight's geglu_row kernel while the output tile is still
     * in L1, which saves a pass over two [M, N] matrices. Requires accumulate == 0. G must not
     * overlap Y. */
    const float *gelu_gate;
    size_t ldg;
} g4v_gemm_epi;

/* The do-nothing epilogue: no clamps, Y = result. */
g4v_gemm_epi g4v_gemm_epi_none(void);

/* Prepares W [n, k] for the first micro-kernel of table kt that fits dtype and mode; the weight
 * keeps kt's GeGLU row kernel for the fused epilogue. Errors: G4V_ERR_ARG (empty, no data, bad
 * dtype or mode), G4V_ERR_UNSUPPORTED (a side above 2^20), G4V_ERR_NOMEM. */
int g4v_wmat_create(const g4v_kernels *kt, const void *w, g4v_dtype dtype, int n, int k,
                    g4v_math_mode mode, g4v_wmat **out, g4v_err *err);
/* The same, with the packed panels written to storage: 64-byte aligned, at least
 * g4v_wmat_packed_bytes bytes, owned by the caller and freed after g4v_wmat_free. A model puts all
 * its weights in one such block: separate blocks of a few MB would each round up to whole 2 MB
 * huge pages, up to 2 MB of padding per weight. NULL storage (and pack 0) is g4v_wmat_create.
 * pack = 1 packs BF16 weights even where the table has an in-place kernel (the packed twin: the
 * same bits; faster warm encodes for a process that keeps the model, at the weights' size in
 * memory: g4v_model_options.pack_weights); pack = 0 reads them in place where it can, unless
 * G4V_PACK_WEIGHTS=1 is set. */
int g4v_wmat_create_in(const g4v_kernels *kt, const void *w, g4v_dtype dtype, int n, int k,
                       g4v_math_mode mode, int pack, void *storage, g4v_wmat **out, g4v_err *err);
/* g4v_wmat_create_in for an [n, k] weight given as Q8_0 blocks as GGUF stores them
 * (base/dtype.h: G4V_Q8_0_BLOCK_BYTES each; row n: k / G4V_Q8_BLOCK blocks, k a multiple of
 * G4V_Q8_BLOCK), in INT8_BLOCKS mode only: the blocked INT8 panels take the file's codes and its
 * d widened exactly to f32 as they are (codes -128 included), with no f32 round trip and no
 * requantization (docs/NUMERICS.md §12.5). The packed size is g4v_wmat_packed_bytes(kt, any
 * dtype, n, k, G4V_MATH_INT8_BLOCKS). */
int g4v_wmat_create_q8_0_in(const g4v_kernels *kt, const void *blocks, int n, int k,
                            void *storage, g4v_wmat **out, g4v_err *err);

/* Bytes of the packed panels of an [n, k] weight for the kernel g4v_wmat_create would choose; 0
 * when none fits or the shape is out of range (g4v_wmat_create then fails and says why). w (may
 * be NULL: not looked at) is the weight's data: an F32 weight whose values are all bf16 values
 * is prepared as its BF16 form (see below), which needs its bf16 copy's bytes. pack as for
 * g4v_wmat_create_in. */
size_t g4v_wmat_packed_bytes(const g4v_kernels *kt, const void *w, g4v_dtype dtype, int n, int k,
                             g4v_math_mode mode, int pack);
void g4v_wmat_free(g4v_wmat *w);
int g4v_wmat_n(const g4v_wmat *w);
int g4v_wmat_k(const g4v_wmat *w);
size_t g4v_wmat_bytes(const g4v_wmat *w);            /* memory the prepared weight holds */
/* Whether the weight reads W where the caller's array lies (BF16 weights, FAST or PRECISE, on the
 * CPUs with an in-place kernel: gemm_kernel.h): that array must then outlive the weight and
 * keep its pages (no g4v_drop_mapped_pages). g4v_wmat_bytes is 0 for such a weight. */
int g4v_wmat_in_place(const g4v_wmat *w);
const char *g4v_wmat_kernel_name(const g4v_wmat *w); /* e.g. "avx512-bf16dp", for logs */

/* Y[m, N] (row stride ldy) from X[m, K] (row stride ldx); m < 2^31. epi may be NULL. */
void g4v_gemm(g4v_pool *pool, const float *X, size_t ldx, const g4v_wmat *W, float *Y, size_t ldy,
              size_t m, const g4v_gemm_epi *epi);

/* Portable reference: the same contract, straight from the raw weight array w [n, k]; the fused
 * GeGLU uses kt's geglu_row kernel, as a weight prepared with kt would. */
void g4v_gemm_ref(const g4v_kernels *kt, const float *X, size_t ldx, const void *w, g4v_dtype dtype,
                  float *Y, size_t ldy, size_t m, int n, int k, g4v_math_mode mode,
                  const g4v_gemm_epi *epi);

#endif
