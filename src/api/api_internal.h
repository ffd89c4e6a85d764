/* api_internal.h - the structs behind the opaque g4v_model and g4v_ctx (src/api only). */
#ifndef G4V_API_INTERNAL_H
#define G4V_API_INTERNAL_H

#include "base/error.h"
#include "base/pool.h"
#include "encoder/embedder.h"
#include "encoder/encoder.h"
#include "image/image.h"
#include "io/checkpoint.h"

#include <pthread.h>

/* The network a model runs, tagged by the checkpoint's kind (io/checkpoint.h g4v_model_kind:
 * docs/ARCHITECTURE.md §2 "Model kinds"): every use switches on kind (model.c), so a new kind is
 * a new enum value, a new member here and a new case in each switch, which the compiler finds
 * (-Wswitch). */
typedef struct g4v_vision_net {
    g4v_model_kind kind;
    union {
        g4v_encoder *tower;     /* G4V_KIND_TOWER: the vision transformer */
        g4v_embedder *unified;  /* G4V_KIND_UNIFIED: the 12B's encoder-free patch embedder */
    } as;
} g4v_vision_net;

struct g4v_model {
    g4v_checkpoint *ck;
    g4v_vision_net net;     /* NULL members until created */
    g4v_model_options opts; /* with defaults filled in */
    g4v_image_opts image_opts;
    char kernel_path[512]; /* g4v_encoder_kernel_path, part of every cache key */
    char kernel_rule[256]; /* g4v_cpu_rule_line when the table was chosen (g4v_model_info) */
    /* g4v_model_fingerprint's memo: the one thing written after load, once, under fp_lock */
    pthread_mutex_t fp_lock;
    int fp_done;
    char fp[G4V_FINGERPRINT_HEX];
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
    struct g4v_cache *cache; /* g4v_ctx_set_cache; NULL: none */
    int cache_hit;           /* the last successful encode came from the cache */
    struct g4v_video_frame *video_frames; /* g4v_encode_video_*: per-frame records, reused */
    size_t video_frames_cap;
    /* g4v_encode_batch: the entries' features (one after another), bf16 copies, messages */
    float *batch_features;
    size_t batch_feat_cap;
    uint16_t *batch_bf16;
    size_t batch_bf16_cap;
    g4v_err *batch_errs;
    size_t batch_errs_cap;
};

/* The feature cache (cache.c), used by encode.c and video.c. g4v_cache_key: the entry key for an
 * image (kind "bytes", "rgb", or "frame": a video frame at its target size; its content digest,
 * the resolved budget, EXIF choice and G4V_RESIZE_*) on ctx's model; fails only if the
 * fingerprint cannot be computed. g4v_cache_lookup: 1 and out filled (features in ctx's float
 * buffer, no bf16 copy) on a hit, else 0. g4v_cache_store: writes the entry for r; failures are counted in the cache's
 * stats, never reported to the encode. */
int g4v_cache_key(const g4v_ctx *ctx, const char *kind, const uint8_t *image_digest, int budget,
                  int exif, int resize, char key[65]);
int g4v_cache_lookup(g4v_ctx *ctx, const char *key, int budget, g4v_result *out);
void g4v_cache_store(g4v_ctx *ctx, const char *key, const g4v_result *r);
/* g4v_cache_lookup for one video frame: on a hit, its count floats go to dst (an entry of another
 * size is a miss); ctx's buffers are left alone. */
int g4v_cache_lookup_rows(g4v_ctx *ctx, const char *key, int budget, float *dst, size_t count);

/* The model's one "image at its target size -> soft tokens" step, whichever kind it is: the
 * tower (g4v_encoder_run) or the unified embedder (g4v_embedder_run), same contract. */
int g4v_model_run(const g4v_model *m, g4v_workspace *ws, g4v_pool *pool, const uint8_t *rgb,
                  int width, int height, size_t stride, float *out, g4v_err *err);

/* The same for n images, their rows one after another in out: the tower runs them as one batch
 * (g4v_encoder_run_batch), the unified embedder (whose every step is per patch) one by one.
 * Bit-identical to g4v_model_run on each image. */
int g4v_model_run_batch(const g4v_model *m, g4v_workspace *ws, g4v_pool *pool,
                        const g4v_encoder_image *images, int n, float *out, g4v_err *err);

/* One image on its way through an encode call (encode.c), the steps the single calls and
 * g4v_encode_batch (encode_batch.c) share: resolve the options, check and bring the image to its
 * target size or find it in the cache (prepare), run the model, store. */
typedef struct g4v_encode_step {
    int budget, exif, bf16, resize; /* the options, resolved against the model's */
    int src_w, src_h;               /* the image as decoded (after EXIF) */
    g4v_image img;                  /* the pixels resized here, if they were (else rgb NULL) */
    g4v_encoder_image px;           /* the pixels to encode: img's or the caller's own */
    int cached;                     /* 1: key names this image's cache entry */
    int hit;                        /* 1: prepare found it in the cache (hit result filled) */
    char key[65];
} g4v_encode_step;

int g4v_encode_resolve(const g4v_ctx *c, const g4v_encode_options *in, g4v_encode_step *st,
                       g4v_err *err);
/* Encoded bytes / RGB pixels to st (zeroed by the caller): G4V_OK with st->hit and hit filled
 * (features in the ctx's float buffer; no bf16 copy yet) when the ctx's cache has it (use_cache: 0 skips the cache),
 * else with st->px ready; errors in ctx->err, without the source in front. */
int g4v_encode_prepare_bytes(g4v_ctx *c, const void *bytes, size_t size,
                             const g4v_encode_options *opts, g4v_encode_step *st, g4v_result *hit);
int g4v_encode_prepare_rgb(g4v_ctx *c, const uint8_t *rgb, int width, int height, size_t stride,
                           const g4v_encode_options *opts, int use_cache, g4v_encode_step *st,
                           g4v_result *hit);
void g4v_encode_step_free(g4v_encode_step *st);
/* floats of st's soft tokens (N * T) */
size_t g4v_encode_step_values(const g4v_ctx *c, const g4v_encode_step *st);
/* out for st's image, its features at feat (bf16 copy at feat16 or NULL); seconds untouched */
void g4v_encode_fill_result(const g4v_ctx *c, const g4v_encode_step *st, const float *feat,
                            const uint16_t *feat16, g4v_result *out);
void g4v_encode_round_bf16(const float *src, uint16_t *dst, size_t n);
/* The steps which[0..n) (which NULL: steps[0..n)) through the tower as one pass, rows one after
 * another in out (encode_batch.c; the batch's passes and the video frames). */
int g4v_encode_run_steps(g4v_ctx *c, const g4v_encode_step *steps, const int *which, int n,
                         float *out);

/* Grows a ctx-owned buffer (ctx.c) to n elements of sz bytes, keeping its first keep elements
 * (capacity in *cap; G4V_ERR_NOMEM in err when it cannot). */
int g4v_ctx_grow_buffer(void **buf, size_t *cap, size_t n, size_t sz, size_t keep, g4v_err *err);

/* The start of every encode call on ctx: zeroes the caller's result (out_size bytes), clears the
 * ctx's error and cache flag. G4V_ERR_ARG for a NULL ctx or result (the message in ctx). */
int g4v_call_begin(g4v_ctx *c, void *out, size_t out_size);

/* The end of a failed encode call: zeroes the result again and puts what (if not NULL) in front
 * of the ctx's message. Returns st. */
int g4v_call_fail(g4v_ctx *c, int st, void *out, size_t out_size, const char *what);

/* The image layer's rule for a public G4V_RESIZE_* value (G4V_RESIZE_PILLOW: Pillow >= 13's pass
 * order, the Pillow that installs with transformers today; docs/PREPROCESSING.md §6.4). */
static inline g4v_resize_order g4v_api_resize_order(int resize) {
    return resize == G4V_RESIZE_TORCHVISION ? G4V_RESIZE_TORCH : G4V_RESIZE_PILLOW_13;
}

/* Resolves a per-call resize (-1: the model's) into *resize; G4V_ERR_ARG for other values. */
int g4v_api_resolve_resize(const g4v_model *m, int requested, int *resize, g4v_err *err);

/* Versioned structs (g4v.h "Versions"). g4v_api_init_struct: what every g4v_*_options_init_sized
 * does: zero size bytes at dst, copy min(size, lib_size) bytes of defaults, set struct_size.
 * g4v_api_read_opts: copies the fields of the caller's options src (NULL: none) that fit in both
 * its struct_size and lib_size over dst (the library's struct, holding the defaults); G4V_ERR_ARG
 * for a struct_size that cannot be (below sizeof(size_t), above G4V_API_MAX_STRUCT_SIZE), naming
 * type. g4v_api_write_out: an output struct of the caller's size from the library's one (bytes
 * past lib_size are zeroed). */
#define G4V_API_MAX_STRUCT_SIZE 65536
void g4v_api_init_struct(void *dst, size_t size, const void *defaults, size_t lib_size);
int g4v_api_read_opts(void *dst, size_t lib_size, const void *src, const char *type, g4v_err *err);
void g4v_api_write_out(void *dst, size_t size, const void *src, size_t lib_size);

/* Copies msg into a caller buffer (may be NULL / 0), truncating. */
void g4v_api_copy_msg(char *buf, size_t cap, const char *msg);

#endif
