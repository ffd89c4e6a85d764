/* gemm.c - prepared weights and the GEMM entry point.
 * First version: weights widened to f32 once at creation, rows of Y split across the pool.
 * (The BLIS-style packed kernels with per-ISA micro-kernels replace the inner loop; issue 6.) */
#include "gemm.h"

#include "base/alloc.h"

#include <math.h>

struct g4v_wmat {
    int n, k;
    g4v_math_mode mode;
    float *w; /* [n, k] f32, exact copy of the stored weight */
};

int g4v_wmat_create(const void *w, g4v_dtype dtype, int n, int k, g4v_math_mode mode,
                    g4v_wmat **out, g4v_err *err) {
    *out = NULL;
    if (n <= 0 || k <= 0) return g4v_fail(err, G4V_ERR_ARG, "weight matrix %dx%d is empty", n, k);
    g4v_wmat *m = g4v_calloc(1, sizeof *m);
    float *f = g4v_malloc_array((size_t)n * (size_t)k, sizeof(float));
    if (!m || !f) {
        g4v_free(m);
        g4v_free(f);
        return g4v_fail(err, G4V_ERR_NOMEM, "out of memory preparing a %dx%d weight", n, k);
    }
    for (size_t i = 0; i < (size_t)n * (size_t)k; i++) f[i] = g4v_load_elem(w, dtype, i);
    m->n = n;
    m->k = k;
    m->mode = mode;
    m->w = f;
    *out = m;
    return G4V_OK;
}

void g4v_wmat_free(g4v_wmat *w) {
    if (!w) return;
    g4v_free(w->w);
    g4v_free(w);
}

int g4v_wmat_n(const g4v_wmat *w) { return w->n; }
int g4v_wmat_k(const g4v_wmat *w) { return w->k; }
size_t g4v_wmat_bytes(const g4v_wmat *w) { return (size_t)w->n * (size_t)w->k * sizeof(float); }

typedef struct {
    const float *X;
    size_t ldx;
    const g4v_wmat *W;
    float *Y;
    size_t ldy;
    g4v_gemm_epi epi;
    int m, rows_per_task;
} gemm_job;

static void gemm_rows(void *arg, int task, int worker) {
    (void)worker;
    const gemm_job *j = arg;
    int r0 = task * j->rows_per_task, r1 = r0 + j->rows_per_task;
    if (r1 > j->m) r1 = j->m;
    g4v_gemm_ref(j->X + (size_t)r0 * j->ldx, r1 - r0, j->ldx, j->W->w, G4V_DT_F32, j->W->n,
                 j->W->k, j->W->mode, j->Y + (size_t)r0 * j->ldy, j->ldy, &j->epi);
}

void g4v_gemm(g4v_pool *pool, const float *X, int m, size_t ldx, const g4v_wmat *W, float *Y,
              size_t ldy, const g4v_gemm_epi *epi) {
    if (m <= 0) return;
    gemm_job j = {X, ldx, W, Y, ldy, epi ? *epi : g4v_gemm_epi_none(), m, 16};
    g4v_pool_run(pool, (m + j.rows_per_task - 1) / j.rows_per_task, gemm_rows, &j);
}
