/* config.h - the vision tower's hyper-parameters from a parsed config.json
 * (docs/NUMERICS.md §2.1, token ids §5.1).
 *
 * Reads vision_config (model_type gemma4_vision: the tower; gemma4_unified_vision, or no
 * vision model_type under a top-level gemma4_unified: the 12B unified embedder, whose keys are
 * mm_embed_dim, mm_posemb_size, patch_size, pooling_kernel_size, model_patch_size,
 * output_proj_dims, num_soft_tokens, rms_norm_eps; docs/NUMERICS.md §9.1), text_config.hidden_size
 * and the top-level token ids. Absent vision keys take the HF Gemma4VisionConfig defaults, absent
 * token ids the defaults of §5.1; present keys must be of the right type and in a sane range
 * (dimensions <= 65536, layers <= 1024, position table <= 1M rows), and H % Hkv == 0.
 * Activations other than tanh-GELU and rope types other than default/axial are rejected as
 * unsupported rather than silently computed wrong.
 */
#ifndef G4V_IO_CONFIG_H
#define G4V_IO_CONFIG_H

#include "io/checkpoint.h"

#include <cjson/cJSON.h>

/* path names the file in messages. */
int g4v_config_parse(const cJSON *root, const char *path, g4v_vision_config *cfg, g4v_err *err);

/* "e2b", "e4b", "26b-a4b", "31b" from (D, T); "custom" otherwise. */
const char *g4v_config_variant(int hidden_size, int text_hidden_size);

#endif
