/* encode_job.c - the job kind "encode" (core/core.h, svc_kind): K workers (--contexts), each
 * owning one g4v_ctx over the server's model and feature cache; a job is a complete POST
 * /v1/encode request, encoded from its body, answered in the format it asked for
 * (serve_format.c) with the X-G4V-* headers, or another wing's medium (a local job, q->local:
 * encode_vision.c). Every encode enters the server's CPU gate. Refused jobs are answered as every encode error is:
 * {"error", "status"} (SERVE_BUSY 429 when --queue requests already wait, SERVE_STOPPING 503). */
#include "encode/encode_wing.h"
#include "encode/serve_format.h"

#include <stdio.h>
#include <string.h>

static int worker_open(void *ctx, int i, void **state) {
    encode_wing *ew = ctx;
    server *s = ew->s;
    char msg[1024];
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = ew->threads;
    g4v_ctx *c = NULL;
    if (g4v_ctx_create(s->model, &co, &c, msg, sizeof msg)) {
        fprintf(stderr, "g4v serve: context %d: %s\n", i, msg);
        return G4V_SERVICE_ERR_INTERNAL;
    }
    g4v_ctx_set_cache(c, s->cache);
    *state = c;
    return 0;
}

static void worker_close(void *ctx, void *state) {
    (void)ctx;
    g4v_ctx_free(state);
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

static void options_of(const encode_params *p, g4v_encode_options *eo) {
    g4v_encode_options_init(eo);
    eo->budget = p->budget;
    eo->apply_exif = p->exif;
    eo->resize = p->resize;
    eo->bf16 = p->bf16;
}

/* q's answer (q->code, q->resp) to its encode: st and msg, else r (cache_hit: r was a hit). */
static void answer(encode_wing *ew, request *q, const encode_params *p, int st, const char *msg,
                   const g4v_result *r, int cache_hit) {
    server *s = ew->s;
    if (st) {
        q->code = svc_http_code_for(st);
        q->resp = svc_error_response(q->code, msg, g4v_status_name(st));
        return;
    }
    const char *cache = !s->cache ? "off" : cache_hit ? "hit" : "miss";
    size_t len = 0;
    char *body = serve_format_body((serve_format)p->fmt, r, p->bf16, cache, s->fingerprint, &len);
    q->resp = body ? svc_buffer_response(body, len, serve_format_mime((serve_format)p->fmt)) : NULL;
    if (!q->resp) {
        q->code = MHD_HTTP_SERVICE_UNAVAILABLE;
        q->resp = svc_error_response(q->code, "out of memory building the response",
                                     "G4V_ERR_NOMEM");
        return;
    }
    set_result_headers(q->resp, r, cache);
    q->code = MHD_HTTP_OK;
    pthread_mutex_lock(&s->mu);
    ew->encodes++;
    pthread_mutex_unlock(&s->mu);
}

static void run(svc_worker *w, request *q, void *job) {
    if (q->local) { /* another wing's medium (encode_vision.c) */
        encode_vision_jobs(w, &q, 1);
        return;
    }
    g4v_ctx *ctx = w->state;
    g4v_encode_options eo;
    options_of(job, &eo);
    g4v_result r;
    int gated = encode_gate_enter(w->p->ctx);
    int st = g4v_encode_memory(ctx, q->body, q->len, &eo, &r);
    encode_gate_leave(w->p->ctx, gated);
    answer(w->p->ctx, q, job, st, g4v_ctx_error(ctx), &r, g4v_ctx_cache_hit(ctx));
    svc_worker_free(w);
    svc_reply(q, q->code, q->resp);
}

static void run_requests(svc_worker *w, request **qs, void **jobs, int n, int free_first);

/* --batch: the requests taken together go through one g4v_encode_batch, whose every entry is
 * what g4v_encode_memory gives on it alone (answers, headers and errors as run's); the other
 * wings' media among them through another (encode_vision.c), after the requests are answered. */
static void run_batch(svc_worker *w, request **all, void **all_jobs, int n_all) {
    request *qs[SVC_MAX_BATCH], *local[SVC_MAX_BATCH];
    void *jobs[SVC_MAX_BATCH];
    int n = 0, n_local = 0;
    for (int i = 0; i < n_all; i++)
        if (all[i]->local) {
            local[n_local++] = all[i];
        } else {
            qs[n] = all[i];
            jobs[n++] = all_jobs[i];
        }
    if (n == 1) {
        run(w, qs[0], jobs[0]);
    } else if (n > 1) {
        run_requests(w, qs, jobs, n, !n_local);
    }
    if (n_local) encode_vision_jobs(w, local, n_local);
}

/* free_first: the worker is free once they are encoded (no local job follows). */
static void run_requests(svc_worker *w, request **qs, void **jobs, int n, int free_first) {
    g4v_ctx *ctx = w->state;
    g4v_encode_options eo[SVC_MAX_BATCH];
    g4v_batch_item it[SVC_MAX_BATCH];
    memset(it, 0, (size_t)n * sizeof *it);
    for (int i = 0; i < n; i++) {
        options_of(jobs[i], &eo[i]);
        it[i].bytes = qs[i]->body ? (const void *)qs[i]->body : ""; /* none: an empty image */
        it[i].size = qs[i]->len;
        it[i].opts = &eo[i];
    }
    encode_wing *ew = w->p->ctx;
    int gated = encode_gate_enter(ew);
    g4v_encode_batch(ctx, it, n);
    encode_gate_leave(ew, gated);
    pthread_mutex_lock(&ew->s->mu);
    ew->batched += (uint64_t)n;
    pthread_mutex_unlock(&ew->s->mu);
    for (int i = 0; i < n; i++)
        answer(w->p->ctx, qs[i], jobs[i], it[i].status, it[i].error, &it[i].result,
               it[i].cache_hit);
    if (free_first) svc_worker_free(w);
    for (int i = 0; i < n; i++) svc_reply(qs[i], qs[i]->code, qs[i]->resp);
}

static enum MHD_Result refuse(request *q, void *job, int code, int busy, int queued, int limit) {
    (void)job; /* the request's data: freed when it completes */
    if (code == MHD_HTTP_SERVICE_UNAVAILABLE)
        return svc_answer_error(q, code, "SERVE_STOPPING", "the server is shutting down");
    return svc_answer_error(q, code, "SERVE_BUSY",
                            "all %d contexts are busy and %d requests are waiting "
                            "(--queue %d); retry later",
                            busy, queued, limit);
}

const svc_kind encode_kind = {
    .name = "encode",
    .worker_name = "worker",
    .worker_open = worker_open,
    .worker_close = worker_close,
    .run = run,
    .run_batch = run_batch,
    .refuse = refuse,
};
