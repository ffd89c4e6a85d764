/* service_queue.c - the job queue and the worker pool. A complete encode request is admitted
 * (or answered 429 when --queue requests already wait, 503 while stopping), its connection
 * suspended, and taken by one of K workers, each owning one g4v_ctx: it encodes, builds the
 * response (serve_format.c, with the X-G4V-* headers) and resumes the connection, whose handler
 * then queues the answer. Waiting is bounded here, so a server holds at most K + Q complete
 * requests. */
#include "serve_format.h"
#include "service_internal.h"

#include <stdio.h>
#include <stdlib.h>

enum MHD_Result svc_enqueue(request *q) {
    server *s = q->s;
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        return svc_answer_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "SERVE_STOPPING",
                                "the server is shutting down");
    }
    /* requests that would wait: those queued plus this one, less the idle contexts */
    if (s->queued + 1 - (s->nworkers - s->busy) > s->a.queue) {
        int queued = s->queued, busy = s->busy;
        pthread_mutex_unlock(&s->mu);
        return svc_answer_error(q, MHD_HTTP_TOO_MANY_REQUESTS, "SERVE_BUSY",
                                "all %d contexts are busy and %d requests are waiting "
                                "(--queue %d); retry later",
                                busy, queued, s->a.queue);
    }
    q->state = ST_QUEUED;
    q->next = NULL;
    if (s->tail)
        s->tail->next = q;
    else
        s->head = q;
    s->tail = q;
    s->queued++;
    MHD_suspend_connection(q->conn);
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    return MHD_YES;
}

static void set_result_headers(struct MHD_Response *resp, const g4v_result *r, const char *cache) {
    char v[96];
#define HDR(name, ...)                                                                             \
    do {                                                                                           \
        snprintf(v, sizeof v, __VA_ARGS__);                                                        \
        MHD_add_response_header(resp, name, v);                                                    \
    } while (0)
    HDR("X-G4V-Tokens", "%d", r->n_tokens);
    HDR("X-G4V-Dim", "%d", r->dim);
    HDR("X-G4V-Grid", "%dx%d", r->grid_w, r->grid_h);
    HDR("X-G4V-Original-Size", "%dx%d", r->src_width, r->src_height);
    HDR("X-G4V-Target-Size", "%dx%d", r->width, r->height);
    HDR("X-G4V-Budget", "%d", r->budget);
    serve_prompt_compact(r, v, sizeof v);
    MHD_add_response_header(resp, "X-G4V-Prompt-Ids", v);
    MHD_add_response_header(resp, "X-G4V-Cache", cache);
    HDR("X-G4V-Encode-Seconds", "%.6f", r->seconds);
#undef HDR
}

static void run_job(server *s, g4v_ctx *ctx, request *q) {
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.budget = q->budget;
    eo.apply_exif = q->exif;
    eo.resize = q->resize;
    eo.bf16 = q->bf16;
    g4v_result r;
    int st = g4v_encode_memory(ctx, q->body, q->len, &eo, &r);
    if (st) {
        q->code = svc_http_code_for(st);
        q->resp = svc_error_response(g4v_ctx_error(ctx), g4v_status_name(st));
        return;
    }
    const char *cache = !s->cache ? "off" : g4v_ctx_cache_hit(ctx) ? "hit" : "miss";
    size_t len = 0;
    char *body = serve_format_body((serve_format)q->fmt, &r, q->bf16, cache, s->fingerprint, &len);
    q->resp = body ? svc_buffer_response(body, len, serve_format_mime((serve_format)q->fmt)) : NULL;
    if (!q->resp) {
        q->code = MHD_HTTP_SERVICE_UNAVAILABLE;
        q->resp = svc_error_response("out of memory building the response", "G4V_ERR_NOMEM");
        return;
    }
    set_result_headers(q->resp, &r, cache);
    q->code = MHD_HTTP_OK;
    pthread_mutex_lock(&s->mu);
    s->encodes++;
    pthread_mutex_unlock(&s->mu);
}

typedef struct worker_arg {
    server *s;
    g4v_ctx *ctx;
} worker_arg;

static void *worker_main(void *p) {
    worker_arg *w = p;
    server *s = w->s;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->head && !s->workers_exit)
            pthread_cond_wait(&s->work, &s->mu);
        if (!s->head) { /* workers_exit and nothing left */
            pthread_mutex_unlock(&s->mu);
            break;
        }
        request *q = s->head;
        s->head = q->next;
        if (!s->head) s->tail = NULL;
        s->queued--;
        s->busy++;
        pthread_mutex_unlock(&s->mu);
        run_job(s, w->ctx, q);
        pthread_mutex_lock(&s->mu);
        s->busy--;
        q->state = ST_DONE;
        pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->mu);
        MHD_resume_connection(q->conn); /* MHD calls the handler again: it queues q->resp */
    }
    free(w);
    return NULL;
}

int svc_worker_start(server *s, int i) {
    worker_arg *w = malloc(sizeof *w);
    if (!w) return -1;
    *w = (worker_arg){s, s->ctx[i]};
    if (pthread_create(&s->workers[i], NULL, worker_main, w)) {
        free(w);
        fprintf(stderr, "g4v serve: cannot start worker %d\n", i);
        return -1;
    }
    s->nworkers++;
    return 0;
}

void svc_workers_stop(server *s) {
    pthread_mutex_lock(&s->mu);
    s->workers_exit = 1;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nworkers; i++)
        pthread_join(s->workers[i], NULL);
}
