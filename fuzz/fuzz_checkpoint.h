/* fuzz_checkpoint.h - the whole-loader step the checkpoint fuzz targets share: open a model
 * path, and either fail cleanly (a status, a message, no checkpoint) or give a checkpoint whose
 * every tensor's byte count matches its shape and whose every byte can be read. */
#ifndef G4V_FUZZ_CHECKPOINT_H
#define G4V_FUZZ_CHECKPOINT_H

#include "io/model_source.h"
#include "io/safetensors.h"

#include <stdint.h>

/* A tensor's byte range [b, e) inside a file's data section. */
typedef struct fz_range {
    uint64_t b, e;
} fz_range;

/* Maps the ranges r[0..n) of file f (sorted and overlaps dropped here, as the mapper wants them:
 * the loaders refuse overlaps before mapping) with g4v_st_map_ranges, reads every byte, unmaps. */
void fz_map_ranges(const g4v_st_file *f, fz_range *r, size_t n);

/* g4v_checkpoint_open(path, lim) with the checks at the top; lim may be NULL. */
void fz_open_checkpoint(const char *path, const g4v_checkpoint_limits *lim);

#endif
