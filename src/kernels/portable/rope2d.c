/* rope2d.c - the portable row kernel of Gemma 4's 2D rotary position embedding
 * (docs/NUMERICS.md §4.5; its tables: g4v_rope2d_table, rope_table.c). A head of d channels is
 * two halves of c = d/2: the first rotates by the patch column, the second by the patch row.
 * Inside a half, channel t pairs with t + c/2 ("rotate-half" / NeoX pairing), not with t + 1. */
#include "kernels/dispatch.h"

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
