/* service_routes.c - the endpoints: which path and method go where (POST /v1/encode; GET
 * /v1/info, /health, /metrics; 404 and 405 otherwise; 401 first without the API key), the
 * bodies of the GET endpoints, and the life of one request across libmicrohttpd's calls (headers
 * in, body pieces, body complete, resumed with a worker's answer, completed). A new endpoint
 * starts here. */
#include "chat_service.h"
#include "frontend.h"
#include "service_internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

/* GET /v1/info: the model, its fingerprint, budgets and the service's settings. */
static char *info_json(server *s, size_t *len) {
    const g4v_model_info *m = &s->info;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    static const int budgets[] = {G4V_BUDGETS};
    cJSON_AddStringToObject(o, "model", s->a.model);
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
    cJSON *ids = cJSON_AddObjectToObject(o, "token_ids");
    if (ids) {
        cJSON_AddNumberToObject(ids, "boi", m->boi_token_id);
        cJSON_AddNumberToObject(ids, "image", m->image_token_id);
        cJSON_AddNumberToObject(ids, "eoi", m->eoi_token_id);
    }
    cJSON *sv = cJSON_AddObjectToObject(o, "service");
    if (sv) {
        cJSON_AddNumberToObject(sv, "contexts", s->nworkers);
        cJSON_AddNumberToObject(sv, "queue", s->a.queue);
        cJSON_AddNumberToObject(sv, "max_body_bytes", (double)s->a.max_body);
        cJSON_AddNumberToObject(sv, "max_header_bytes", s->a.max_header_bytes);
        cJSON_AddNumberToObject(sv, "max_connections", s->a.max_connections);
        cJSON_AddBoolToObject(sv, "api_key", s->api_key != NULL);
        cJSON_AddNumberToObject(sv, "timeout_seconds", s->a.timeout_s);
        cJSON_AddBoolToObject(sv, "cache", s->cache != NULL);
    }
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!t) return NULL;
    *len = strlen(t);
    return t; /* cJSON allocates with malloc by default: MHD may free() it */
}

/* The request's first call, its headers in: route it. */
static enum MHD_Result route(request *q, struct MHD_Connection *c, const char *url,
                             const char *method) {
    server *s = q->s;
    /* Before anything else, even a 404: without the key nothing about the server is told. */
    if (strcmp(url, "/health") && !svc_auth_allows(s, c)) return svc_auth_refuse(q);
    int is_get = !strcmp(method, MHD_HTTP_METHOD_GET),
        is_post = !strcmp(method, MHD_HTTP_METHOD_POST);
    if (!strcmp(url, "/v1/encode")) {
        q->kind = REQ_ENCODE;
        if (!is_post) {
            q->kind = REQ_OTHER;
            return svc_answer_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, "G4V_ERR_ARG",
                                    "%s /v1/encode: use POST with the image as the body", method);
        }
        return svc_begin_encode(q, c);
    }
    if (s->lm && !strcmp(url, "/v1/chat/completions")) { /* --lm: chat_routes.c */
        if (!is_post)
            return svc_answer_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, "G4V_ERR_ARG",
                                    "%s /v1/chat/completions: use POST", method);
        q->kind = REQ_CHAT;
        return svc_chat_begin(q, c);
    }
    if (s->lm && !strcmp(url, "/v1/models") && is_get) return svc_models(q);
    if (!s->lm && (!strcmp(url, "/v1/chat/completions") || !strcmp(url, "/v1/models")))
        return svc_answer_error(q, MHD_HTTP_NOT_FOUND, "G4V_ERR_ARG",
                                "%s: this server has no language model (start g4v serve with "
                                "--lm LM.gguf; docs/CHAT_API.md)",
                                url);
    int known = !strcmp(url, "/health") || !strcmp(url, "/v1/info") || !strcmp(url, "/metrics");
    if (!known)
        return svc_answer_error(q, MHD_HTTP_NOT_FOUND, "G4V_ERR_ARG",
                                "no such endpoint: %.200s (POST /v1/encode, GET /v1/info, "
                                "/health, /metrics)",
                                url);
    if (!is_get)
        return svc_answer_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, "G4V_ERR_ARG", "%s %s: use GET",
                                method, url);
    size_t len = 0;
    char *body = NULL;
    const char *type = "application/json";
    if (!strcmp(url, "/health")) {
        body = strdup("ok\n");
        len = 3;
        type = "text/plain";
    } else if (!strcmp(url, "/v1/info")) {
        body = info_json(s, &len);
    } else {
        body = svc_metrics_text(s, &len);
        type = "text/plain; version=0.0.4";
    }
    return svc_answer(q, MHD_HTTP_OK, body ? svc_buffer_response(body, len, type) : NULL);
}

enum MHD_Result svc_handle(void *cls, struct MHD_Connection *c, const char *url,
                           const char *method, const char *version, const char *upload,
                           size_t *upload_size, void **con_cls) {
    (void)version;
    server *s = cls;
    request *q = *con_cls;
    if (!q) { /* first call: the headers are in */
        q = calloc(1, sizeof *q);
        if (!q) return MHD_NO;
        q->s = s;
        q->conn = c;
        q->t0 = g4v_now_s();
        *con_cls = q;
        pthread_mutex_lock(&s->mu);
        s->inflight++;
        pthread_mutex_unlock(&s->mu);
        return route(q, c, url, method);
    }
    if (q->kind == REQ_OTHER || q->state == ST_ANSWERED) { /* answered already: drop the rest */
        *upload_size = 0;
        return MHD_YES;
    }
    if (q->state == ST_RECEIVING && *upload_size) {
        enum MHD_Result r = svc_receive(q, upload, *upload_size);
        *upload_size = 0;
        return r;
    }
    if (q->state == ST_RECEIVING)
        return q->kind == REQ_CHAT ? svc_chat_finish(q) : svc_finish_encode(q);
    if (q->state == ST_DONE) {
        struct MHD_Response *resp = q->resp;
        q->resp = NULL;
        return svc_answer(q, q->code, resp);
    }
    return MHD_YES; /* queued: nothing to do until resumed */
}

void svc_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                   enum MHD_RequestTerminationCode toe) {
    (void)c, (void)toe;
    server *s = cls;
    request *q = *con_cls;
    if (!q) return;
    *con_cls = NULL;
    svc_chat_completed(q);
    if (q->resp) MHD_destroy_response(q->resp);
    free(q->body);
    free(q);
    pthread_mutex_lock(&s->mu);
    s->inflight--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}
