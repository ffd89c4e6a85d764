/* pool.h - a persistent thread pool: the calling thread plus n-1 workers.
 *
 * g4v_pool_run(pool, n_tasks, fn, arg) calls fn(arg, task, worker) for every task in
 * [0, n_tasks) and returns when all are done. Tasks are handed out in order from a shared counter,
 * so which worker runs a task varies; callers that need bit-identical results for any thread count
 * must make each task's output depend only on the task index (partition by output tiles, never
 * split a reduction across tasks). `worker` is in [0, g4v_pool_size()) and may index per-worker
 * scratch. A NULL pool runs every task on the calling thread (worker 0).
 * One g4v_pool is used by one calling thread at a time (each g4v_ctx owns its own).
 */
#ifndef G4V_BASE_POOL_H
#define G4V_BASE_POOL_H

#include "error.h"

typedef struct g4v_pool g4v_pool;
typedef void (*g4v_task_fn)(void *arg, int task, int worker);

/* n_threads <= 0 means one per online CPU. */
int g4v_pool_create(int n_threads, g4v_pool **out, g4v_err *err);
void g4v_pool_destroy(g4v_pool *pool);
int g4v_pool_size(const g4v_pool *pool); /* 1 for NULL */
void g4v_pool_run(g4v_pool *pool, int n_tasks, g4v_task_fn fn, void *arg);
/* g4v_pool_run, then `after` once on every thread that may have run a task (each worker of the
 * pool when it finds no task left, and the calling thread), before the call returns: per-thread
 * state a run's tasks built up (the AMX tile state) is undone where it lives. NULL after: plain
 * g4v_pool_run. */
void g4v_pool_run_then(g4v_pool *pool, int n_tasks, g4v_task_fn fn, void *arg, void (*after)(void));

#endif
