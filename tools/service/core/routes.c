/* routes.c - the one route table and the life of one request across libmicrohttpd's calls:
 * headers in (the doors of doors.c first: Host, Origin and an allowed origin's preflight; then
 * the API key, the row for the path and method, a POST's Content-Type, its begin handler), body
 * pieces collected up to --max-body-bytes, body complete (the row's finish),
 * resumed with a worker's answer, completed (the row's done). The 404 text lists every endpoint
 * the table holds, and a known path with another method gets 405 with the row's methods in
 * Allow: both come from the rows, so a new endpoint is one row and its handler (in a wing's
 * open, or svc_routes_core below for the core's own GET /health and GET /metrics). */
#include "core/core.h"
#include "frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    unsigned bit;
    const char *name;
} methods[] = {{SVC_GET, MHD_HTTP_METHOD_GET}, {SVC_POST, MHD_HTTP_METHOD_POST}};
enum { NMETHODS = sizeof methods / sizeof methods[0] };

static const svc_row *find(const server *s, const char *path) {
    for (int i = 0; i < s->nroutes; i++)
        if (!strcmp(s->routes[i].r.path, path)) return &s->routes[i];
    for (int i = 0; i < s->nroutes; i++) { /* a row for every path under it */
        const svc_row *r = &s->routes[i];
        size_t n = strlen(r->r.path);
        if ((r->r.flags & SVC_PREFIX) && !strncmp(r->r.path, path, n) && path[n]) return r;
    }
    return NULL;
}

static int add_row(server *s, const svc_row *row) {
    if (s->nroutes == SVC_MAX_ROUTES || find(s, row->r.path)) {
        fprintf(stderr, "g4v serve: route %s: %s\n", row->r.path,
                s->nroutes == SVC_MAX_ROUTES ? "the route table is full" : "added twice");
        return -1;
    }
    s->routes[s->nroutes++] = *row;
    return 0;
}

int svc_routes_add(server *s, const svc_route *rows, size_t n, void *ctx) {
    for (size_t i = 0; i < n; i++)
        if (add_row(s, &(svc_row){.r = rows[i], .ctx = ctx})) return -1;
    return 0;
}

int svc_route_add_off(server *s, const char *path, const char *text) {
    return add_row(s, &(svc_row){.r = {.path = path}, .off = text});
}

/* "GET, POST": a row's methods, as the Allow header spells them. */
static void allow_text(unsigned m, char *b, size_t cap) {
    size_t n = 0;
    b[0] = 0;
    for (int i = 0; i < NMETHODS; i++)
        if (m & methods[i].bit)
            n += (size_t)snprintf(b + n, n < cap ? cap - n : 0, "%s%s", n ? ", " : "",
                                  methods[i].name);
}

/* "POST /v1/encode, GET /v1/info, ...": every endpoint this server answers. */
static void endpoints_text(const server *s, char *b, size_t cap) {
    size_t n = 0;
    b[0] = 0;
    for (int i = 0; i < s->nroutes; i++) {
        const svc_row *row = &s->routes[i];
        if (row->off || (row->r.flags & SVC_UNLISTED)) continue;
        char m[32];
        allow_text(row->r.methods, m, sizeof m);
        for (char *c = m; (c = strstr(c, ", "));) /* GET|POST in a list */
            memmove(c + 1, c + 2, strlen(c + 2) + 1), *c = '|';
        n += (size_t)snprintf(b + n, n < cap ? cap - n : 0, "%s%s %s", n ? ", " : "", m,
                              row->r.path);
    }
}

/* An allowed origin's preflight (OPTIONS with Access-Control-Request-Method): which methods and
 * headers its page may use on this path. */
static enum MHD_Result preflight(request *q, const svc_row *row) {
    char allow[32];
    allow_text(row->r.methods, allow, sizeof allow);
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (r) {
        MHD_add_response_header(r, "Access-Control-Allow-Methods", allow);
        MHD_add_response_header(r, "Access-Control-Allow-Headers", "Authorization, Content-Type");
        MHD_add_response_header(r, "Access-Control-Max-Age", "600");
    }
    return svc_answer(q, MHD_HTTP_NO_CONTENT, r);
}

/* The request's first call, its headers in: route it. */
static enum MHD_Result route(request *q, struct MHD_Connection *c, const char *url,
                             const char *method) {
    server *s = q->s;
    const svc_row *row = find(s, url);
    /* The doors first (doors.c): a page of another site learns nothing, not even a 401. */
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (!svc_door_host_ok(&s->a, host))
        return svc_answer_error(q, MHD_HTTP_MISDIRECTED_REQUEST, "SERVE_WRONG_HOST",
                                "this server does not answer for the host name %.100s (it "
                                "answers for its address and localhost; g4v serve "
                                "--allowed-host NAME adds one)",
                                host);
    int allowed;
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    q->cors = svc_door_origin(&s->a, origin, host, &allowed);
    if (!allowed)
        return svc_answer_error(q, MHD_HTTP_FORBIDDEN, "SERVE_WRONG_ORIGIN",
                                "requests from web pages of %.100s are refused (g4v serve "
                                "--allowed-origin ORIGIN allows a site)",
                                origin);
    if (q->cors && row && !row->off && !strcmp(method, MHD_HTTP_METHOD_OPTIONS))
        return preflight(q, row);
    /* Then the key, even before a 404: without it nothing about the server is told. */
    if (!(row && !row->off && (row->r.flags & SVC_OPEN)) && !svc_auth_allows(s, c))
        return svc_auth_refuse(q);
    if (!row) {
        char list[512];
        endpoints_text(s, list, sizeof list);
        return svc_answer_error(q, MHD_HTTP_NOT_FOUND, "G4V_ERR_ARG",
                                "no such endpoint: %.200s (%s)", url, list);
    }
    if (row->off)
        return svc_answer_error(q, MHD_HTTP_NOT_FOUND, "G4V_ERR_ARG", "%s: %s", url, row->off);
    unsigned bit = 0;
    for (int i = 0; i < NMETHODS; i++)
        if (!strcmp(method, methods[i].name)) bit = methods[i].bit;
    if (!(row->r.methods & bit)) {
        char allow[32];
        allow_text(row->r.methods, allow, sizeof allow);
        char msg[512];
        snprintf(msg, sizeof msg, "%s %s: use %s%s%s", method, url, allow,
                 row->r.usage ? " " : "", row->r.usage ? row->r.usage : "");
        struct MHD_Response *r = svc_error_response(MHD_HTTP_METHOD_NOT_ALLOWED, msg, "G4V_ERR_ARG");
        if (r) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
        return svc_answer(q, MHD_HTTP_METHOD_NOT_ALLOWED, r);
    }
    if (bit == SVC_POST) {
        const char *ct =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!svc_door_type_ok(row->r.types, ct)) {
            char msg[512];
            snprintf(msg, sizeof msg, "POST %s takes a body of type %s, not %.100s", url,
                     row->r.types ? row->r.types : "(none)", ct && *ct ? ct : "an untyped one");
            struct MHD_Response *r = svc_error_response(MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, msg,
                                                        "SERVE_WRONG_TYPE");
            /* the body is not read: the connection closes after the answer */
            if (r) MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
            return svc_answer(q, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, r);
        }
    }
    q->route = &row->r;
    q->ctx = row->ctx;
    return row->r.begin(q, c);
}

/* A piece of the body of a SVC_BODY row: kept up to --max-body-bytes, dropped after that (and
 * answered 413 by finish). MHD_NO (drop the connection) only when out of memory. */
static enum MHD_Result receive(request *q, const char *data, size_t n) {
    server *s = q->s;
    if (q->too_big || q->len + n > s->a.max_body) { /* a body without a Content-Length */
        q->too_big = 1;
        return MHD_YES; /* read and dropped; answered 413 at the end */
    }
    if (q->len + n > q->cap) {
        size_t cap = q->cap ? q->cap : 65536;
        while (cap < q->len + n)
            cap *= 2;
        if (cap > s->a.max_body) cap = s->a.max_body;
        unsigned char *b = realloc(q->body, cap);
        if (!b) return MHD_NO; /* out of memory: drop the connection */
        q->body = b;
        q->cap = cap;
    }
    memcpy(q->body + q->len, data, n);
    q->len += n;
    return MHD_YES;
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
        q->t0 = fe_now_s();
        *con_cls = q;
        pthread_mutex_lock(&s->mu);
        s->inflight++;
        pthread_mutex_unlock(&s->mu);
        q->url = url;
        enum MHD_Result r = route(q, c, url, method);
        q->url = NULL;
        return r;
    }
    if (!q->route || !(q->route->flags & SVC_BODY) || q->state == ST_ANSWERED) {
        *upload_size = 0; /* answered already: drop the rest */
        return MHD_YES;
    }
    if (q->state == ST_RECEIVING && *upload_size) {
        enum MHD_Result r = receive(q, upload, *upload_size);
        *upload_size = 0;
        return r;
    }
    if (q->state == ST_RECEIVING) return q->route->finish(q);
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
    if (q->route && q->route->done) q->route->done(q);
    if (q->resp) MHD_destroy_response(q->resp);
    free(q->body);
    pthread_mutex_lock(&s->mu);
    if (q->pool) q->pool->active--;
    s->inflight--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
    free(q);
}

/* ---- the core's own endpoints ---------------------------------------------------------------- */

static enum MHD_Result health(request *q, struct MHD_Connection *c) {
    (void)c;
    char *body = strdup("ok\n");
    return svc_answer(q, MHD_HTTP_OK, body ? svc_buffer_response(body, 3, "text/plain") : NULL);
}

static enum MHD_Result metrics(request *q, struct MHD_Connection *c) {
    (void)c;
    size_t len = 0;
    char *body = svc_metrics_text(q->s, &len);
    return svc_answer(q, MHD_HTTP_OK,
                      body ? svc_buffer_response(body, len, "text/plain; version=0.0.4") : NULL);
}

static const svc_route core_routes[] = {
    {.path = "/health", .methods = SVC_GET, .flags = SVC_OPEN, .begin = health},
    {.path = "/metrics", .methods = SVC_GET, .begin = metrics},
};

int svc_routes_core(server *s) {
    return svc_routes_add(s, core_routes, sizeof core_routes / sizeof core_routes[0], NULL);
}
