/* fuzz_gguf.c - the input is an mmproj GGUF file (docs/GGUF.md).
 *
 * Two consumers see it: (1) the container reader on its own (g4v_gguf_open; every typed getter on
 * every key; g4v_gguf_tensor_check of every tensor; the valid, non-overlapping ranges mapped with
 * g4v_st_map_ranges and read to the last byte); (2) the whole loader, g4v_checkpoint_open on the
 * file, so the config from the metadata, the name mapping, shape checks, overlap check, mapping,
 * the transforms (conv layout, the 12B permutations, Q8_0 widening, BF16 narrowing) and clip
 * decoding all run. On success every tensor view is read in full and its byte count checked
 * against its shape. Limits are lowered (1 MiB header, 4096 tensors/pairs) so the limit branches
 * are reachable. No companion file: the GGUF holds its own config.
 */
#include "fuzz_checkpoint.h"
#include "fuzz_common.h"

#include "base/alloc.h"
#include "io/gguf.h"
#include "io/model_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANGES 256

static void fuzz_container(const char *path, const g4v_checkpoint_limits *lim) {
    g4v_gguf_file f;
    g4v_err err;
    int st = g4v_gguf_open(path, lim, &f, &err);
    if (st) {
        fz_check_failure(st, &err, "g4v_gguf_open");
        FZ_ASSERT(f.io.fd == -1 && f.hdr == NULL && f.kv == NULL, "failed open left resources");
        return;
    }
    FZ_ASSERT(f.io.data_start + f.io.data_len == f.io.file_size, "data section %llu + %llu != %llu",
              (unsigned long long)f.io.data_start, (unsigned long long)f.io.data_len,
              (unsigned long long)f.io.file_size);
    FZ_ASSERT(f.alignment && !(f.alignment & (f.alignment - 1)), "alignment %llu",
              (unsigned long long)f.alignment);
    for (size_t i = 0; i < f.nkv; i++) {
        const char *k = f.kv[i].key;
        FZ_ASSERT(g4v_gguf_find(&f, k) == &f.kv[i], "key %s not found again", k);
        int64_t iv;
        double dv;
        int b;
        char s[64];
        if ((st = g4v_gguf_get_int(&f, k, INT64_MIN, INT64_MAX, &iv, NULL, &err)))
            fz_check_failure(st, &err, "g4v_gguf_get_int");
        if ((st = g4v_gguf_get_float(&f, k, &dv, NULL, NULL, &err)))
            fz_check_failure(st, &err, "g4v_gguf_get_float");
        if ((st = g4v_gguf_get_bool(&f, k, &b, NULL, &err)))
            fz_check_failure(st, &err, "g4v_gguf_get_bool");
        if ((st = g4v_gguf_get_str(&f, k, s, sizeof s, NULL, &err)))
            fz_check_failure(st, &err, "g4v_gguf_get_str");
    }
    fz_range r[MAX_RANGES];
    size_t n = 0;
    for (size_t i = 0; i < f.nt; i++) {
        const g4v_gguf_tensor *t = &f.t[i];
        FZ_ASSERT(g4v_gguf_tensor_find(&f, t->name) == t, "tensor %s not found again", t->name);
        uint64_t nbytes;
        st = g4v_gguf_tensor_check(&f, t, &nbytes, &err);
        if (st) {
            fz_check_failure(st, &err, "g4v_gguf_tensor_check");
            continue;
        }
        FZ_ASSERT(t->offset + nbytes <= f.io.data_len, "tensor %s outside the data", t->name);
        if (n < MAX_RANGES) r[n++] = (fz_range){t->offset, t->offset + nbytes};
    }
    fz_map_ranges(&f.io, r, n);
    g4v_gguf_close(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char dir[512], path[1024];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s", fz_workdir());
        fz_path(path, sizeof path, dir, "mmproj-fuzz.gguf");
    }
    fz_write(dir, "mmproj-fuzz.gguf", data, size);
    g4v_checkpoint_limits lim;
    g4v_checkpoint_limits_default(&lim);
    lim.max_header_bytes = 1 << 20;
    lim.max_tensor_count = 4096;
    fuzz_container(path, &lim);

    fz_open_checkpoint(path, &lim);
    return 0;
}
