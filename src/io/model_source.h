/* model_source.h - g4v_checkpoint_open: a model path, whatever source it is, opened as one
 * g4v_checkpoint (io/checkpoint.h).
 *
 * The sources are the rows of one table (model_source.c), tried in order; the first that claims
 * the path loads it:
 *   - an mmproj GGUF file (a regular file starting with "GGUF"): mmproj_gguf.c, docs/GGUF.md;
 *   - a directory with no config.json holding exactly one mmproj*.gguf: the same loader;
 *   - a checkpoint directory (config.json + safetensors: one file, a sharded index, or a sidecar;
 *     the tower's tensors or the 12B unified embedder's): safetensors_dir.c.
 * A new source is a new row and its loader; nothing above src/io changes (every loader fills the
 * same struct). The result is immutable and may be shared by any number of threads.
 *
 * Limit: a file truncated or rewritten while mapped can still raise SIGBUS on access, as with any
 * mmap-based loader.
 * Status: G4V_ERR_IO for missing directory/files, G4V_ERR_MODEL for malformed or inconsistent
 * content, G4V_ERR_LIMIT above one of g4v_checkpoint_limits (settable through g4v_model_options),
 * G4V_ERR_UNSUPPORTED for valid but unhandled content (e.g. quantized vision weights),
 * G4V_ERR_NOMEM.
 */
#ifndef G4V_IO_MODEL_SOURCE_H
#define G4V_IO_MODEL_SOURCE_H

#include "io/checkpoint.h"

/* Opens path. lim may be NULL (defaults). On failure *out is NULL and err names the cause. */
int g4v_checkpoint_open(const char *path, const g4v_checkpoint_limits *lim, g4v_checkpoint **out,
                        g4v_err *err);

#endif
