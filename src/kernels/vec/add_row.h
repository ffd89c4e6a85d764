/* add_row.h - the residual add y[i] += x[i] (g4v_add_row_fn, kernels.h) written once over the
 * vector vocabulary of vec.h. One add per element, as in the portable kernel: every variant gives
 * the same bits. An ISA file defines G4V_VEC_BITS and ADD_ROW_NAME and includes this header
 * once. */
#ifndef G4V_KERNELS_VEC_ADD_ROW_H
#define G4V_KERNELS_VEC_ADD_ROW_H

#include "vec.h"

void ADD_ROW_NAME(const float *x, float *y, int n) {
    int i = 0;
    for (; i + 2 * V_W <= n; i += 2 * V_W) { /* two vectors per step: loads in flight */
        V_STOREU(y + i, V_ADD(V_LOADU(y + i), V_LOADU(x + i)));
        V_STOREU(y + i + V_W, V_ADD(V_LOADU(y + i + V_W), V_LOADU(x + i + V_W)));
    }
    for (; i + V_W <= n; i += V_W)
        V_STOREU(y + i, V_ADD(V_LOADU(y + i), V_LOADU(x + i)));
    for (; i < n; i++) /* an add alone cannot be fused with anything: the portable bits */
        y[i] += x[i];
}

#endif
