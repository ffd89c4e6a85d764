/* par_rows.h - splitting a row loop across the thread pool, for the row-wise kernels.
 * Rows are cut into fixed-size chunks that depend only on the row count, and each chunk touches
 * only its own rows, so results do not depend on the thread count. Internal to src/kernels. */
#ifndef G4V_KERNELS_PAR_ROWS_H
#define G4V_KERNELS_PAR_ROWS_H

#include "base/pool.h"

#include <stddef.h>

typedef void (*g4v_rows_fn)(void *arg, size_t r0, size_t r1);

/* Calls fn(arg, r0, r1) over [0, rows) in chunks of about 64K elements (cols_per_row each). */
void g4v_par_rows(g4v_pool *pool, size_t rows, size_t cols_per_row, g4v_rows_fn fn, void *arg);

#endif
