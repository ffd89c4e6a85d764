/* rope_table.c - the cos/sin tables of Gemma 4's 2D rotary position embedding
 * (docs/NUMERICS.md §4.5), shared by every ISA's rope_row kernel (portable/rope2d.c, the ISA
 * folders). A head of d channels is two halves of c = d/2: the first rotates by the patch
 * column, the second by the patch row, both with inv_freq[j] = 1/theta^(2j/c), j < c/2. Angles
 * are f32 (pos * inv_freq, as HF computes them); cos/sin of that f32 angle are taken in double
 * and rounded once. Tables are indexed by the coordinate value, so one small table serves both
 * axes. */
#include "kernels.h"

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
