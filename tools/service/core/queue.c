/* queue.c - the one job queue and worker pool, for every job kind (core.h, svc_kind): a complete
 * request's job is admitted by one rule (503 while stopping; 429 with Retry-After when the kind's
 * limit of waiting jobs is reached, answered in the kind's own format), its connection suspended,
 * and taken by one of the kind's workers, each owning a state the kind opened (a g4v_ctx, a chat
 * session); the worker runs it, replies (svc_reply resumes the connection, whose handler then
 * queues the answer) and is free again. Waiting is bounded here, so a kind holds at most
 * workers + limit complete requests. Another wing's work may join the same FIFO without a
 * request (svc_run_local: the chat slots' images on the encode contexts), not counted against
 * the limit. One wait-and-stop path: svc_pools_busy for the drain and g4v_service_wait_idle,
 * svc_pools_stop once the queues are empty. */
#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* q at the tail of p's FIFO, waiting (under the server's mutex). */
static void fifo_push(svc_pool *p, request *q) {
    q->pool = p;
    q->state = ST_QUEUED;
    q->next = NULL;
    if (p->tail)
        p->tail->next = q;
    else
        p->head = q;
    p->tail = q;
}

enum MHD_Result svc_enqueue(request *q, svc_pool *p, void *job) {
    server *s = q->s;
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        int queued = p->queued, busy = p->busy;
        pthread_mutex_unlock(&s->mu);
        return p->k->refuse(q, job, MHD_HTTP_SERVICE_UNAVAILABLE, busy, queued, p->limit);
    }
    /* jobs that would wait: those queued plus this one, less the idle workers */
    if (p->queued - p->local + 1 - (p->n - p->busy) > p->limit) {
        int queued = p->queued, busy = p->busy;
        p->rejected++;
        pthread_mutex_unlock(&s->mu);
        return p->k->refuse(q, job, MHD_HTTP_TOO_MANY_REQUESTS, busy, queued, p->limit);
    }
    if (p->k->admitted) p->k->admitted(q, job);
    q->job = job;
    fifo_push(p, q);
    p->queued++;
    p->active++;
    MHD_suspend_connection(q->conn);
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&s->mu);
    return MHD_YES;
}

void svc_worker_free(svc_worker *w) {
    if (w->freed) return;
    w->freed = 1;
    server *s = w->p->s;
    pthread_mutex_lock(&s->mu);
    w->p->busy--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}

void svc_reply(request *q, int code, struct MHD_Response *resp) {
    server *s = q->s;
    q->code = code;
    q->resp = resp;
    pthread_mutex_lock(&s->mu);
    q->state = ST_DONE;
    pthread_mutex_unlock(&s->mu);
    MHD_resume_connection(q->conn); /* MHD calls the handler again: it queues q->resp */
}

int svc_run_local(svc_pool *p, request *qs, void **jobs, int n) {
    server *s = p->s;
    pthread_cond_t done;
    pthread_cond_init(&done, NULL);
    pthread_mutex_lock(&s->mu);
    if (p->exit) {
        pthread_mutex_unlock(&s->mu);
        pthread_cond_destroy(&done);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        request *q = &qs[i];
        q->s = s;
        q->job = jobs[i];
        q->local = &done;
        fifo_push(p, q);
    }
    p->queued += n;
    p->local += n;
    pthread_cond_broadcast(&p->work);
    for (int i = 0; i < n; i++)
        while (qs[i].state != ST_DONE)
            pthread_cond_wait(&done, &s->mu);
    pthread_mutex_unlock(&s->mu);
    pthread_cond_destroy(&done);
    return 0;
}

void svc_local_done(request *q) {
    server *s = q->s;
    pthread_mutex_lock(&s->mu);
    q->state = ST_DONE;
    pthread_cond_broadcast(q->local);
    pthread_mutex_unlock(&s->mu);
}

typedef struct worker_arg {
    svc_pool *p;
    void *state;
} worker_arg;

static void *worker_main(void *arg) {
    worker_arg a = *(worker_arg *)arg;
    free(arg);
    svc_pool *p = a.p;
    server *s = p->s;
    int most = p->k->run_batch && p->batch > 1 ? p->batch : 1;
    if (most > SVC_MAX_BATCH) most = SVC_MAX_BATCH;
    request *qs[SVC_MAX_BATCH];
    void *jobs[SVC_MAX_BATCH];
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!p->head && !p->exit)
            pthread_cond_wait(&p->work, &s->mu);
        if (!p->head) { /* exit, and nothing left */
            pthread_mutex_unlock(&s->mu);
            break;
        }
        int n = 0; /* whatever waits, up to the batch: a lone job is never held back */
        while (p->head && n < most) {
            request *q = p->head;
            p->head = q->next;
            if (q->local) p->local--;
            qs[n] = q;
            jobs[n++] = q->job;
        }
        if (!p->head) p->tail = NULL;
        p->queued -= n;
        p->busy++;
        pthread_mutex_unlock(&s->mu);
        svc_worker w = {p, a.state, 0};
        if (n == 1)
            p->k->run(&w, qs[0], jobs[0]); /* q may be completed and gone once it replied */
        else
            p->k->run_batch(&w, qs, jobs, n);
        svc_worker_free(&w);
        for (int i = 0; p->k->release && i < n; i++) p->k->release(jobs[i]);
    }
    return NULL;
}

int svc_threads_each(int requested, int workers) {
    if (requested > 0) return requested;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return workers > 0 && cpus > workers ? (int)(cpus / workers) : 1;
}

int svc_pool_start(server *s, const svc_kind *k, void *ctx, int workers, int limit, int batch,
                   svc_pool **out) {
    *out = NULL;
    if (s->npools == SVC_MAX_POOLS) return G4V_SERVICE_ERR_INTERNAL;
    svc_pool *p = calloc(1, sizeof *p);
    if (!p) return G4V_SERVICE_ERR_INTERNAL;
    p->k = k;
    p->ctx = ctx;
    p->s = s;
    p->limit = limit;
    p->batch = batch;
    pthread_cond_init(&p->work, NULL);
    s->pools[s->npools++] = p; /* stopped by svc_pools_stop, however far it got */
    *out = p;
    p->state = calloc((size_t)workers, sizeof *p->state);
    p->th = calloc((size_t)workers, sizeof *p->th);
    if (!p->state || !p->th) return G4V_SERVICE_ERR_INTERNAL;
    p->size = workers;
    for (int i = 0; i < workers; i++) {
        int rc = k->worker_open(ctx, i, &p->state[i]);
        if (rc) return rc;
        worker_arg *a = malloc(sizeof *a);
        if (!a) return G4V_SERVICE_ERR_INTERNAL;
        *a = (worker_arg){p, p->state[i]};
        if (pthread_create(&p->th[i], NULL, worker_main, a)) {
            free(a);
            fprintf(stderr, "g4v serve: cannot start %s %d\n", k->worker_name, i);
            return G4V_SERVICE_ERR_INTERNAL;
        }
        p->n++;
    }
    return G4V_SERVICE_OK;
}

int svc_pools_busy(const server *s) {
    for (int i = 0; i < s->npools; i++) {
        const svc_pool *p = s->pools[i];
        if (p->queued || p->busy || (p->k->hold_until_completed && p->active)) return 1;
    }
    return 0;
}

void svc_pools_stop(server *s) {
    for (int i = s->npools - 1; i >= 0; i--) {
        svc_pool *p = s->pools[i];
        pthread_mutex_lock(&s->mu);
        p->exit = 1;
        pthread_cond_broadcast(&p->work);
        pthread_mutex_unlock(&s->mu);
        for (int t = 0; t < p->n; t++)
            pthread_join(p->th[t], NULL);
        for (int t = 0; p->state && t < p->size; t++)
            if (p->state[t] && p->k->worker_close) p->k->worker_close(p->ctx, p->state[t]);
        free(p->state);
        free(p->th);
        pthread_cond_destroy(&p->work);
        free(p);
    }
    s->npools = 0;
}
