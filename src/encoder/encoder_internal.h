/* encoder_internal.h - the prepared model and the workspace layout, shared by the encoder's
 * files (model.c prepares, workspace.c sizes, encoder.c runs). Not part of any contract. */
#ifndef G4V_ENCODER_INTERNAL_H
#define G4V_ENCODER_INTERNAL_H

#include "encoder.h"

typedef struct enc_layer {
    g4v_wmat *lin[G4V_LIN_COUNT];      /* q, k, v, o, gate, up, down */
    g4v_gemm_epi epi[G4V_LIN_COUNT];   /* clip bounds as GEMM clamps (docs/NUMERICS.md §3.2) */
    const float *ln_in, *ln_post_attn; /* [D] block norms, as w (docs/NUMERICS.md §3.1) */
    const float *ln_pre_ff, *ln_post_ff;
    const float *q_norm, *k_norm; /* [d] per-head norms */
    /* FAST only: its attention is sharp (docs/NUMERICS.md §6.5): q, k, v projections and the
     * attention run in f32 */
    int sharp;
} enc_layer;

struct g4v_encoder {
    g4v_vision_config cfg;
    g4v_math_mode mode;
    unsigned int8_fast_linears; /* INT8 mode: linears kept FAST (bits 1 << G4V_LIN_*) */
    const g4v_kernels *kernels; /* chosen once at creation (kernels/dispatch.h) */
    int drop_mapped_pages;      /* g4v_encoder_opts.drop_mapped_pages */
    int check_only;             /* g4v_encoder_opts.check_only: no weight is packed */
    int pack_weights;           /* g4v_encoder_opts.pack_weights */
    int any_sharp;              /* a layer is sharp: the workspace keeps f32 keys and values */
    int chunk_rows;             /* g4v_encoder_opts.chunk_rows, default applied (>= 1) */
    size_t batch_rows;          /* g4v_encoder_opts.batch_rows, default applied (>= 1) */
    g4v_tensor position_table;  /* [2, P, D], read in place: a run touches ~2*max(pW, pH) rows */
    g4v_wmat *input_proj;       /* [D, 3*p*p], fed exact integers 2u - 255 */
    g4v_wmat *embed_proj;       /* [T, D], always PRECISE */
    enc_layer *layers;
    const float *std_bias, *std_scale; /* [D] when cfg.standardize, else NULL */
    float *vectors;                    /* one block holding every f32 vector above */
    void *weights;                     /* one block holding every packed matrix above */
};

/* One image of a pass: its patches are rows [row0, row0 + L) of the pass, its soft tokens rows
 * [token0, token0 + gh*gw/k^2) of the pass's output; gh x gw is its patch grid. */
typedef struct enc_segment {
    size_t row0, L, token0;
    int gh, gw;
    const uint8_t *rgb;
    size_t stride;
    size_t kv_off; /* its keys and values in the attention's prepared form: bytes into kv_prepared */
} enc_segment;

/* The size of a pass: images run together (rows in total, soft tokens in total, the longest grid
 * side, for the RoPE table; the bytes of the attention's prepared keys and values). */
typedef struct enc_shape {
    size_t rows, tokens, images;
    int max_side;
    size_t kv_bytes; /* the attention's prepared K/V for every image (g4v_attention_kv_bytes) */
    int kv_f32;      /* f32 keys and values too, even with kv_bytes (a sharp layer's attention) */
} enc_shape;

/* Pointers into the workspace for one pass (every buffer 64-byte aligned). The passes walk the
 * patches in chunks of chunk_rows rows (encoder.c), so only the residual stream and the keys and
 * values hold all L rows; everything else holds one chunk. */
typedef struct enc_buffers {
    float *h;                   /* [L, D] residual stream */
    float *keys, *values;       /* [Hkv, L, d] each: one layer's keys and values, head-major;
                                   NULL when kv_prepared holds them instead */
    size_t chunk_rows;          /* C */
    float *a;                   /* [C, D] normed input / branch output */
    float *q, *att;             /* [C, H*d] (attention half) */
    float *k, *v;               /* [C, Hkv*d] before they are split into heads */
    float *gate, *up;           /* [C, I] (MLP half; shares memory with q/att/k/v) */
    float *patches;             /* [C, 3*p*p] (patch embedding; shares that memory too) */
    float *pooled;              /* [N, D] */
    int32_t *pos;               /* [L, 2] (column, row) */
    float *rope_cos, *rope_sin; /* [max(pW, pH), d/4] */
    float *attn_scratch;        /* per pool worker */
    void *kv_prepared;          /* one layer's K/V in the attention's own form, or NULL */
    enc_segment *seg;           /* [images] */
} enc_buffers;

/* Grows ws (never shrinks) to hold a pass of shape sh on nworkers threads and fills b (b->seg
 * is left for the caller to fill). Fails with G4V_ERR_NOMEM when the sizes overflow or the
 * allocation does. */
int g4v_workspace_reserve(g4v_workspace *ws, const g4v_vision_config *cfg, const enc_shape *sh,
                          int nworkers, int chunk_rows, enc_buffers *b, g4v_err *err);

/* The workspace's one block, grown (never shrunk) to at least bytes, 64-byte aligned; NULL when
 * out of memory (the block is then empty). For callers that lay out their own buffers (the
 * unified embedder). */
void *g4v_workspace_block(g4v_workspace *ws, size_t bytes);

#endif
