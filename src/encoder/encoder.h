/* encoder.h - the Gemma 4 vision tower: an image at its target size -> soft tokens [N, T].
 *
 * g4v_encoder holds the model prepared for computation (weights packed once); it is immutable
 * and shared by threads. g4v_workspace is per-caller scratch that grows to the largest image seen
 * and is reused, so the hot path never allocates. SPEC.md section C is the computation.
 */
#ifndef G4V_ENCODER_ENCODER_H
#define G4V_ENCODER_ENCODER_H

#include "base/error.h"
#include "base/pool.h"
#include "io/checkpoint.h"
#include "kernels/gemm.h"

#include <stddef.h>
#include <stdint.h>

typedef struct g4v_encoder g4v_encoder;
typedef struct g4v_workspace g4v_workspace;

typedef struct g4v_encoder_opts {
    g4v_math_mode mode; /* G4V_MATH_FAST (default) or G4V_MATH_PRECISE */
} g4v_encoder_opts;

/* The checkpoint must outlive the encoder (weights may stay memory-mapped). */
int g4v_encoder_create(const g4v_checkpoint *ck, const g4v_encoder_opts *opts, g4v_encoder **out,
                       g4v_err *err);
void g4v_encoder_free(g4v_encoder *enc);
const g4v_vision_config *g4v_encoder_config(const g4v_encoder *enc);

g4v_workspace *g4v_workspace_create(void);
void g4v_workspace_free(g4v_workspace *ws);

/* Encodes an RGB8 image already at its target size (width, height multiples of
 * patch_size * pooling_kernel_size, i.e. 48). out receives N = (height/48)*(width/48) rows of T
 * floats in row-major pooled-grid order. pool may be NULL (single-threaded). */
int g4v_encoder_run(const g4v_encoder *enc, g4v_workspace *ws, g4v_pool *pool, const uint8_t *rgb,
                    int width, int height, size_t stride, float *out, g4v_err *err);

#endif
