/* prepare.h - what the vision tower (model.c) and the unified embedder (embedder.c) both do to
 * turn checkpoint tensors into a model: check each tensor's shape, widen vectors to f32, check
 * the vision config's shared sizes, and pack the weight matrices for the GEMM on the pool. `who`
 * ("encoder", "embedder") starts every message, so both speak the same way. */
#ifndef G4V_ENCODER_PREPARE_H
#define G4V_ENCODER_PREPARE_H

#include "base/error.h"
#include "base/pool.h"
#include "io/checkpoint.h"
#include "kernels/gemm.h"

#include <stdint.h>

/* t holds exactly the shape s (ndim entries) and its bytes match; else G4V_ERR_MODEL, with
 * "<who>: tensor [layer L ]NAME is missing" or "...: expected shape [a, b], found [c, d] (N bytes)".
 * layer < 0: a tensor outside the layers. */
int g4v_prep_check_shape(const char *who, const g4v_tensor *t, const char *name, int layer,
                         int ndim, const int64_t *s, g4v_err *err);

/* Copies a checked [n] tensor to f32 at dst; returns dst. */
const float *g4v_prep_widen(const g4v_tensor *t, float *dst, int64_t n);

/* The sizes both models read: hidden, patch, pooling, position table and text sizes positive,
 * hidden and text sizes in range, rms_norm_eps >= 0. Each model then checks its own. */
int g4v_prep_check_config(const char *who, const g4v_vision_config *c, g4v_err *err);

/* One weight matrix to pack. */
typedef struct g4v_prep_item {
    const g4v_tensor *t;
    g4v_math_mode mode;
    g4v_wmat **out;
    const char *name;
    int layer;  /* -1 for the weights outside the layers */
    int placed; /* 1: packed into the shared block at offset (g4v_prep_place), else its own */
    size_t offset;
    int pack; /* 1: packed even where it could be read in place (g4v_wmat_create_in) */
} g4v_prep_item;

/* Gives every item its place in one block (*block, huge pages): one rounding to 2 MB for the
 * model instead of one per weight. An item whose size is unknown here (no kernel fits it) is not
 * placed, and packing it reports why. */
int g4v_prep_place(const char *who, const g4v_kernels *kt, g4v_prep_item *items, int n,
                   void **block, g4v_err *err);

/* Packs every item for table kt on the pool (NULL: this thread), into block where placed; with
 * drop, releases each tensor's mapped pages once packed. On failure, the message of the first
 * failing item in order (the same whatever the thread count), prefixed
 * "<who>: preparing [layer L ]NAME: ". */
int g4v_prep_pack(const char *who, const g4v_kernels *kt, void *block, int drop, g4v_pool *pool,
                  const g4v_prep_item *items, int n, g4v_err *err);

#endif
