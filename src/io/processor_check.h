/* processor_check.h - refuses a processor_config.json whose image or video pipeline differs from
 * the one libg4v implements (docs/PREPROCESSING.md): rescale by 1/255, no normalization (or the
 * identity one, mean 0 / std 1), bicubic resize, the config's patch and pooling sizes.
 *
 * libg4v's pipeline is fixed to the published values; a file asking for another one would
 * otherwise be loaded and silently computed differently from transformers. Keys that are absent
 * take transformers' Gemma4 defaults, which are these same values. size (mlx-community copies
 * add a bogus 224x224) is ignored, as transformers ignores it.
 */
#ifndef G4V_IO_PROCESSOR_CHECK_H
#define G4V_IO_PROCESSOR_CHECK_H

#include "io/checkpoint.h"

#include <cjson/cJSON.h>

/* proc: the parsed processor_config.json (NULL: nothing to check); path names it in messages.
 * G4V_ERR_UNSUPPORTED naming the key and value, G4V_ERR_MODEL for a key of the wrong type. */
int g4v_processor_check(const cJSON *proc, const char *path, const g4v_vision_config *cfg,
                        g4v_err *err);

#endif
