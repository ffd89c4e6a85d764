/* budget_defaults.h - the soft-token budgets a checkpoint asks for when the caller names none.
 *
 * Gemma 4 repositories state the image budget in up to five places (docs/GUIDE.md "Default
 * budget"): processor_config.json image_processor.max_soft_tokens, image_processor.
 * image_seq_length and the top-level image_seq_length; config.json vision_config.
 * default_output_length (num_soft_tokens for the 12B unified model) and the top-level
 * vision_soft_tokens_per_image. All say 280 in the published files, but a repository may raise
 * them (1120 is proposed), so they are read, never assumed. When they disagree the first present
 * one in that order wins: transformers sizes the image from image_processor.max_soft_tokens alone
 * (the model's output length follows from the pixels it gets), so the processor keys come first
 * and config.json only speaks for a directory without them. Video: video_processor.max_soft_tokens
 * (per frame) and video_processor.num_frames.
 *
 * Values are checked for type and range here (an integer in [1, 2^20]); whether the chosen one is
 * a supported budget is checked by the load that uses it (g4v_model_load with budget 0).
 */
#ifndef G4V_IO_BUDGET_DEFAULTS_H
#define G4V_IO_BUDGET_DEFAULTS_H

#include "io/checkpoint.h"

#include <cjson/cJSON.h>

/* Fills cfg->default_budget, _budget_from, _video_budget and _video_frames from config (the
 * parsed config.json, named config_path in messages) and dir/processor_config.json when that file
 * exists (at most max_bytes). A malformed processor_config.json or a key of the wrong type is
 * G4V_ERR_MODEL naming the file and key. */
int g4v_budget_defaults_read(const char *dir, const cJSON *config, const char *config_path,
                             uint64_t max_bytes, g4v_vision_config *cfg, g4v_err *err);

/* The built-in defaults (280 images, 70 and 32 frames per video), for a checkpoint that names
 * none (an mmproj GGUF). */
void g4v_budget_defaults_builtin(g4v_vision_config *cfg);

#endif
