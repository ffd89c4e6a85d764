/* fingerprint.c - g4v_model_fingerprint: SHA-256 over a format tag, the numerics version and
 * math mode's name (g4v_math_mode_name), the vision configuration values that change the
 * computation, and every vision tensor the encoder uses, in canonical-name order, each as (name,
 * dtype, shape, SHA-256 of its bytes).
 *
 * Layout-independent by construction: names are the canonical ones (no "model." prefix; mlx and
 * Hugging Face spellings map to the same name), tensors are visited in name order whatever file or
 * shard holds them, and a clip scalar stored as shape [1] hashes as shape []. What stays out:
 * token ids and default_output_length (they do not change a feature bit), file names, naming, the
 * load limits, and tensors the encoder does not read (text weights, decoys).
 *
 * Cost: every vision byte is read once (e4b: 340 MB). Tensors are hashed in parallel (one task
 * per tensor on a temporary pool), then their digests are hashed in order, so the result does not
 * depend on the thread count. The model computes it on the first call and remembers it.
 */
#include "fingerprint.h"

#include "api_internal.h"
#include "base/alloc.h"
#include "base/pool.h"

#include <pthread.h>
#include <string.h>

typedef struct fp_tensor {
    const char *name;
    const g4v_tensor *t;
    uint8_t digest[G4V_SHA256_BYTES];
} fp_tensor;

typedef struct fp_job {
    fp_tensor *v;
    size_t n, cap;
    int drop_pages;
    int nomem;
} fp_job;

static void collect(void *user, const char *name, const g4v_tensor *t) {
    fp_job *j = user;
    if (j->nomem) return;
    if (j->n == j->cap) {
        size_t cap = j->cap ? 2 * j->cap : 256;
        fp_tensor *v = g4v_realloc(j->v, cap * sizeof *v);
        if (!v) {
            j->nomem = 1;
            return;
        }
        j->v = v;
        j->cap = cap;
    }
    j->v[j->n++] = (fp_tensor){name, t, {0}};
}

static void hash_task(void *arg, int task, int worker) {
    (void)worker;
    fp_job *j = arg;
    fp_tensor *f = &j->v[task];
    const g4v_tensor *t = f->t;
    if (!t->data) { /* an optional tensor the config does not use: hashed as absent */
        g4v_sha256("absent", 6, f->digest);
        return;
    }
    /* 1 MiB pieces, so a dropped piece's pages can go while the next is read */
    g4v_sha256_ctx s;
    g4v_sha256_init(&s);
    const uint8_t *p = t->data;
    for (size_t off = 0; off < t->nbytes; off += (size_t)1 << 20) {
        size_t len = t->nbytes - off < ((size_t)1 << 20) ? t->nbytes - off : (size_t)1 << 20;
        g4v_sha256_update(&s, p + off, len);
    }
    g4v_sha256_final(&s, f->digest);
    if (j->drop_pages) g4v_tensor_drop_pages(t);
}

static void hash_double(g4v_sha256_ctx *s, double d) {
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    g4v_sha256_u64(s, bits);
}

int g4v_fingerprint_compute(const g4v_checkpoint *ck, g4v_math_mode mode, int threads,
                            int drop_pages, char hex[G4V_SHA256_HEX], g4v_err *err) {
    fp_job j = {NULL, 0, 0, drop_pages, 0};
    g4v_checkpoint_foreach(ck, collect, &j);
    if (j.nomem) {
        g4v_free(j.v);
        return g4v_fail(err, G4V_ERR_NOMEM, "fingerprint: out of memory listing the tensors");
    }
    g4v_pool *pool = NULL;
    /* without a pool (it could not be created) the same tasks run on this thread */
    if (g4v_pool_create(threads, &pool, NULL)) pool = NULL;
    g4v_pool_run(pool, (int)j.n, hash_task, &j);
    g4v_pool_destroy(pool);

    const g4v_vision_config *c = &ck->cfg;
    g4v_sha256_ctx s;
    g4v_sha256_init(&s);
    g4v_sha256_str(&s, G4V_FINGERPRINT_TAG);
    g4v_sha256_u64(&s, G4V_NUMERICS_VERSION);
    g4v_sha256_str(&s, g4v_math_mode_name(mode));
    const struct {
        const char *name;
        int64_t v;
    } ints[] = {{"hidden_size", c->hidden_size},
                {"intermediate_size", c->intermediate_size},
                {"num_layers", c->num_layers},
                {"num_heads", c->num_heads},
                {"num_kv_heads", c->num_kv_heads},
                {"head_dim", c->head_dim},
                {"patch_size", c->patch_size},
                {"pooling_kernel_size", c->pooling_kernel_size},
                {"position_embedding_size", c->position_embedding_size},
                {"text_hidden_size", c->text_hidden_size},
                {"use_clipped_linears", c->use_clipped_linears},
                {"standardize", c->standardize}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        g4v_sha256_str(&s, ints[i].name);
        g4v_sha256_u64(&s, (uint64_t)ints[i].v);
    }
    g4v_sha256_str(&s, "rope_theta");
    hash_double(&s, c->rope_theta);
    g4v_sha256_str(&s, "rms_norm_eps");
    hash_double(&s, c->rms_norm_eps);
    /* Only for the unified kind, so that every tower model keeps the fingerprint (and the cache
     * entries) it had before the kind existed. Its tensors are in the list below like any. */
    if (c->kind == G4V_KIND_UNIFIED) {
        g4v_sha256_str(&s, "kind");
        g4v_sha256_str(&s, g4v_model_kind_name(c->kind));
        g4v_sha256_str(&s, "layer_norm_eps");
        hash_double(&s, c->layer_norm_eps);
    }
    g4v_sha256_u64(&s, j.n);
    for (size_t i = 0; i < j.n; i++) {
        const g4v_tensor *t = j.v[i].t;
        int64_t count = 1;
        for (int d = 0; d < t->ndim; d++) count *= t->shape[d];
        int ndim = t->ndim == 1 && count == 1 && t->shape[0] == 1 ? 0 : t->ndim; /* [1] == [] */
        g4v_sha256_str(&s, j.v[i].name);
        g4v_sha256_str(&s, t->data ? g4v_dtype_name(t->dtype) : "absent");
        g4v_sha256_u64(&s, (uint64_t)ndim);
        for (int d = 0; d < ndim; d++) g4v_sha256_u64(&s, (uint64_t)t->shape[d]);
        g4v_sha256_update(&s, j.v[i].digest, G4V_SHA256_BYTES);
    }
    uint8_t d[G4V_SHA256_BYTES];
    g4v_sha256_final(&s, d);
    g4v_sha256_hex(d, hex);
    g4v_free(j.v);
    return G4V_OK;
}

g4v_status g4v_model_fingerprint(const g4v_model *m, char *hex, size_t hex_size, char *errbuf,
                                 size_t errbuf_size) {
    g4v_api_copy_msg(errbuf, errbuf_size, "");
    if (!m || !hex || hex_size < G4V_FINGERPRINT_HEX) {
        if (hex && hex_size) hex[0] = '\0';
        g4v_api_copy_msg(errbuf, errbuf_size,
                         "g4v_model_fingerprint: model and hex must not be NULL and hex must hold "
                         "G4V_FINGERPRINT_HEX (65) bytes");
        return G4V_ERR_ARG;
    }
    g4v_err err;
    g4v_err_clear(&err);
    /* The model is otherwise immutable; this one memo is written once, under its lock. */
    struct g4v_model *mm = (struct g4v_model *)m;
    int st = G4V_OK;
    pthread_mutex_lock(&mm->fp_lock);
    if (!mm->fp_done) {
        st = g4v_fingerprint_compute(m->ck, m->opts.math, 0,
                                     !m->opts.read_weights, mm->fp,
                                     &err); /* a heap copy (read_weights) must not be dropped */
        mm->fp_done = st == G4V_OK;
    }
    if (mm->fp_done) memcpy(hex, mm->fp, G4V_FINGERPRINT_HEX);
    else hex[0] = '\0';
    pthread_mutex_unlock(&mm->fp_lock);
    if (st) g4v_api_copy_msg(errbuf, errbuf_size, err.msg);
    return st;
}
