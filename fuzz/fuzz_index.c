/* fuzz_index.c - the input is a model.safetensors.index.json.
 *
 * The directory holds the committed micro checkpoint as two shards with their config.json
 * (fuzz/data/micro-shards); the input replaces the index. g4v_checkpoint_open must either load
 * (then every tensor view is read in full) or fail with a proper status and message: shard names
 * with '/', "..", missing shards, shards that are not safetensors (the index or config.json named
 * as a shard), tensors placed in the wrong shard.
 */
#include "fuzz_common.h"

#include "io/checkpoint.h"

#include <stdio.h>

static void touch_tensor(void *user, const char *name, const g4v_tensor *t) {
    (void)user;
    (void)name;
    if (t->data) fz_touch(t->data, t->nbytes);
}

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
    g4v_checkpoint *ck = NULL;
    g4v_err err;
    int st = g4v_checkpoint_open(dir, &lim, &ck, &err);
    if (st) {
        fz_check_failure(st, &err, "g4v_checkpoint_open");
        FZ_ASSERT(ck == NULL, "failed open returned a checkpoint");
        return 0;
    }
    g4v_checkpoint_foreach(ck, touch_tensor, NULL);
    g4v_checkpoint_close(ck);
    return 0;
}
