/* checkpoint.c - the g4v_checkpoint every model source fills (checkpoint.h): what the loaders
 * (safetensors_dir.c for checkpoint directories, mmproj_gguf.c for llama.cpp mmproj files) use
 * and none owns: the default limits, the allocation of a checkpoint's parts, the decoding of its
 * clip bounds, and the close and foreach that work whichever loader filled it. The loaders call
 * down into this file; it calls none of them.
 */
#include "io/checkpoint.h"

#include "base/alloc.h"
#include "io/checkpoint_internal.h"
#include "io/names.h"
#include "io/safetensors.h"

#include <math.h>
#include <stddef.h>

void g4v_checkpoint_limits_default(g4v_checkpoint_limits *lim) {
    lim->max_header_bytes = 100u * 1000 * 1000;
    lim->max_tensor_count = 1000000;
    lim->max_config_bytes = 16u * 1000 * 1000;
    lim->read_weights = 0;
}

int g4v_checkpoint_alloc_parts(g4v_checkpoint *ck, g4v_err *err) {
    const g4v_vision_config *cfg = &ck->cfg;
    ck->files = g4v_calloc(1, sizeof *ck->files);
    ck->layers = g4v_calloc(cfg->num_layers > 0 ? (size_t)cfg->num_layers : 1, sizeof *ck->layers);
    if (ck->files && cfg->use_clipped_linears)
        ck->files->clips =
            g4v_calloc((size_t)cfg->num_layers * G4V_LIN_COUNT * 4, sizeof(g4v_tensor));
    if (!ck->files || !ck->layers || (cfg->use_clipped_linears && !ck->files->clips))
        return g4v_fail(err, G4V_ERR_NOMEM, "out of memory");
    return G4V_OK;
}

int g4v_checkpoint_decode_clips(g4v_checkpoint *ck, const char *where, g4v_err *err) {
    for (int i = 0; i < ck->cfg.num_layers; i++)
        for (int j = 0; j < G4V_LIN_COUNT; j++) {
            g4v_clip *c = &ck->layers[i].clip[j];
            if (!ck->cfg.use_clipped_linears) {
                *c = (g4v_clip){-INFINITY, INFINITY, -INFINITY, INFINITY};
                continue;
            }
            const g4v_tensor *t = &ck->files->clips[((size_t)i * G4V_LIN_COUNT + j) * 4];
            c->in_min = g4v_tensor_get(&t[0], 0);
            c->in_max = g4v_tensor_get(&t[1], 0);
            c->out_min = g4v_tensor_get(&t[2], 0);
            c->out_max = g4v_tensor_get(&t[3], 0);
            if (!(c->in_min <= c->in_max) || !(c->out_min <= c->out_max))
                return g4v_fail(err, G4V_ERR_MODEL,
                                "%s: layers.%d.%s: clip bounds input [%g, %g], output [%g, %g] "
                                "are not ordered (or NaN)",
                                where, i, g4v_lin_names[j], c->in_min, c->in_max, c->out_min,
                                c->out_max);
        }
    return G4V_OK;
}

void g4v_checkpoint_close(g4v_checkpoint *ck) {
    if (!ck) return;
    if (ck->files) {
        g4v_st_unmap(ck->files->maps, ck->files->nmaps);
        g4v_free(ck->files->maps);
        for (size_t i = 0; i < ck->files->nowned; i++)
            g4v_free_large(ck->files->owned[i]);
        g4v_free(ck->files->owned);
        g4v_free(ck->files->wanted);
        g4v_free(ck->files->clips);
        g4v_free(ck->files);
    }
    g4v_free(ck->layers);
    g4v_free(ck);
}

void g4v_checkpoint_foreach(const g4v_checkpoint *ck,
                            void (*fn)(void *user, const char *name, const g4v_tensor *t),
                            void *user) {
    if (!ck || !ck->files || !fn) return;
    for (size_t i = 0; i < ck->files->nwanted; i++)
        fn(user, ck->files->wanted[i].name, ck->files->wanted[i].dst);
}
