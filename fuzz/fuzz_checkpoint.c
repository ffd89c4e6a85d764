/* fuzz_checkpoint.c - see fuzz_checkpoint.h. */
#include "fuzz_checkpoint.h"

#include "fuzz_common.h"

#include "base/alloc.h"

#include <stdlib.h>

static int cmp_range(const void *x, const void *y) {
    const fz_range *a = x, *b = y;
    return a->b < b->b ? -1 : a->b > b->b;
}

void fz_map_ranges(const g4v_st_file *f, fz_range *r, size_t n) {
    enum { MAX = 256 };
    if (n > MAX) n = MAX;
    qsort(r, n, sizeof *r, cmp_range);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || r[i].b >= r[m - 1].e) r[m++] = r[i];
    uint64_t b[MAX], e[MAX];
    const void *ptrs[MAX];
    for (size_t i = 0; i < m; i++) b[i] = r[i].b, e[i] = r[i].e;
    g4v_st_mapping *maps = NULL;
    size_t nmaps = 0;
    g4v_err err;
    int st = g4v_st_map_ranges(f, m, b, e, 64, ptrs, &maps, &nmaps, &err);
    if (st)
        fz_check_failure(st, &err, "g4v_st_map_ranges");
    else
        for (size_t i = 0; i < m; i++) fz_touch(ptrs[i], (size_t)(e[i] - b[i]));
    g4v_st_unmap(maps, nmaps);
    g4v_free(maps);
}

static void check_tensor(void *user, const char *name, const g4v_tensor *t) {
    (void)user;
    if (!t->data) return; /* optional and absent */
    uint64_t elems = 1;
    for (int i = 0; i < t->ndim; i++) elems *= (uint64_t)t->shape[i];
    FZ_ASSERT(t->nbytes == elems * g4v_dtype_size(t->dtype), "%s: %zu bytes for its shape", name,
              t->nbytes);
    fz_touch(t->data, t->nbytes);
}

void fz_open_checkpoint(const char *path, const g4v_checkpoint_limits *lim) {
    g4v_checkpoint *ck = NULL;
    g4v_err err;
    int st = g4v_checkpoint_open(path, lim, &ck, &err);
    if (st) {
        fz_check_failure(st, &err, "g4v_checkpoint_open");
        FZ_ASSERT(ck == NULL, "failed open returned a checkpoint");
        return;
    }
    g4v_checkpoint_foreach(ck, check_tensor, NULL);
    g4v_checkpoint_close(ck);
}
