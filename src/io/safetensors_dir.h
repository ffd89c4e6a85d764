/* safetensors_dir.h - a model source (model_source.c): a Gemma 4 checkpoint directory as
 * downloaded (config.json, and the vision tensors in model.safetensors, a sharded
 * model.safetensors.index.json, or an optiq_vision.safetensors sidecar; names with or without the
 * "model." prefix), opened for its vision tower or, for the 12B unified model, its encoder-free
 * embedder (cfg.kind, docs/NUMERICS.md §9).
 *
 * It reads config.json, finds the vision tensors, memory-maps only the files that hold them,
 * validates every tensor it uses (dtype, shape against the config, offsets inside the data
 * section, no overlap) and exposes them as read-only views. Text/audio tensors are never read.
 * Which files: optiq_vision.safetensors (an mlx-bun sidecar) first if present; tensors still
 * missing come from the shards that model.safetensors.index.json names for them, else from
 * model.safetensors. Shards that hold no vision tensor are never opened (and may be absent).
 * Tensors of other dtypes or unknown names are ignored unless we need them. Clip scalars may be
 * stored with shape [] or [1]. docs/NUMERICS.md §2 is the contract.
 */
#ifndef G4V_IO_SAFETENSORS_DIR_H
#define G4V_IO_SAFETENSORS_DIR_H

#include "io/checkpoint.h"

/* Opens the checkpoint directory dir into ck (allocated and zeroed by the caller, who closes it
 * on failure too). lim may be NULL (defaults). */
int g4v_safetensors_dir_load(const char *dir, const g4v_checkpoint_limits *lim,
                             g4v_checkpoint *ck, g4v_err *err);

#endif
