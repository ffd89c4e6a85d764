/* rows.c - the row passes every ISA goes through: RMSNorm over rows, and the fused passes that
 * chain several row kernels in one pool dispatch (the encoder's per-head norms with RoPE and the
 * head-major copy; the post-norm with the residual add). Each takes the row kernels from the
 * caller's table (dispatch.h) and gives every task whole rows, so the bits do not depend on the
 * thread count; one dispatch and one walk over the rows instead of two or three means fewer
 * points where a thread waits for the other, and each row is still in L1 for the next kernel. */
#include "dispatch.h"
#include "par_rows.h"

#include <string.h>

typedef struct {
    const float *x;
    float *y;
    size_t ld;
    int n;
    const float *w;
    float eps;
    g4v_rmsnorm_row_fn *row;
} norm_job;

static void norm_rows(void *arg, size_t r0, size_t r1) {
    const norm_job *j = arg;
    for (size_t r = r0; r < r1; r++)
        j->row(j->x + r * j->ld, j->y + r * j->ld, j->n, j->w, j->eps);
}

void g4v_rmsnorm(const g4v_kernels *k, g4v_pool *pool, const float *x, float *y, size_t ld,
                 size_t rows, int n, const float *w, float eps) {
    norm_job j = {x, y, ld, n, w, eps, k->use[G4V_KF_RMSNORM_ROW].rmsnorm_row};
    g4v_par_rows(pool, rows, (size_t)n, norm_rows, &j);
}

typedef struct {
    float *x;
    size_t ld;
    int heads, d;
    const float *w;
    float eps;
    const g4v_heads_post *post;
    g4v_rmsnorm_row_fn *norm;
    g4v_rope_row_fn *rope;
} heads_job;

static void heads_rows(void *arg, size_t r0, size_t r1) {
    const heads_job *j = arg;
    const g4v_heads_post *p = j->post;
    size_t d = (size_t)j->d, q = d / 4;
    for (size_t r = r0; r < r1; r++) {
        float *row = j->x + r * j->ld;
        for (int h = 0; h < j->heads; h++)
            j->norm(row + h * d, row + h * d, j->d, j->w, j->eps);
        if (p && p->pos) {
            size_t px = (size_t)p->pos[2 * r], py = (size_t)p->pos[2 * r + 1];
            j->rope(row, j->heads, j->d, p->cos_t + px * q, p->sin_t + px * q, p->cos_t + py * q,
                    p->sin_t + py * q);
        }
        if (p && p->dst)
            for (int h = 0; h < j->heads; h++)
                memcpy(p->dst + ((size_t)h * p->L + p->row0 + r) * d, row + h * d,
                       d * sizeof(float));
    }
}

void g4v_heads_norm(const g4v_kernels *k, g4v_pool *pool, float *x, size_t ld, size_t rows,
                    int heads, int d, const float *w, float eps, const g4v_heads_post *post) {
    heads_job j = {x,
                   ld,
                   heads,
                   d,
                   w,
                   eps,
                   post,
                   k->use[G4V_KF_RMSNORM_ROW].rmsnorm_row,
                   k->use[G4V_KF_ROPE_ROW].rope_row};
    g4v_par_rows(pool, rows, (size_t)heads * (size_t)d, heads_rows, &j);
}

typedef struct {
    float *a;
    size_t lda;
    float *h;
    size_t ldh;
    int n;
    const float *w;
    float eps;
    g4v_rmsnorm_row_fn *norm;
    g4v_add_row_fn *add;
} norm_add_job;

static void norm_add_rows(void *arg, size_t r0, size_t r1) {
    const norm_add_job *j = arg;
    for (size_t r = r0; r < r1; r++) {
        float *a = j->a + r * j->lda;
        j->norm(a, a, j->n, j->w, j->eps);
        j->add(a, j->h + r * j->ldh, j->n);
    }
}

void g4v_rmsnorm_add(const g4v_kernels *k, g4v_pool *pool, float *a, size_t lda, float *h,
                     size_t ldh, size_t rows, int n, const float *w, float eps) {
    norm_add_job j = {a,
                      lda,
                      h,
                      ldh,
                      n,
                      w,
                      eps,
                      k->use[G4V_KF_RMSNORM_ROW].rmsnorm_row,
                      k->use[G4V_KF_ADD_ROW].add_row};
    g4v_par_rows(pool, rows, (size_t)n, norm_add_rows, &j);
}
