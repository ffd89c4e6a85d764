/* ctx.c - g4v_ctx: the per-thread half of the API (thread pool, encoder workspace, output
 * buffers, last error). A ctx is used by one thread at a time; everything it writes is its own,
 * so contexts on one shared model never touch common memory. */
#include "api_internal.h"

#include "base/alloc.h"
#include "base/cpu.h"

#include <stdint.h>
#include <string.h>

void g4v_ctx_options_init_sized(g4v_ctx_options *o, size_t size) {
    g4v_ctx_options d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    g4v_api_init_struct(o, size, &d, sizeof d);
}

g4v_status g4v_ctx_create(const g4v_model *model, const g4v_ctx_options *opts, g4v_ctx **out,
                   char *errbuf, size_t errbuf_size) {
    g4v_err err;
    g4v_err_clear(&err);
    g4v_api_copy_msg(errbuf, errbuf_size, "");
    int st;
    if (out) *out = NULL;
    if (!model || !out) {
        st = g4v_fail(&err, G4V_ERR_ARG, "g4v_ctx_create: model and out must not be NULL");
        goto fail;
    }
    if (model->opts.metadata_only) {
        st = g4v_fail(&err, G4V_ERR_ARG,
                      "g4v_ctx_create: the model was loaded with metadata_only (no weights packed); "
                      "load it without that option to encode");
        goto fail;
    }
    /* the model chose its kernels at load; its ctx runs resize and SHA-256 kernels chosen now */
    if ((st = g4v_cpu_isa_check(&err))) goto fail;
    g4v_ctx_options o;
    memset(&o, 0, sizeof o);
    if ((st = g4v_api_read_opts(&o, sizeof o, opts, "g4v_ctx_options", &err))) goto fail;
    int threads = o.threads;
    if (threads < 0 || threads > 4096) {
        st = g4v_fail(&err, G4V_ERR_ARG, "g4v_ctx_create: threads must be 0..4096, found %d",
                      threads);
        goto fail;
    }
    g4v_ctx *c = g4v_calloc(1, sizeof *c);
    if (!c) {
        st = g4v_fail(&err, G4V_ERR_NOMEM, "out of memory allocating a context");
        goto fail;
    }
    c->model = model;
    g4v_err_clear(&c->err);
    if ((st = g4v_pool_create(threads, &c->pool, &err))) {
        g4v_ctx_free(c);
        goto fail;
    }
    if (!(c->ws = g4v_workspace_create())) {
        g4v_ctx_free(c);
        st = g4v_fail(&err, G4V_ERR_NOMEM, "out of memory allocating a workspace");
        goto fail;
    }
    *out = c;
    return G4V_OK;
fail:
    g4v_api_copy_msg(errbuf, errbuf_size, err.msg);
    return st;
}

void g4v_ctx_free(g4v_ctx *c) {
    if (!c) return;
    g4v_pool_destroy(c->pool);
    g4v_workspace_free(c->ws);
    g4v_free_large(c->features);
    g4v_free_large(c->features_bf16);
    g4v_free_large(c->video_frames);
    g4v_free_large(c->batch_features);
    g4v_free_large(c->batch_bf16);
    g4v_free_large(c->batch_errs);
    g4v_free(c);
}

const char *g4v_ctx_error(const g4v_ctx *c) {
    if (!c) return "g4v_ctx_error: ctx is NULL";
    return c->err.msg;
}

int g4v_call_begin(g4v_ctx *c, void *out, size_t out_size) {
    if (out) memset(out, 0, out_size);
    if (!c) return G4V_ERR_ARG;
    g4v_err_clear(&c->err);
    c->cache_hit = 0;
    if (!out) return g4v_fail(&c->err, G4V_ERR_ARG, "the result pointer must not be NULL");
    return G4V_OK;
}

int g4v_call_fail(g4v_ctx *c, int st, void *out, size_t out_size, const char *what) {
    memset(out, 0, out_size);
    if (what) g4v_err_prefix(&c->err, "%s", what);
    return st;
}

/* Grows a ctx-owned buffer to hold n elements of size sz; keep elements are kept (0: none). */
int g4v_ctx_grow_buffer(void **buf, size_t *cap, size_t n, size_t sz, size_t keep, g4v_err *err) {
    if (n <= *cap) return G4V_OK;
    if (n > SIZE_MAX / sz) /* as calloc: a size that cannot exist cannot be allocated */
        return g4v_fail(err, G4V_ERR_NOMEM, "output of %zu values is too large", n);
    void *p = g4v_malloc_large(n * sz);
    if (!p) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory for %zu output values", n);
    if (keep) memcpy(p, *buf, keep * sz);
    g4v_free_large(*buf);
    *buf = p;
    *cap = n;
    return G4V_OK;
}
