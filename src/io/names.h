/* names.h - the vision tensors a config calls for (docs/NUMERICS.md §2.3): canonical name (no
 * "model." prefix), expected shape, whether required, and where the view goes in g4v_checkpoint.
 *
 * The list is sorted by name for bsearch, so matching a header of any size against it costs
 * O(entries x log wanted). Tensors outside the list (text, audio, rotary_emb.inv_freq,
 * pooler.scale, clip scalars of an unclipped model) are simply not wanted.
 */
#ifndef G4V_IO_NAMES_H
#define G4V_IO_NAMES_H

#include "io/checkpoint.h"
#include "io/safetensors.h"

#include <stddef.h>

#define G4V_NAME_MAX 112

typedef struct g4v_wanted {
    char name[G4V_NAME_MAX];
    int ndim; /* 0 for the clip scalars (shape [1] is accepted too) */
    int64_t shape[4];
    g4v_tensor *dst;
    /* filled while matching headers */
    int file;     /* index of the file that holds it, -1 until found */
    int shard;    /* index in the list of shards the index names, -1 if none */
    int prefixed; /* found under "model." + name */
    g4v_st_entry entry;
} g4v_wanted;

/* Clip bound names, in the order of g4v_clip's fields; linear names ("self_attn.q_proj", ...)
 * in G4V_LIN_* order. */
extern const char *const g4v_clip_keys[4];
extern const char *const g4v_lin_names[G4V_LIN_COUNT];

/* Builds the wanted list for cfg, pointing dst into ck (and into clips: cfg.num_layers x
 * G4V_LIN_COUNT x 4 views, used when cfg.use_clipped_linears). *out is g4v_malloc'ed. */
int g4v_wanted_build(const g4v_vision_config *cfg, g4v_checkpoint *ck, g4v_tensor *clips,
                     g4v_wanted **out, size_t *n, g4v_err *err);

/* The entry for name (with or without the "model." prefix, and for the unified embedder under
 * either of its spellings, docs/NUMERICS.md §9.3), or NULL. *prefixed says whether "model." was
 * there. */
g4v_wanted *g4v_wanted_find(g4v_wanted *w, size_t n, const char *name, int *prefixed);

#endif
