/* response.c - writing answers through libmicrohttpd: a body as a response, the JSON
 * error body (OpenAI's {"error": {"message", "type", "param", "code"}}, always UTF-8, the one
 * form of every refusal of every route: docs/SERVICE.md "Errors"), the one place an answer is queued (with
 * Retry-After where it applies, and counted for /metrics), and the HTTP status for a library
 * failure. Every answer of the service goes through svc_answer. */
#include "frontend.h"
#include "core/core.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct MHD_Response *svc_buffer_response(char *body, size_t len, const char *type) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    return r;
}

const char *svc_error_type(int http) {
    switch (http) {
    case 401:
        return "authentication_error";
    case 403:
        return "permission_error";
    case 404:
        return "not_found_error";
    case 429:
        return "rate_limit_error";
    default:
        return http >= 500 ? "server_error" : "invalid_request_error";
    }
}

/* {"error": {"message": msg, "type": (of the status), "param": param or null, "code": code}}.
 * msg may quote what the client sent (a path, a parameter): bytes that are not UTF-8 become '?'
 * in the printed text, so that the answer stays JSON (cJSON copies bytes as they are; a
 * structural character is ASCII, never replaced). */
struct MHD_Response *svc_error_body(int http, const char *msg, const char *code,
                                    const char *param) {
    cJSON *o = cJSON_CreateObject();
    cJSON *e = o ? cJSON_AddObjectToObject(o, "error") : NULL;
    char *text = NULL;
    if (e && cJSON_AddStringToObject(e, "message", msg) &&
        cJSON_AddStringToObject(e, "type", svc_error_type(http)) &&
        (param ? cJSON_AddStringToObject(e, "param", param) : cJSON_AddNullToObject(e, "param")) &&
        cJSON_AddStringToObject(e, "code", code))
        text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return NULL;
    fe_utf8_sanitize(text);
    size_t n = strlen(text);
    char *body = malloc(n + 2);
    if (body) {
        memcpy(body, text, n);
        body[n] = '\n';
        body[n + 1] = '\0';
    }
    cJSON_free(text);
    return body ? svc_buffer_response(body, n + 1, "application/json") : NULL;
}

struct MHD_Response *svc_error_response(int http, const char *msg, const char *status) {
    return svc_error_body(http, msg, status, NULL);
}

/* Answers now (the request's first or last call): queues resp (or a bare 500 if it is NULL). */
enum MHD_Result svc_answer(request *q, int code, struct MHD_Response *resp) {
    if (!resp) {
        code = MHD_HTTP_INTERNAL_SERVER_ERROR;
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!resp) return MHD_NO;
    }
    if (code == MHD_HTTP_TOO_MANY_REQUESTS || code == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(resp, "Retry-After", "1");
    if (q->cors) { /* an allowed origin's page may read the answer (core/doors.c) */
        MHD_add_response_header(resp, "Access-Control-Allow-Origin", q->cors);
        MHD_add_response_header(resp, "Access-Control-Expose-Headers", "*");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Origin");
    }
    enum MHD_Result r = MHD_queue_response(q->conn, (unsigned)code, resp);
    MHD_destroy_response(resp);
    q->state = ST_ANSWERED; /* whatever MHD still delivers of the body is dropped */
    svc_record(q->s, code, fe_now_s() - q->t0, q->route && (q->route->flags & SVC_TIMED));
    return r;
}

enum MHD_Result svc_answer_error(request *q, int code, const char *status, const char *fmt,
                                 ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return svc_answer(q, code, svc_error_response(code, msg, status));
}

int svc_http_code_for(int st) {
    switch (st) {
    case G4V_ERR_ARG:
        return MHD_HTTP_BAD_REQUEST;
    case G4V_ERR_IMAGE:
        return MHD_HTTP_UNPROCESSABLE_CONTENT;
    case G4V_ERR_UNSUPPORTED:
        return MHD_HTTP_UNSUPPORTED_MEDIA_TYPE;
    case G4V_ERR_LIMIT:
        return MHD_HTTP_CONTENT_TOO_LARGE;
    case G4V_ERR_NOMEM:
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    default:
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
}
