/* prepare.c - checkpoint tensors to model: shapes, f32 vectors, config sizes, packed weights
 * (prepare.h), shared by the vision tower and the unified embedder. */
#include "prepare.h"

#include "base/alloc.h"
#include "kernels/gemm_q8.h"

#include <stdio.h>
#include <string.h>

int g4v_prep_check_shape(const char *who, const g4v_tensor *t, const char *name, int layer,
                         int ndim, const int64_t *s, g4v_err *err) {
    char where[96];
    if (layer >= 0)
        snprintf(where, sizeof where, "layer %d %s", layer, name);
    else
        snprintf(where, sizeof where, "%s", name);
    if (!t->data) return g4v_fail(err, G4V_ERR_MODEL, "%s: tensor %s is missing", who, where);
    int ok = t->ndim == ndim;
    for (int i = 0; ok && i < ndim; i++)
        ok = t->shape[i] == s[i];
    size_t count = 1;
    for (int i = 0; ok && i < ndim; i++)
        count *= (size_t)s[i];
    if (ok && t->nbytes != count * g4v_dtype_size(t->dtype)) ok = 0;
    if (!ok) {
        char exp[96] = "", got[96] = "";
        for (int i = 0; i < ndim; i++)
            snprintf(exp + strlen(exp), sizeof exp - strlen(exp), "%s%lld", i ? ", " : "",
                     (long long)s[i]);
        for (int i = 0; i < t->ndim && i < 4; i++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", i ? ", " : "",
                     (long long)t->shape[i]);
        return g4v_fail(err, G4V_ERR_MODEL,
                        "%s: tensor %s: expected shape [%s], found [%s] (%zu bytes)", who, where,
                        exp, got, t->nbytes);
    }
    return G4V_OK;
}

const float *g4v_prep_widen(const g4v_tensor *t, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        dst[i] = g4v_tensor_get(t, (size_t)i);
    return dst;
}

int g4v_prep_check_config(const char *who, const g4v_vision_config *c, g4v_err *err) {
    if (c->hidden_size <= 0 || c->patch_size <= 0 || c->pooling_kernel_size <= 0 ||
        c->position_embedding_size <= 0 || c->text_hidden_size <= 0)
        return g4v_fail(err, G4V_ERR_MODEL, "%s: vision config has a non-positive size", who);
    if (c->hidden_size > (1 << 16) || c->text_hidden_size > (1 << 18))
        return g4v_fail(err, G4V_ERR_UNSUPPORTED, "%s: vision config sizes out of range", who);
    if (!(c->rms_norm_eps >= 0.0))
        return g4v_fail(err, G4V_ERR_MODEL, "%s: vision config rms_norm_eps %g is invalid", who,
                        c->rms_norm_eps);
    return G4V_OK;
}

int g4v_prep_place(const char *who, const g4v_kernels *kt, g4v_prep_item *items, int n,
                   void **block, g4v_err *err) {
    size_t total = 0;
    *block = NULL;
    for (int i = 0; i < n; i++) {
        const g4v_tensor *t = items[i].t;
        size_t b = g4v_wmat_packed_bytes(kt, t->q8_0 ? NULL : t->data, t->dtype,
                                         (int)t->shape[0], (int)t->shape[1], items[i].mode,
                                         items[i].pack);
        size_t r = (b + 63) & ~(size_t)63;
        if (r < b || total + r < total)
            return g4v_fail(err, G4V_ERR_NOMEM, "%s: the weights do not fit in memory", who);
        items[i].placed = b > 0;
        items[i].offset = total;
        total += r;
    }
    *block = total ? g4v_malloc_large(total) : NULL;
    if (total && !*block)
        return g4v_fail(err, G4V_ERR_NOMEM, "%s: out of memory for %zu MB of weights", who,
                        total >> 20);
    return G4V_OK;
}

typedef struct {
    const char *who;
    const g4v_kernels *kt;
    void *block;
    int drop;
    const g4v_prep_item *items;
    int *status;
    g4v_err *errs;
} pack_job;

/* Packs one weight; each task writes only its own wmat, status and message. */
static void pack_task(void *arg, int i, int worker) {
    (void)worker;
    const pack_job *j = arg;
    const g4v_prep_item *it = &j->items[i];
    const g4v_tensor *t = it->t;
    g4v_err *err = &j->errs[i];
    void *storage = it->placed ? (char *)j->block + it->offset : NULL;
    int n = (int)t->shape[0], k = (int)t->shape[1], st;
    if (t->q8_0 && it->mode == G4V_MATH_INT8_BLOCKS && k % G4V_Q8_BLOCK == 0) {
        /* a Q8_0 GGUF weight: its codes and scales as stored (docs/NUMERICS.md §12.5) */
        st = g4v_wmat_create_q8_0_in(j->kt, t->q8_0, n, k, storage, it->out, err);
        if (!st && j->drop)
            g4v_drop_mapped_pages(t->q8_0, (size_t)n * (size_t)(k / G4V_Q8_BLOCK) *
                                               G4V_Q8_0_BLOCK_BYTES);
    } else {
        st = g4v_wmat_create_in(j->kt, t->data, t->dtype, n, k, it->mode, it->pack, storage,
                                it->out, err);
        /* a weight used in place reads those pages at every encode */
        if (!st && j->drop && !g4v_wmat_in_place(*it->out)) g4v_tensor_drop_pages(t);
    }
    if (st && it->layer >= 0)
        g4v_err_prefix(err, "%s: preparing layer %d %s: ", j->who, it->layer, it->name);
    else if (st)
        g4v_err_prefix(err, "%s: preparing %s: ", j->who, it->name);
    j->status[i] = st;
}

int g4v_prep_pack(const char *who, const g4v_kernels *kt, void *block, int drop, g4v_pool *pool,
                  const g4v_prep_item *items, int n, g4v_err *err) {
    int *status = g4v_calloc((size_t)n, sizeof *status);
    g4v_err *errs = g4v_malloc_array((size_t)n, sizeof *errs);
    if (!status || !errs) {
        g4v_free(status);
        g4v_free(errs);
        return g4v_fail(err, G4V_ERR_NOMEM, "%s: out of memory preparing %d weights", who, n);
    }
    pack_job job = {who, kt, block, drop, items, status, errs};
    g4v_pool_run(pool, n, pack_task, &job);
    int st = G4V_OK;
    for (int i = 0; i < n && !st; i++)
        if ((st = status[i])) *err = errs[i];
    g4v_free(status);
    g4v_free(errs);
    return st;
}
