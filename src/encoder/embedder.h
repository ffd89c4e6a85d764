/* embedder.h - the Gemma 4 12B "unified" (encoder-free) vision path: an image at its target size
 * -> soft tokens [N, T], one per 48x48 patch, every patch mapped on its own (no attention, no
 * pooling). docs/NUMERICS.md §9 is the computation:
 *
 *     p = the patch's 6912 values u/255 in (dy, dx, c) order
 *     h = LayerNorm(p) -> patch_dense (6912 -> E, + bias) -> LayerNorm
 *     h = LayerNorm(h + pos[x][0] + pos[y][1])          (x = patch column, y = patch row)
 *     token = RMSNorm_no_weight(h) · W_projᵀ            (E -> T)
 *
 * Same contract as g4v_encoder (encoder.h): immutable and shared once created, the workspace is
 * per caller and reused, output bit-identical for any pool size, the merge contract unchanged
 * (rows go unscaled into the image-token positions). Numerics: GEMM sums are f32 (never f16),
 * LayerNorm statistics double (the first LayerNorm's are exact integer sums of the pixel
 * values), activations f32; FAST rounds the inputs of patch_dense to bf16, PRECISE does not;
 * the projection always gets f32 inputs, as the tower's does (docs/NUMERICS.md §9.5). Against the float64 reference, 12B shapes, 256
 * tokens: PRECISE 1.7e-6 relative RMSE, FAST 1.3e-3 (synthetic weights).
 */
#ifndef G4V_ENCODER_EMBEDDER_H
#define G4V_ENCODER_EMBEDDER_H

#include "encoder.h"

typedef struct g4v_embedder g4v_embedder;

/* ck must be a unified checkpoint (cfg.kind == G4V_KIND_UNIFIED) and outlive the embedder. The
 * options are the encoder's: mode, drop_mapped_pages, chunk_rows (patches per chunk; default
 * 256), pool (packing threads). */
int g4v_embedder_create(const g4v_checkpoint *ck, const g4v_encoder_opts *opts, g4v_embedder **out,
                        g4v_err *err);
void g4v_embedder_free(g4v_embedder *e);

/* As g4v_encoder_kernel_path. */
void g4v_embedder_kernel_path(const g4v_embedder *e, char *buf, size_t cap);
/* As g4v_encoder_weights_in_place. */
int g4v_embedder_weights_in_place(const g4v_embedder *e);

/* As g4v_encoder_run: width and height multiples of 48, out receives N = (height/48)*(width/48)
 * rows of T floats in row-major grid order. The workspace holds one chunk of patches (chunk_rows
 * x (6912 + E) floats, ~11 MB for the 12B model), whatever the image size. */
int g4v_embedder_run(const g4v_embedder *e, g4v_workspace *ws, g4v_pool *pool, const uint8_t *rgb,
                     int width, int height, size_t stride, float *out, g4v_err *err);

#endif
