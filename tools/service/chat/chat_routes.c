/* chat_routes.c - the chat wing's descriptor (core/core.h, svc_wing), running with --lm only: on
 * open it starts the slots (chat_slots.c) and adds its rows, POST /v1/chat/completions and GET
 * /v1/models, to the core's route table; without --lm the core answers its paths 404 with the
 * hint below. A chat request's body is collected by the core like an encode request's
 * (--max-body-bytes), parsed into a chat job (chat_request.c) once complete, and handed to the
 * core's queue as a job of the kind "chat"; when libmicrohttpd completes the request, a job still
 * generating is told that its client is gone. */
#include "chat/chat_wing.h"
#include "frontend.h"
#ifdef G4V_HAVE_LLAMA
#include "chat_llama_probe.h" /* chat/: only with libllama */
#endif

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static enum MHD_Result chat_begin(request *q, struct MHD_Connection *c) {
    server *s = q->s;
    chat_fail f;
    long long n;
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && !fe_parse_int(cl, 0, (1ll << 62), &n) && (unsigned long long)n > s->a.max_body) {
        chat_fail_set(&f, MHD_HTTP_CONTENT_TOO_LARGE, "invalid_request_error", "body_too_large",
                      "body of %lld bytes is above this server's limit of %llu bytes "
                      "(--max-body-bytes)",
                      n, s->a.max_body);
        return chat_answer_error(q, &f);
    }
    return MHD_YES; /* the body follows (collected by the core) */
}

static enum MHD_Result finish(request *q, int responses) {
    server *s = q->s;
    chat_wing *cw = q->ctx;
    chat_fail f;
    if (q->too_big) {
        chat_fail_set(&f, MHD_HTTP_CONTENT_TOO_LARGE, "invalid_request_error", "body_too_large",
                      "body is above this server's limit of %llu bytes (--max-body-bytes)",
                      s->a.max_body);
        return chat_answer_error(q, &f);
    }
    char *echo = NULL, *body = NULL;
    if (responses) { /* the Responses API's body as the chat request it asks for */
        body = chat_responses_translate(q->body ? (const char *)q->body : "", q->len, &echo, &f);
        free(q->body);
        q->body = NULL;
        q->len = q->cap = 0;
        if (!body) return chat_answer_error(q, &f);
    }
    chat_job *j = body ? chat_request_parse(s, body, strlen(body), &f)
                       : chat_request_parse(s, q->body ? (const char *)q->body : "", q->len, &f);
    free(body);
    free(q->body); /* the images are the job's now */
    q->body = NULL;
    q->len = q->cap = 0;
    if (!j) {
        free(echo);
        return chat_answer_error(q, &f);
    }
    j->responses = responses;
    j->r_echo = echo;
    if (chat_precheck(cw, j, &f)) { /* answered now, not after the queue */
        chat_job_unref(j);
        return chat_answer_error(q, &f);
    }
    j->t0 = q->t0;
    j->conn = q->conn;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    j->fd = ci ? ci->connect_fd : -1;
    return svc_enqueue(q, cw->pool, j);
}

static enum MHD_Result chat_finish(request *q) { return finish(q, 0); }
static enum MHD_Result responses_finish(request *q) { return finish(q, 1); }

/* The request is over: drop its hold on the job (admitted only: q->job). */
static void chat_done(request *q) {
    chat_job *j = q->job;
    if (!j) return;
    q->job = NULL;
    pthread_mutex_lock(&j->mu);
    j->gone = 1; /* a worker still generating stops at its next token */
    j->q = NULL;
    pthread_mutex_unlock(&j->mu);
    chat_job_unref(j);
}

/* The model object of GET /v1/models and GET /v1/models/{id}. */
static cJSON *model_json(server *s) {
    cJSON *m = cJSON_CreateObject();
    if (m) {
        cJSON_AddStringToObject(m, "id", chat_model_id(s));
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", 0);
        cJSON_AddStringToObject(m, "owned_by", "g4v");
        cJSON *g = cJSON_AddObjectToObject(m, "g4v");
        cJSON_AddStringToObject(g, "vision", svc_model_name(s, s->a.model));
        cJSON_AddStringToObject(g, "vision_fingerprint", s->fingerprint);
        cJSON_AddNumberToObject(g, "context", s->a.lm_ctx);
        cJSON_AddNumberToObject(g, "slots", s->a.lm_slots);
        cJSON_AddNumberToObject(g, "default_tokens", s->a.tokens);
    }
    return m;
}

static enum MHD_Result models(request *q, struct MHD_Connection *c) {
    (void)c;
    server *s = q->s;
    cJSON *o = cJSON_CreateObject();
    cJSON *d = o ? cJSON_AddArrayToObject(o, "data") : NULL;
    cJSON *m = model_json(s);
    char *text = NULL;
    if (d && m) {
        cJSON_AddStringToObject(o, "object", "list");
        cJSON_AddItemToArray(d, m);
        m = NULL;
        text = cJSON_PrintUnformatted(o);
    }
    cJSON_Delete(m);
    cJSON_Delete(o);
    return svc_answer(q, MHD_HTTP_OK,
                      text ? svc_buffer_response(text, strlen(text), "application/json") : NULL);
}

/* GET /v1/models/{id}: the one model, by the id /v1/models gives (percent-decoded by
 * libmicrohttpd); any other id is 404 model_not_found, as OpenAI answers it. */
static enum MHD_Result model_one(request *q, struct MHD_Connection *c) {
    (void)c;
    server *s = q->s;
    const char *id = q->url ? q->url + strlen("/v1/models/") : "";
    if (strcmp(id, chat_model_id(s))) {
        chat_fail f;
        chat_fail_set(&f, MHD_HTTP_NOT_FOUND, "invalid_request_error", "model_not_found",
                      "The model '%.200s' does not exist: this server has one, '%s' "
                      "(GET /v1/models)", id, chat_model_id(s));
        f.param = "model";
        return chat_answer_error(q, &f);
    }
    cJSON *m = model_json(s);
    char *text = m ? cJSON_PrintUnformatted(m) : NULL;
    cJSON_Delete(m);
    return svc_answer(q, MHD_HTTP_OK,
                      text ? svc_buffer_response(text, strlen(text), "application/json") : NULL);
}

static const svc_route routes[] = {
    {.path = "/v1/chat/completions",
     .methods = SVC_POST,
     .flags = SVC_BODY,
     .begin = chat_begin,
     .finish = chat_finish,
     .done = chat_done,
     .types = "application/json"},
    {.path = "/v1/responses",
     .methods = SVC_POST,
     .flags = SVC_BODY,
     .begin = chat_begin,
     .finish = responses_finish,
     .done = chat_done,
     .types = "application/json"},
    {.path = "/v1/models", .methods = SVC_GET, .begin = models},
    {.path = "/v1/models/", .methods = SVC_GET, .flags = SVC_PREFIX | SVC_UNLISTED,
     .begin = model_one},
};

static int wanted(const g4v_service_options *o) { return o->lm != NULL; }

static int open_wing(server *s, void **state) {
    chat_wing *cw = calloc(1, sizeof *cw);
    *state = cw;
    if (!cw) return G4V_SERVICE_ERR_INTERNAL;
    cw->s = s;
    int rc = chat_slots_open(cw);
    if (rc) return rc;
    if (svc_routes_add(s, routes, sizeof routes / sizeof routes[0], cw))
        return G4V_SERVICE_ERR_INTERNAL;
    return G4V_SERVICE_OK;
}

static void close_wing(server *s, void *state) {
    (void)s;
    if (!state) return;
    chat_slots_close(state);
    chat_vision_close(state); /* after the slots: their sessions used it */
    free(state);
}

static size_t metrics(server *s, void *state, char *b, size_t cap) {
    return chat_metrics_text(s, state, b, cap);
}

/* GET /v1/info's "text_model": how llama.cpp runs it here (docs/CHAT.md §6) */
static void info(server *s, void *state, void *object) {
    (void)state;
    cJSON *t = cJSON_AddObjectToObject(object, "text_model");
    if (!t) return;
    cJSON_AddNumberToObject(t, "context", s->a.lm_ctx); /* tokens a conversation may fill */
#ifdef G4V_HAVE_LLAMA
    cJSON *extra = chat_llama_probe_json();
    if (extra) cJSON_AddItemToObject(t, "extra_buffers", extra);
#endif
}

const svc_wing svc_chat_wing = {
    .name = "chat",
    .wanted = wanted,
    .open = open_wing,
    .close = close_wing,
    .metrics = metrics,
    .info = info,
    .off_paths = {"/v1/chat/completions", "/v1/responses", "/v1/models", NULL},
    .off_text = "this server has no language model (start g4v serve with --lm LM.gguf; "
                "docs/CHAT_API.md)",
};
