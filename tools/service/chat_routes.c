/* chat_routes.c - POST /v1/chat/completions and GET /v1/models as libmicrohttpd sees them: the
 * body collected like an encode request's (service_request.c: --max-body-bytes), parsed into a
 * chat job (chat_request.c) once complete, and handed to the language model's slots
 * (lm_slots.c); the OpenAI-style error body {"error": {"message", "type", "code"}}; and the
 * request's end, which tells a job still generating that its client is gone. */
#include "chat_service.h"
#include "frontend.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct MHD_Response *chat_error_response(const chat_fail *f) {
    cJSON *o = cJSON_CreateObject();
    cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
    char *text = NULL;
    if (e && cJSON_AddStringToObject(e, "message", f->msg) &&
        cJSON_AddStringToObject(e, "type", f->type) && cJSON_AddStringToObject(e, "code", f->code))
        text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return NULL;
    fe_utf8_sanitize(text); /* the message may quote the client's bytes */
    return svc_buffer_response(text, strlen(text), "application/json");
}

enum MHD_Result chat_answer_error(request *q, const chat_fail *f) {
    return svc_answer(q, f->http, chat_error_response(f));
}

enum MHD_Result svc_chat_begin(request *q, struct MHD_Connection *c) {
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
    return MHD_YES; /* the body follows (svc_receive) */
}

enum MHD_Result svc_chat_finish(request *q) {
    server *s = q->s;
    chat_fail f;
    if (q->too_big) {
        chat_fail_set(&f, MHD_HTTP_CONTENT_TOO_LARGE, "invalid_request_error", "body_too_large",
                      "body is above this server's limit of %llu bytes (--max-body-bytes)",
                      s->a.max_body);
        return chat_answer_error(q, &f);
    }
    chat_job *j = chat_request_parse(s, q->body ? (const char *)q->body : "", q->len, &f);
    free(q->body); /* the images are the job's now */
    q->body = NULL;
    q->len = q->cap = 0;
    if (!j) return chat_answer_error(q, &f);
    j->t0 = q->t0;
    j->conn = q->conn;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(q->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    j->fd = ci ? ci->connect_fd : -1;
    return svc_lm_enqueue(q, j);
}

enum MHD_Result svc_models(request *q) {
    server *s = q->s;
    cJSON *o = cJSON_CreateObject();
    cJSON *d = o ? cJSON_AddArrayToObject(o, "data") : NULL;
    cJSON *m = cJSON_CreateObject();
    char *text = NULL;
    if (d && m) {
        cJSON_AddStringToObject(o, "object", "list");
        cJSON_AddStringToObject(m, "id", chat_model_id(s));
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", 0);
        cJSON_AddStringToObject(m, "owned_by", "g4v");
        cJSON *g = cJSON_AddObjectToObject(m, "g4v");
        cJSON_AddStringToObject(g, "vision", s->a.model);
        cJSON_AddStringToObject(g, "vision_fingerprint", s->fingerprint);
        cJSON_AddNumberToObject(g, "context", s->a.lm_ctx);
        cJSON_AddNumberToObject(g, "slots", s->a.lm_slots);
        cJSON_AddNumberToObject(g, "default_tokens", s->a.tokens);
        cJSON_AddItemToArray(d, m);
        m = NULL;
        text = cJSON_PrintUnformatted(o);
    }
    cJSON_Delete(m);
    cJSON_Delete(o);
    return svc_answer(q, MHD_HTTP_OK,
                      text ? svc_buffer_response(text, strlen(text), "application/json") : NULL);
}

void svc_chat_completed(request *q) {
    chat_job *j = q->chat;
    if (!j) return;
    q->chat = NULL;
    server *s = q->s;
    pthread_mutex_lock(&j->mu);
    j->gone = 1; /* a worker still generating stops at its next token */
    j->q = NULL;
    pthread_mutex_unlock(&j->mu);
    chat_job_unref(j);
    pthread_mutex_lock(&s->mu);
    s->chat_active--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}
