/* par_rows.c - fixed-size row chunks over the pool (see par_rows.h). A chunk holds about 64K
 * elements: big enough that task hand-out costs nothing, small enough to balance two cores. */
#include "par_rows.h"

enum { WORK_PER_TASK = 1 << 16, MAX_TASKS = 1 << 20 };

typedef struct {
    g4v_rows_fn fn;
    void *arg;
    size_t rows, chunk;
} rows_job;

static void run_chunk(void *varg, int task, int worker) {
    (void)worker;
    const rows_job *j = varg;
    size_t r0 = (size_t)task * j->chunk, r1 = r0 + j->chunk;
    if (r1 > j->rows) r1 = j->rows;
    j->fn(j->arg, r0, r1);
}

void g4v_par_rows(g4v_pool *pool, size_t rows, size_t cols_per_row, g4v_rows_fn fn, void *arg) {
    if (rows == 0) return;
    size_t chunk = cols_per_row ? WORK_PER_TASK / cols_per_row : rows;
    if (chunk == 0) chunk = 1;
    if (rows / chunk > MAX_TASKS) chunk = rows / MAX_TASKS + 1;
    size_t tasks = (rows + chunk - 1) / chunk;
    if (tasks == 1 || pool == NULL || g4v_pool_size(pool) == 1) {
        fn(arg, 0, rows);
        return;
    }
    rows_job j = {fn, arg, rows, chunk};
    g4v_pool_run(pool, (int)tasks, run_chunk, &j);
}
