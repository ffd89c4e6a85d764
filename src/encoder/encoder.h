/* encoder.h - the Gemma 4 vision tower: an image at its target size -> soft tokens [N, T].
 *
 * g4v_encoder holds the model prepared for computation (weights packed once); it is immutable
 * and shared by threads. g4v_workspace is per-caller scratch that grows to the largest image seen
 * and is reused, so the hot path never allocates. docs/NUMERICS.md §4 is the computation.
 *
 * Numerics: activations and the residual stream are f32 in both modes; weights are used exactly
 * as stored. G4V_MATH_FAST rounds the inputs of the encoder-block GEMMs to bf16 (bf16 dot
 * products); G4V_MATH_PRECISE does not. The patch embedding is exact in both modes (it is fed the
 * integers 2u - 255 and scaled by 1/255 in f32), the final projection is always f32, and
 * attention logits and the softmax are f32 (FAST on a CPU with AVX512_BF16 also rounds the
 * attention's q, k, v and probabilities to bf16 for its products). Against the float64 reference
 * (tests/reference/reference.py), e4b shape, 16 layers, 768x768: PRECISE 1.1e-6 relative RMSE,
 * FAST 1.9e-3 (synthetic weights; sharper attention raises FAST: docs/NUMERICS.md §8).
 * G4V_MATH_INT8 (opt-in) runs the blocks' linears as int8 x int8 -> int32 (kernels/gemm_q8.h:
 * weights per output channel at load, activations per row per call) and everything else as FAST
 * (the patch embedding and the final projection included); docs/NUMERICS.md §12 has its error.
 *
 * Merge contract (docs/NUMERICS.md §4.9, §5.3): the output rows are the language model's input
 * embeddings for the image-token positions, used as they are. Splice them into inputs_embeds AFTER
 * the text embeddings were multiplied by the LM's embed scale (bf16(sqrt(T))) and do not rescale
 * them: neither multiply nor divide by sqrt(T). Row k goes to the k-th <|image|> token of the span
 * <|image> <|image|> x N <image|> (boi_token_id, image_token_id, eoi_token_id in the config).
 */
#ifndef G4V_ENCODER_ENCODER_H
#define G4V_ENCODER_ENCODER_H

#include "base/error.h"
#include "base/pool.h"
#include "io/checkpoint.h"
#include "kernels/gemm.h"

#include <stddef.h>
#include <stdint.h>

/* The version of our numerics: bumped by any change that alters an output bit for the same
 * checkpoint, image, options and kernel path (a kernel's summation order, the resize, a rounding).
 * It is part of the model fingerprint (g4v_model_fingerprint), so cached features computed by an
 * older library are never served by a newer one that would compute different bits. */
#define G4V_NUMERICS_VERSION 1

/* INT8 mode: the linears (bits 1 << G4V_LIN_*) that stay FAST by default, and the
 * g4v_encoder_opts.int8_fast_linears value that asks for none (every linear int8; 0 there means
 * the default). v and o stay FAST: in int8 each alone costs ~2e-2 of relative error on e4b, the
 * other five together ~1.9e-2, and they are ~1/5 of the linears' FLOPs (docs/NUMERICS.md §12). */
#define G4V_INT8_FAST_LINEARS ((1u << G4V_LIN_V) | (1u << G4V_LIN_O))
#define G4V_INT8_NONE_FAST (1u << 31)

typedef struct g4v_encoder g4v_encoder;
typedef struct g4v_workspace g4v_workspace;

typedef struct g4v_encoder_opts {
    g4v_math_mode mode; /* G4V_MATH_FAST (default), G4V_MATH_PRECISE or G4V_MATH_INT8 */
    /* INT8 mode only: bit (1 << G4V_LIN_*) set = that linear of every block stays FAST (bf16)
     * instead of int8. 0 (default): G4V_INT8_FAST_LINEARS; G4V_INT8_NONE_FAST: none. */
    unsigned int8_fast_linears;
    /* 1: after packing each weight, drop its pages from memory (madvise DONTNEED), so peak RSS
     * is about the packed weights, not twice them. ONLY for a checkpoint from
     * g4v_checkpoint_open (read-only file mappings); tensors in ordinary memory would be zeroed.
     * 0 (default): leave the tensors alone. */
    int drop_mapped_pages;
    /* 1: check the config and every tensor's shape, but pack no weights: the result can report
     * its kernel path and nothing else (g4v_model_options.metadata_only). 0 (default): a full
     * model. */
    int check_only;
    /* 1: pack the BF16 weights at creation even where the kernel table could read them in place
     * (the same bits; faster warm encodes at their size in memory: g4v_model_options.pack_weights).
     * 0 (default): in place where the table has an in-place kernel. */
    int pack_weights;
    /* Rows per chunk of the forward pass's row-wise work (0: the default, 1024). Bounds the
     * workspace at any image size; the output is bit-identical for every value. */
    int chunk_rows;
    /* Most patch rows one pass of g4v_encoder_run_batch runs together (0: the default, 8192,
     * about a 900-token image); an image larger than that runs alone. Bounds the workspace of a
     * batch; the output is bit-identical for every value. */
    size_t batch_rows;
    /* Threads that pack the weights at creation (NULL: the calling thread). Only used during
     * g4v_encoder_create; the packed weights are the same for any pool. */
    g4v_pool *pool;
} g4v_encoder_opts;

/* The checkpoint must outlive the encoder (weights may stay memory-mapped). */
int g4v_encoder_create(const g4v_checkpoint *ck, const g4v_encoder_opts *opts, g4v_encoder **out,
                       g4v_err *err);
void g4v_encoder_free(g4v_encoder *enc);

/* The kernel path the encoder computes with, e.g. "features=0x1f gemm=avx512-bf16dp
 * attention=avx512 ...": the CPU features its kernel table was built for and the variant chosen
 * per family. Two machines (or G4V_ISA settings) with the same path give the same bits; different
 * paths may differ in the last bits (docs/ARCHITECTURE.md §4). Written into buf (always
 * terminated, truncated to cap). */
void g4v_encoder_kernel_path(const g4v_encoder *enc, char *buf, size_t cap);

/* 1 when some weight is read where it lies in the checkpoint (an in-place GEMM kernel), 0 when
 * every one was packed at creation (g4v_encoder_opts.pack_weights, or a CPU without in-place
 * kernels). */
int g4v_encoder_weights_in_place(const g4v_encoder *enc);

g4v_workspace *g4v_workspace_create(void);
void g4v_workspace_free(g4v_workspace *ws);

/* Encodes an RGB8 image already at its target size (width, height multiples of
 * patch_size * pooling_kernel_size, i.e. 48). out receives N = (height/48)*(width/48) rows of T
 * floats in row-major pooled-grid order. pool may be NULL (single-threaded); the output is
 * bit-identical for any pool size. One workspace serves one call at a time; the encoder may be
 * shared. Errors: G4V_ERR_ARG (size not a multiple of 48, stride, NULL), G4V_ERR_UNSUPPORTED (grid
 * beyond the position table), G4V_ERR_NOMEM (workspace growth or a size past what the host can
 * address). */
int g4v_encoder_run(const g4v_encoder *enc, g4v_workspace *ws, g4v_pool *pool, const uint8_t *rgb,
                    int width, int height, size_t stride, float *out, g4v_err *err);

/* docs/NUMERICS.md §6.5, sharp attention. A layer's logits are sums over a head's d dimensions of
 * q_i k_i q_norm_i k_norm_i with q and k RMS-normed (unit RMS): for unrelated q and k their
 * standard deviation is sqrt(sum_i (q_norm_i k_norm_i)^2), g4v_attention_sharpness. Above
 * G4V_SHARP_LOGIT_STD a FAST model runs that layer's q, k and v projections and its attention in
 * f32 (synthetic checkpoints: ~1.0 with the generator's default norms, ~4 with --qk-scale 2). */
#define G4V_SHARP_LOGIT_STD 2.0
double g4v_attention_sharpness(const float *q_norm, const float *k_norm, int d);
int g4v_attention_is_sharp(const float *q_norm, const float *k_norm, int d);

/* Layer i's sharpness (g4v_attention_sharpness of its norm weights) and whether it runs as
 * PRECISE: every layer of a PRECISE model, the sharp ones of a FAST or INT8 model (g4v info and
 * /v1/info show both). G4V_ERR_ARG for i outside [0, num_layers). */
int g4v_encoder_layer_sharpness(const g4v_encoder *enc, int i, double *sharpness,
                                int *runs_precise);

/* One image of a batch: RGB8 at its target size, rows stride bytes apart. */
typedef struct g4v_encoder_image {
    const uint8_t *rgb;
    int width, height;
    size_t stride;
} g4v_encoder_image;

/* Encodes n images (sizes may differ) together: every GEMM, norm and MLP runs over the rows of
 * all of them at once, attention is block-diagonal (each image's patches attend only to that
 * image's patches), so image i's soft tokens are bit-identical to g4v_encoder_run on it alone.
 * out receives the images' rows one after another, in order. Images are grouped into passes of
 * at most batch_rows patch rows (g4v_encoder_opts), which bounds the workspace. Errors as for
 * g4v_encoder_run, the message naming the image's index; G4V_ERR_ARG for n < 1. */
int g4v_encoder_run_batch(const g4v_encoder *enc, g4v_workspace *ws, g4v_pool *pool,
                          const g4v_encoder_image *images, int n, float *out, g4v_err *err);

#endif
