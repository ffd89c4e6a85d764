/* encode_wing.c - the encode wing's descriptor (core/core.h, svc_wing): on open it starts the
 * job kind "encode" (--contexts workers, --queue waiting) and adds its rows to the route table,
 * POST /v1/encode and GET /v1/info; it prints its part of GET /metrics (the encode latency
 * histogram, the queue, the contexts, the feature cache: names that never change) and of the
 * "listening on" line. */
#include "encode/encode_wing.h"
#include "frontend.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* GET /v1/info: the model, its fingerprint, budgets and the service's settings. */
static char *info_json(server *s, const encode_wing *ew, size_t *len) {
    const g4v_model_info *m = &s->info;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    static const int budgets[] = {G4V_BUDGETS};
    cJSON_AddStringToObject(o, "model", svc_model_name(s, s->a.model));
    cJSON_AddStringToObject(o, "variant", m->variant);
    cJSON_AddStringToObject(o, "kind", m->kind); /* "tower" or "unified" */
    cJSON_AddStringToObject(o, "fingerprint", s->fingerprint);
    cJSON_AddStringToObject(o, "mode", g4v_math_mode_name(m->math));
    cJSON_AddStringToObject(o, "version", g4v_version());
    cJSON_AddNumberToObject(o, "dim", m->dim);
    cJSON_AddNumberToObject(o, "num_layers", m->num_layers);
    cJSON_AddNumberToObject(o, "hidden_size", m->hidden_size);
    cJSON_AddNumberToObject(o, "param_count", (double)m->param_count);
    cJSON_AddItemToObject(o, "budgets",
                          cJSON_CreateIntArray(budgets, sizeof budgets / sizeof budgets[0]));
    cJSON_AddNumberToObject(o, "default_budget", m->default_budget);
    cJSON_AddBoolToObject(o, "apply_exif", m->apply_exif);
    cJSON_AddStringToObject(o, "resize",
                            m->resize == G4V_RESIZE_TORCHVISION ? "torchvision" : "pillow");
    /* packed at load (the default here) or read in the checkpoint (--in-place-weights) */
    cJSON_AddStringToObject(o, "weights", m->weights_in_place ? "in place" : "packed");
    /* the CPU side: the BF16 kernel rule and whether AMX could be used, and why not */
    cJSON_AddStringToObject(o, "kernel_rule", m->kernel_rule);
    fe_info_amx_json(o, m);
    /* which layers run as PRECISE in this mode (docs/NUMERICS.md §6.5) */
    fe_info_sharpness_json(o, m);
    cJSON *ids = cJSON_AddObjectToObject(o, "token_ids");
    if (ids) {
        cJSON_AddNumberToObject(ids, "boi", m->boi_token_id);
        cJSON_AddNumberToObject(ids, "image", m->image_token_id);
        cJSON_AddNumberToObject(ids, "eoi", m->eoi_token_id);
    }
    cJSON *sv = cJSON_AddObjectToObject(o, "service");
    if (sv) {
        cJSON_AddNumberToObject(sv, "contexts", ew->pool->n);
        cJSON_AddNumberToObject(sv, "queue", s->a.queue);
        cJSON_AddNumberToObject(sv, "max_body_bytes", (double)s->a.max_body);
        cJSON_AddNumberToObject(sv, "max_images", s->a.max_images); /* per chat request */
        cJSON_AddNumberToObject(sv, "max_header_bytes", s->a.max_header_bytes);
        cJSON_AddNumberToObject(sv, "max_connections", s->a.max_connections);
        cJSON_AddBoolToObject(sv, "api_key", s->api_key != NULL);
        cJSON_AddNumberToObject(sv, "timeout_seconds", s->a.timeout_s);
        cJSON_AddBoolToObject(sv, "cache", s->cache != NULL);
    }
    for (int w = 0; w < s->nwings; w++) /* the other wings' parts (the text model's) */
        if (s->wings[w].w->info) s->wings[w].w->info(s, s->wings[w].state, o);
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!t) return NULL;
    *len = strlen(t);
    return t; /* cJSON allocates with malloc by default: MHD may free() it */
}

static enum MHD_Result info(request *q, struct MHD_Connection *c) {
    (void)c;
    size_t len = 0;
    char *body = info_json(q->s, q->ctx, &len);
    return svc_answer(q, MHD_HTTP_OK,
                      body ? svc_buffer_response(body, len, "application/json") : NULL);
}

static const svc_route routes[] = {
    {.path = "/v1/encode",
     .methods = SVC_POST,
     .flags = SVC_BODY | SVC_TIMED,
     .begin = encode_begin,
     .finish = encode_finish,
     .done = encode_done,
     .usage = "with the image as the body",
     .types = "image/*, application/octet-stream"},
    {.path = "/v1/info", .methods = SVC_GET, .begin = info},
};

static int open_wing(server *s, void **state) {
    const g4v_service_options *a = &s->a;
    encode_wing *ew = calloc(1, sizeof *ew);
    *state = ew;
    if (!ew) return G4V_SERVICE_ERR_INTERNAL;
    ew->s = s;
    pthread_cond_init(&ew->fed, NULL);
    ew->threads = svc_threads_each(a->threads, a->contexts);
    int rc = svc_pool_start(s, &encode_kind, ew, a->contexts, a->queue, a->batch, &ew->pool);
    if (rc) return rc;
    if (svc_routes_add(s, routes, sizeof routes / sizeof routes[0], ew))
        return G4V_SERVICE_ERR_INTERNAL;
    return G4V_SERVICE_OK;
}

static void close_wing(server *s, void *state) {
    (void)s;
    encode_wing *ew = state;
    if (ew) pthread_cond_destroy(&ew->fed);
    free(ew);
}

encode_wing *encode_wing_of(server *s) {
    for (int w = 0; w < s->nwings; w++)
        if (s->wings[w].w == &svc_encode_wing) return s->wings[w].state;
    return NULL;
}

static size_t metrics(server *s, void *state, char *b, size_t cap) {
    encode_wing *ew = state;
    svc_pool *p = ew->pool;
    size_t n = 0;
    g4v_cache_stats cs;
    g4v_cache_get_stats(s->cache, &cs, NULL, 0);
    pthread_mutex_lock(&s->mu);
    n += svc_hist_text(&s->latency, "g4v_encode_request_seconds",
                       "Time from the request's arrival to its answer (POST /v1/encode).", b + n,
                       n < cap ? cap - n : 0);
    n = svc_metric(b, cap, n, "g4v_queue_depth", "gauge",
                   "Complete encode requests waiting for a context.", (double)p->queued);
    n = svc_metric(b, cap, n, "g4v_queue_capacity", "gauge", "Waiting requests allowed before 429.",
                   (double)p->limit);
    n = svc_metric(b, cap, n, "g4v_encodes_in_progress", "gauge", "Contexts encoding now.",
                   (double)p->busy);
    n = svc_metric(b, cap, n, "g4v_contexts", "gauge", "Encode contexts.", (double)p->n);
    n = svc_metric(b, cap, n, "g4v_requests_in_flight", "gauge",
                   "HTTP requests begun and not yet completed.", (double)s->inflight);
    n = svc_metric(b, cap, n, "g4v_encodes_total", "counter",
                   "Images encoded or served from the cache.", (double)ew->encodes);
    n = svc_metric(b, cap, n, "g4v_encode_batched_total", "counter",
                   "Encode requests taken by a context together with others (--batch).",
                   (double)ew->batched);
    pthread_mutex_unlock(&s->mu);
    n = svc_metric(b, cap, n, "g4v_cache_hits_total", "counter",
                   "Encode requests served from the feature cache.", (double)cs.hits);
    n = svc_metric(b, cap, n, "g4v_cache_misses_total", "counter",
                   "Cache lookups that found no valid entry.", (double)cs.misses);
    n = svc_metric(b, cap, n, "g4v_cache_corrupt_total", "counter",
                   "Damaged cache entries found (recomputed, never served).", (double)cs.corrupt);
    n = svc_metric(b, cap, n, "g4v_cache_evictions_total", "counter",
                   "Cache entries removed to stay under the size bound.", (double)cs.evictions);
    n = svc_metric(b, cap, n, "g4v_cache_errors_total", "counter", "Failed cache writes or scans.",
                   (double)cs.errors);
    return n;
}

static void summary(server *s, void *state, char *b, size_t cap) {
    const encode_wing *ew = state;
    snprintf(b, cap, "%d contexts x %d threads, queue %d", ew->pool->n, ew->threads, s->a.queue);
}

const svc_wing svc_encode_wing = {
    .name = "encode",
    .open = open_wing,
    .close = close_wing,
    .metrics = metrics,
    .summary = summary,
};
