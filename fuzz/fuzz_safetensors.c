/* fuzz_safetensors.c - the input is a model.safetensors file.
 *
 * Two consumers see it: (1) the header parser and entry validator on their own (g4v_st_open,
 * g4v_st_entry_parse for every entry, then the valid, non-overlapping ranges mapped with
 * g4v_st_map_ranges and read to the last byte); (2) the whole loader, g4v_checkpoint_open, on a
 * directory holding the input beside the committed micro config.json (fuzz/data/micro), so the
 * name matching, shape checks against the config, overlap check, mapping and clip decoding all
 * run. On success every tensor view is read in full and its byte count checked against its shape.
 * Limits are lowered (1 MiB header, 4096 entries) so the limit branches are reachable.
 */
#include "fuzz_checkpoint.h"
#include "fuzz_common.h"

#include "base/alloc.h"
#include "io/model_source.h"
#include "io/safetensors.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANGES 256

static void fuzz_header(const char *path, const g4v_checkpoint_limits *lim) {
    g4v_st_file f;
    g4v_err err;
    int st = g4v_st_open(path, lim, &f, &err);
    if (st) {
        fz_check_failure(st, &err, "g4v_st_open");
        FZ_ASSERT(f.fd == -1 && f.header == NULL, "failed open left resources behind");
        return;
    }
    FZ_ASSERT(f.data_start + f.data_len == f.file_size, "data section %llu + %llu != file %llu",
              (unsigned long long)f.data_start, (unsigned long long)f.data_len,
              (unsigned long long)f.file_size);
    fz_range r[MAX_RANGES];
    size_t n = 0;
    for (const cJSON *c = f.header->child; c; c = c->next) {
        if (!c->string || !strcmp(c->string, "__metadata__")) continue;
        g4v_st_entry e;
        st = g4v_st_entry_parse(&f, c, c->string, &e, &err);
        if (st) {
            fz_check_failure(st, &err, "g4v_st_entry_parse");
            continue;
        }
        uint64_t elems = 1;
        for (int i = 0; i < e.ndim; i++) elems *= (uint64_t)e.shape[i];
        FZ_ASSERT(e.begin <= e.end && e.end <= f.data_len, "entry %s: [%llu, %llu) outside %llu",
                  c->string, (unsigned long long)e.begin, (unsigned long long)e.end,
                  (unsigned long long)f.data_len);
        FZ_ASSERT(e.end - e.begin == elems * g4v_dtype_size(e.dtype), "entry %s: size mismatch",
                  c->string);
        if (n < MAX_RANGES) r[n++] = (fz_range){e.begin, e.end};
    }
    fz_map_ranges(&f, r, n);
    g4v_st_close(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[512], path[1024];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s", fz_workdir());
        fz_copy_data("micro", "config.json", dir);
        fz_path(path, sizeof path, dir, "model.safetensors");
    }
    fz_write(dir, "model.safetensors", data, size);
    g4v_checkpoint_limits lim;
    g4v_checkpoint_limits_default(&lim);
    lim.max_header_bytes = 1 << 20;
    lim.max_tensor_count = 4096;
    fuzz_header(path, &lim);

    fz_open_checkpoint(dir, &lim);
    return 0;
}
