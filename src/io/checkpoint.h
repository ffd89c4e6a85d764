/* checkpoint.h - g4v_checkpoint: a Gemma 4 model's vision weights and configuration as every
 * model source fills it (model_source.h g4v_checkpoint_open picks the source: a checkpoint
 * directory, safetensors_dir.c; an mmproj GGUF, mmproj_gguf.c), so nothing above src/io knows
 * where they came from. Its tensors are read-only views of mapped files (or loader-owned copies);
 * the whole is immutable after loading and may be shared by any number of threads. checkpoint.c:
 * the limits, and the close and foreach that work whichever loader filled it.
 */
#ifndef G4V_IO_CHECKPOINT_H
#define G4V_IO_CHECKPOINT_H

#include "base/alloc.h"
#include "base/dtype.h"
#include "base/error.h"

#include <stddef.h>
#include <stdint.h>

/* A read-only view of one tensor inside a mapped file. safetensors guarantees no alignment:
 * data may be odd-addressed, so read elements with memcpy (or g4v_tensor_get). */
typedef struct g4v_tensor {
    g4v_dtype dtype;
    int ndim; /* 0..4 */
    int64_t shape[4];
    const void *data; /* NULL when the tensor is absent (optional tensors only) */
    size_t nbytes;
    int owned; /* 1: heap memory the loader filled (a GGUF tensor it transformed or widened,
                  docs/GGUF.md §3), not a file mapping: never drop its pages
                  (g4v_tensor_drop_pages) */
    /* A GGUF Q8_0 tensor (widened to F32 in data): its blocks as the file stores them (the
     * mapping, or the whole-file copy), which the INT8_BLOCKS mode packs directly
     * (kernels/gemm.h g4v_wmat_create_q8_0_in); NULL for every other tensor. */
    const void *q8_0;
} g4v_tensor;

/* Drops t's pages from memory after its last read if it is a read-only file mapping; does
 * nothing for a loader-owned copy (dropping anonymous pages would zero them). */
static inline void g4v_tensor_drop_pages(const g4v_tensor *t) {
    if (t && t->data && !t->owned) g4v_drop_mapped_pages(t->data, t->nbytes);
}

/* Element i of t as float (exact for every supported dtype). */
static inline float g4v_tensor_get(const g4v_tensor *t, size_t i) {
    return g4v_load_elem(t->data, t->dtype, i);
}

/* The seven clippable linears of a layer, in this order. */
enum {
    G4V_LIN_Q,
    G4V_LIN_K,
    G4V_LIN_V,
    G4V_LIN_O,
    G4V_LIN_GATE,
    G4V_LIN_UP,
    G4V_LIN_DOWN,
    G4V_LIN_COUNT
};

typedef struct g4v_clip {
    /* -INFINITY/+INFINITY when the model has no clipped linears (docs/NUMERICS.md §3.2). */
    float in_min, in_max, out_min, out_max;
} g4v_clip;

typedef struct g4v_layer_weights {
    g4v_tensor lin[G4V_LIN_COUNT]; /* W[out, in]: q [H*d, D], k/v [Hkv*d, D], o [D, H*d],
                                      gate/up [I, D], down [D, I] */
    g4v_clip clip[G4V_LIN_COUNT];
    g4v_tensor input_layernorm, post_attention_layernorm;             /* [D] */
    g4v_tensor pre_feedforward_layernorm, post_feedforward_layernorm; /* [D] */
    g4v_tensor q_norm, k_norm;                                        /* [d] */
} g4v_layer_weights;

/* Which vision path a checkpoint has (docs/ARCHITECTURE.md §2 "Model kinds"). */
typedef enum g4v_model_kind {
    G4V_KIND_TOWER = 0,  /* the vision transformer of e2b/e4b/26B-A4B/31B (gemma4_vision) */
    G4V_KIND_UNIFIED = 1 /* the 12B encoder-free patch embedder (gemma4_unified_vision) */
} g4v_model_kind;

/* "tower" or "unified". */
const char *g4v_model_kind_name(g4v_model_kind kind);

typedef struct g4v_vision_config {
    char variant[32];      /* "e2b", "e4b", "26b-a4b", "31b", "12b" or "custom" (from shapes) */
    g4v_model_kind kind;   /* tower or unified; for unified, the tower-only fields below are 0,
                              hidden_size is mm_embed_dim (E) and position_embedding_size is
                              mm_posemb_size */
    int hidden_size;       /* D */
    int intermediate_size; /* I */
    int num_layers;
    int num_heads;               /* H */
    int num_kv_heads;            /* Hkv, divides H */
    int head_dim;                /* d */
    int patch_size;              /* 16 */
    int pooling_kernel_size;     /* 3 */
    int position_embedding_size; /* P, rows per axis of the position table */
    int default_output_length;   /* 280 */
    int text_hidden_size;        /* T */
    double rope_theta;           /* 100 */
    double rms_norm_eps;         /* 1e-6 */
    int use_clipped_linears;
    int standardize;
    double layer_norm_eps; /* unified: eps of its three LayerNorms (1e-5, torch's default) */
    /* prompt contract (docs/NUMERICS.md §5.1), from config.json or the defaults */
    int32_t image_token_id, boi_token_id, eoi_token_id, video_token_id;
    /* The budgets to use when the caller names none (io/budget_defaults.h): from
     * processor_config.json or config.json, else 280 / 70 per frame / 32 frames. Range-checked
     * only; a load that uses default_budget checks it is one of G4V_BUDGETS. */
    int default_budget;
    char default_budget_from[96]; /* e.g. "processor_config.json image_processor.max_soft_tokens" */
    int default_video_budget;
    int default_video_frames;
} g4v_vision_config;

/* The unified (encoder-free) embedder's tensors (docs/NUMERICS.md §9). E = hidden_size,
 * Q = 3 * (patch_size * pooling_kernel_size)^2 = 6912 values per 48x48 patch. */
typedef struct g4v_unified_weights {
    g4v_tensor ln1_w, ln1_b;           /* [Q] patch_ln1 */
    g4v_tensor dense_w, dense_b;       /* [E, Q], [E] patch_dense */
    g4v_tensor ln2_w, ln2_b;           /* [E] patch_ln2 */
    g4v_tensor pos;                    /* [P, 2, E] pos_embedding: [x][0] column, [y][1] row */
    g4v_tensor pos_norm_w, pos_norm_b; /* [E] pos_norm */
} g4v_unified_weights;

typedef struct g4v_checkpoint {
    g4v_vision_config cfg;
    g4v_unified_weights unified;    /* cfg.kind == G4V_KIND_UNIFIED only */
    g4v_tensor input_proj;          /* [D, 3*p*p] */
    g4v_tensor position_table;      /* [2, P, D] */
    g4v_layer_weights *layers;      /* cfg.num_layers entries */
    g4v_tensor std_bias, std_scale; /* [D]; data NULL unless cfg.standardize */
    g4v_tensor embed_proj;          /* [T, D] (both kinds) */
    int64_t param_count; /* elements of every vision tensor loaded: the tensors above plus
                            the clip scalars (28 per layer when clipped) */
    size_t weight_bytes; /* their bytes as stored */
    char naming[8];      /* "hf" (names had "model."), "mlx" (they did not), "mixed", or "gguf"
                            (an mmproj GGUF: llama.cpp's names) */
    char source[512];    /* the files the tensors came from, e.g. "model.safetensors" or
                            "model-00002-of-00003.safetensors (1 of 3 shards, via
                            model.safetensors.index.json)", or for a GGUF
                            "mmproj-x.gguf (GGUF v3, gemma4v, MOSTLY_BF16)"; may be truncated */
    struct g4v_checkpoint_files *files; /* private: the mappings */
} g4v_checkpoint;

typedef struct g4v_checkpoint_limits {
    uint64_t max_header_bytes; /* safetensors JSON header; default 100 MB */
    uint64_t max_tensor_count; /* entries in one header; default 1,000,000 */
    uint64_t max_config_bytes; /* config.json / index.json; default 16 MB */
    int read_weights; /* not a limit: 1 reads the tensor ranges into memory instead of mapping
                         them (g4v_model_options.read_weights; docs/LIMITS.md); default 0 */
} g4v_checkpoint_limits;

void g4v_checkpoint_limits_default(g4v_checkpoint_limits *lim);

/* Frees ck whichever loader filled it; NULL is a no-op. */
void g4v_checkpoint_close(g4v_checkpoint *ck);

/* Calls fn for every vision tensor loaded (clip scalars included), in name order; name is the
 * canonical form without the "model." prefix. For tools and tests (dtype census, checksums). */
void g4v_checkpoint_foreach(const g4v_checkpoint *ck,
                            void (*fn)(void *user, const char *name, const g4v_tensor *t),
                            void *user);

#endif
