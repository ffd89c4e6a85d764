/* fuzz_index.c - the input is a model.safetensors.index.json.
 *
 * The directory holds the committed micro checkpoint as two shards with their config.json
 * (fuzz/data/micro-shards); the input replaces the index. g4v_checkpoint_open must either load
 * (then every tensor view is read in full) or fail with a proper status and message: shard names
 * with '/', "..", missing shards, shards that are not safetensors (the index or config.json named
 * as a shard), tensors placed in the wrong shard.
 */
#include "fuzz_checkpoint.h"
#include "fuzz_common.h"

#include "io/model_source.h"

#include <stdio.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[512];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s", fz_workdir());
        fz_copy_data("micro-shards", "config.json", dir);
        fz_copy_data("micro-shards", "model-00001-of-00002.safetensors", dir);
        fz_copy_data("micro-shards", "model-00002-of-00002.safetensors", dir);
    }
    fz_write(dir, "model.safetensors.index.json", data, size);
    g4v_checkpoint_limits lim;
    g4v_checkpoint_limits_default(&lim);
    lim.max_config_bytes = 1 << 20;
    fz_open_checkpoint(dir, &lim);
    return 0;
}
