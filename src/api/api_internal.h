/* api_internal.h - the structs behind the opaque g4v_model and g4v_ctx (src/api only). */
#ifndef G4V_API_INTERNAL_H
#define G4V_API_INTERNAL_H

#include "base/error.h"
#include "base/pool.h"
#include "encoder/encoder.h"
#include "image/image.h"
#include "io/checkpoint.h"

struct g4v_model {
    g4v_checkpoint *ck;
    g4v_encoder *enc;
    g4v_model_options opts; /* with defaults filled in */
    g4v_image_opts image_opts;
};

struct g4v_ctx {
    const g4v_model *model;
    g4v_pool *pool;
    g4v_workspace *ws;
    float *features; /* capacity feat_cap floats, reused across calls */
    size_t feat_cap;
    uint16_t *features_bf16; /* capacity bf16_cap */
    size_t bf16_cap;
    g4v_err err;
};

/* Copies msg into a caller buffer (may be NULL / 0), truncating. */
void g4v_api_copy_msg(char *buf, size_t cap, const char *msg);

#endif
