/* rope2d.c - Gemma 4's 2D rotary position embedding (docs/NUMERICS.md §4.5).
 * A head of d channels is two halves of c = d/2: the first rotates by the patch column, the
 * second by the patch row, both with inv_freq[j] = 1/theta^(2j/c), j < c/2. Inside a half,
 * channel t pairs with t + c/2 ("rotate-half" / NeoX pairing), not with t + 1. Angles are f32
 * (pos * inv_freq, as HF computes them); cos/sin of that f32 angle are taken in double and
 * rounded once. Tables are indexed by the coordinate value, so one small table serves both axes. */
#include "kernels/dispatch.h"
#include "kernels/par_rows.h"

#include <math.h>

void g4v_rope2d_table(double theta, int head_dim, int npos, float *cos_t, float *sin_t) {
    int c = head_dim / 2, half = c / 2;
    for (int j = 0; j < half; j++) {
        float inv_freq = (float)(1.0 / pow(theta, (double)(2 * j) / (double)c));
        for (int p = 0; p < npos; p++) {
            float ang = (float)p * inv_freq;
            cos_t[(size_t)p * half + j] = (float)cos((double)ang);
            sin_t[(size_t)p * half + j] = (float)sin((double)ang);
        }
    }
}

/* Rotates one half (c channels) of one head by the table row for coordinate p. */
static void rotate_half_part(float *v, int c, const float *cs, const float *sn) {
    int half = c / 2;
    for (int t = 0; t < half; t++) {
        float a = v[t], b = v[t + half];
        v[t] = a * cs[t] - b * sn[t];
        v[t + half] = b * cs[t] + a * sn[t];
    }
}

void g4v_rope_row_portable(float *row, int heads, int head_dim, const float *cx, const float *sx,
                           const float *cy, const float *sy) {
    int c = head_dim / 2;
    for (int h = 0; h < heads; h++) {
        float *v = row + (size_t)h * head_dim;
        rotate_half_part(v, c, cx, sx);     /* channels [0, c): column */
        rotate_half_part(v + c, c, cy, sy); /* channels [c, 2c): row */
    }
}

typedef struct {
    float *x;
    size_t ld;
    const int32_t *pos;
    const float *cos_t, *sin_t;
    int heads, d;
    g4v_rope_row_fn *row;
} rope_job;

static void rope_rows(void *arg, size_t r0, size_t r1) {
    const rope_job *j = arg;
    size_t half = (size_t)j->d / 4;
    for (size_t l = r0; l < r1; l++) {
        size_t px = (size_t)j->pos[2 * l], py = (size_t)j->pos[2 * l + 1];
        j->row(j->x + l * j->ld, j->heads, j->d, j->cos_t + px * half, j->sin_t + px * half,
               j->cos_t + py * half, j->sin_t + py * half);
    }
}

void g4v_rope2d_apply(const g4v_kernels *k, g4v_pool *pool, float *x, size_t ld, const int32_t *pos,
                      const float *cos_t, const float *sin_t, size_t L, int heads, int head_dim) {
    rope_job j = {x, ld, pos, cos_t, sin_t, heads, head_dim, k->use[G4V_KF_ROPE_ROW].rope_row};
    g4v_par_rows(pool, L, (size_t)heads * (size_t)head_dim, rope_rows, &j);
}
