/* mmproj_gguf.h - a model source (model_source.c): a llama.cpp mmproj GGUF file (projector
 * gemma4v: the towers of e2b/e4b/26B-A4B/31B; gemma4uv: the 12B unified embedder) read into the
 * same g4v_checkpoint a checkpoint directory fills. docs/GGUF.md is the contract.
 */
#ifndef G4V_IO_MMPROJ_GGUF_H
#define G4V_IO_MMPROJ_GGUF_H

#include "io/checkpoint.h"

/* Opens the mmproj GGUF file at path into ck (allocated and zeroed by the caller, who closes it
 * on failure too). lim may be NULL (defaults). */
int g4v_mmproj_gguf_load(const char *path, const g4v_checkpoint_limits *lim, g4v_checkpoint *ck,
                         g4v_err *err);

#endif
