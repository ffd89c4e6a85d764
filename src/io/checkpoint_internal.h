/* checkpoint_internal.h - what the checkpoint loaders (safetensors_dir.c for checkpoint
 * directories, mmproj_gguf.c for llama.cpp mmproj files) share: the private part of
 * g4v_checkpoint, which g4v_checkpoint_close frees whichever loader filled it, and the functions
 * of checkpoint.c they build it with. model_source.c picks the loader; the loaders call
 * checkpoint.c, which calls neither.
 */
#ifndef G4V_IO_CHECKPOINT_INTERNAL_H
#define G4V_IO_CHECKPOINT_INTERNAL_H

#include "io/checkpoint.h"
#include "io/names.h"
#include "io/safetensors.h"

/* Gaps up to this size between used tensors are mapped along with them (fewer mappings); larger
 * gaps (text weights sorted between embed_vision and vision_tower) stay unmapped. */
#define G4V_CHECKPOINT_MERGE_GAP ((uint64_t)4 << 20)

struct g4v_checkpoint_files {
    g4v_wanted *wanted; /* every tensor loaded, by canonical name (g4v_checkpoint_foreach) */
    size_t nwanted;
    g4v_tensor *clips; /* cfg.num_layers x G4V_LIN_COUNT x 4 clip scalar views when clipped */
    g4v_st_mapping *maps;
    size_t nmaps;
    void **owned; /* g4v_malloc_large blocks holding transformed tensors (GGUF) */
    size_t nowned;
};

/* Allocates ck->files, ck->layers (cfg.num_layers entries) and, with clipped linears, the clip
 * views (num_layers x 7 x 4) for the configuration in ck->cfg: what every loader fills.
 * G4V_ERR_NOMEM on failure (the caller closes ck). */
int g4v_checkpoint_alloc_parts(g4v_checkpoint *ck, g4v_err *err);

/* Clip bounds of every layer from the clip views (+-inf when cfg.use_clipped_linears is 0);
 * G4V_ERR_MODEL naming the layer for unordered or NaN bounds. where names the source. */
int g4v_checkpoint_decode_clips(g4v_checkpoint *ck, const char *where, g4v_err *err);

#endif
