/* service_internal.h - what the files of the service share: the server, one request, and what
 * each concern offers the others (docs/SERVICE.md, "Where the code lives"). The queue and the
 * counters live in one struct under one mutex because a request's admission, its answer and the
 * metrics read them together. The front ends see service.h only.
 *
 * How a request flows: libmicrohttpd's threads (--http-threads) parse HTTP and call
 * svc_handle (service_routes.c) for it, which routes it by path and method. An encode request's
 * parameters are checked as soon as its headers are in (service_request.c), its body collected
 * (at most --max-body-bytes: a larger Content-Length is answered 413 before the body is read),
 * and, complete, it becomes a job (service_queue.c): if --queue jobs are already waiting it is
 * answered 429 at once; otherwise its connection is suspended and one of K workers, each owning
 * one g4v_ctx, encodes it, builds the response (serve_format.c, service_response.c) and resumes
 * the connection. So a context is only ever held by a complete request: a client that sends half
 * a request and stalls holds a connection and its buffer until --timeout closes it, never a
 * context. Every answer is counted for /metrics (service_metrics.c).
 */
#ifndef G4V_SERVICE_INTERNAL_H
#define G4V_SERVICE_INTERNAL_H

#include "g4v.h"
#include "service.h"
#include "service_auth.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* "70, 140, 280, 560, 1120" for messages: the budget list from g4v.h, spelled once. */
#define SVC_STR_(...) #__VA_ARGS__
#define SVC_STR(...) SVC_STR_(__VA_ARGS__)
#define SVC_BUDGETS SVC_STR(G4V_BUDGETS)

/* Sizes of the metrics' tables (service_metrics.c): the status codes counted one by one (any
 * other counts as "other") and the latency histogram's buckets (and +Inf). */
#define SVC_NCODES 13
#define SVC_NBUCKETS 15

typedef struct request request;

typedef struct g4v_service server;
struct g4v_service {
    g4v_service_options a;
    g4v_model *model;
    g4v_cache *cache;
    g4v_ctx **ctx;
    pthread_t *workers;
    int nworkers, threads; /* contexts running, compute threads each */
    char fingerprint[G4V_FINGERPRINT_HEX];
    g4v_model_info info;
    struct MHD_Daemon *daemon;
    unsigned char *api_key; /* SVC_KEY_MAX bytes, zero-padded; NULL: no key (service_auth.c) */
    size_t api_key_len;

    pthread_mutex_t mu; /* everything below */
    pthread_cond_t work, idle;
    request *head, *tail;
    int queued, busy, stopping, workers_exit;
    long inflight; /* requests begun and not yet completed */
    uint64_t by_code[SVC_NCODES + 1];
    uint64_t hist[SVC_NBUCKETS + 1];
    double lat_sum;
    uint64_t lat_count, encodes, hits, misses;
    struct lm_pool *lm; /* --lm: the chat endpoint's slots (chat_service.h), or NULL */
    int chat_active;    /* chat requests admitted and not yet completed (SIGTERM waits) */
};

enum { REQ_OTHER, REQ_ENCODE, REQ_CHAT };
enum { ST_RECEIVING, ST_QUEUED, ST_DONE, ST_ANSWERED };

struct request {
    server *s;
    struct MHD_Connection *conn;
    int kind, state, too_big;
    double t0;
    unsigned char *body;
    size_t len, cap;
    int budget, bf16, exif, fmt, resize;
    struct MHD_Response *resp; /* built by a worker */
    int code;
    request *next;
    struct chat_job *chat; /* REQ_CHAT once admitted (chat_service.h) */
};

/* service_metrics.c */
void svc_record(server *s, int code, double seconds, int encode);
char *svc_metrics_text(server *s, size_t *len); /* malloc'ed, NULL when out of memory */

/* service_response.c */
struct MHD_Response *svc_buffer_response(char *body, size_t len, const char *type);
struct MHD_Response *svc_error_response(const char *msg, const char *status);
enum MHD_Result svc_answer(request *q, int code, struct MHD_Response *resp);
enum MHD_Result svc_answer_error(request *q, int code, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int svc_http_code_for(int g4v_status);

/* service_request.c */
enum MHD_Result svc_begin_encode(request *q, struct MHD_Connection *c);
enum MHD_Result svc_receive(request *q, const char *data, size_t n);
enum MHD_Result svc_finish_encode(request *q);

/* service_queue.c */
enum MHD_Result svc_enqueue(request *q);
int svc_worker_start(server *s, int i); /* a worker for s->ctx[i]; -1 (printed) on failure */
void svc_workers_stop(server *s);       /* after the queue is empty */

/* service_routes.c: libmicrohttpd's callbacks, cls being the server */
enum MHD_Result svc_handle(void *cls, struct MHD_Connection *c, const char *url,
                           const char *method, const char *version, const char *upload,
                           size_t *upload_size, void **con_cls);
void svc_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                   enum MHD_RequestTerminationCode toe);

/* service_listen.c: a listening socket on host:port, its URL into where and whether it is a
 * loopback address into *loopback; -1 (printed) on failure. Then libmicrohttpd on it (fd >= 0:
 * epoll and a thread pool, as g4v serve runs) or with no listening socket (fd < 0: poll,
 * connections from g4v_service_add_connection).
 * 0 ok, -1 (printed). */
int svc_listen(const char *host, int port, char *where, size_t cap, int *loopback);
/* 1 if every address host resolves to is a loopback one (or it does not resolve: svc_listen
 * says so), for refusing a reachable --host before the models load. */
int svc_host_is_loopback(const char *host);
int svc_daemon_start(server *s, int fd, const char *where);

#endif
