/* pool.c - persistent pthread pool with a generation counter; tasks taken from an atomic index. */
#include "pool.h"

#include "alloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

struct g4v_pool {
    int n;                /* threads including the caller */
    pthread_t *threads;   /* n-1 workers */
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    unsigned long generation; /* bumped for each run */
    int busy;                 /* workers still inside the current run */
    int quit;
    g4v_task_fn fn;
    void *arg;
    void (*after)(void); /* run by each thread once it has drained (g4v_pool_run_then) */
    int n_tasks;
    atomic_int next;
};

typedef struct {
    g4v_pool *pool;
    int worker;
} worker_arg;

static void drain(g4v_pool *p, int worker) {
    for (;;) {
        int t = atomic_fetch_add(&p->next, 1);
        if (t >= p->n_tasks) break;
        p->fn(p->arg, t, worker);
    }
    if (p->after) p->after();
}

static void *worker_main(void *varg) {
    worker_arg *wa = varg;
    g4v_pool *p = wa->pool;
    int worker = wa->worker;
    g4v_free(wa);
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->generation == seen) pthread_cond_wait(&p->start, &p->mu);
        if (p->quit) break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        drain(p, worker);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0) pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int g4v_pool_create(int n_threads, g4v_pool **out, g4v_err *err) {
    *out = NULL;
    if (n_threads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n_threads = c > 0 ? (int)c : 1;
    }
    if (n_threads > 256) return g4v_fail(err, G4V_ERR_ARG, "thread count %d is above 256", n_threads);
    g4v_pool *p = g4v_calloc(1, sizeof *p);
    if (!p) return g4v_fail(err, G4V_ERR_NOMEM, "out of memory creating a thread pool");
    p->n = n_threads;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    if (n_threads > 1) {
        p->threads = g4v_calloc((size_t)n_threads - 1, sizeof *p->threads);
        if (!p->threads) {
            p->n = 1;
            g4v_pool_destroy(p);
            return g4v_fail(err, G4V_ERR_NOMEM, "out of memory creating a thread pool");
        }
    }
    for (int i = 1; i < n_threads; i++) {
        worker_arg *wa = g4v_malloc(sizeof *wa);
        if (wa) {
            wa->pool = p;
            wa->worker = i;
        }
        if (!wa || pthread_create(&p->threads[i - 1], NULL, worker_main, wa) != 0) {
            g4v_free(wa);
            p->n = i; /* workers 1..i-1 exist; destroy joins exactly those */
            g4v_pool_destroy(p);
            return g4v_fail(err, G4V_ERR_NOMEM, "cannot start worker thread %d of %d", i, n_threads);
        }
    }
    *out = p;
    return G4V_OK;
}

void g4v_pool_destroy(g4v_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++) pthread_join(p->threads[i - 1], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    g4v_free(p->threads);
    g4v_free(p);
}

int g4v_pool_size(const g4v_pool *p) { return p ? p->n : 1; }

void g4v_pool_run(g4v_pool *p, int n_tasks, g4v_task_fn fn, void *arg) {
    g4v_pool_run_then(p, n_tasks, fn, arg, NULL);
}

void g4v_pool_run_then(g4v_pool *p, int n_tasks, g4v_task_fn fn, void *arg, void (*after)(void)) {
    if (n_tasks <= 0) return;
    if (!p || p->n == 1 || n_tasks == 1) {
        for (int t = 0; t < n_tasks; t++) fn(arg, t, 0);
        if (after) after();
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->after = after;
    p->n_tasks = n_tasks;
    atomic_store(&p->next, 0);
    p->busy = p->n - 1;
    p->generation++;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    drain(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
