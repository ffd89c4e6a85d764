/* core.h - the service's core as its wings see it (docs/SERVICE.md, "Where the code lives"): the
 * server, one request, the route table, the job queue and its worker pools, answers, metrics,
 * and the wing descriptor through which the encode wing (tools/service/encode) and the chat wing
 * (tools/service/chat) plug in. The core calls a wing only through the function pointers it
 * registered (routes, job kinds, wing hooks); a wing calls the core directly. The front ends see
 * service.h only.
 *
 * How a request flows: libmicrohttpd's threads (--http-threads) call svc_handle (routes.c) with
 * the headers in; the doors are checked first (doors.c: the Host, 421; the Origin, 403; an
 * allowed origin's preflight, 204), then the API key (every path but the rows marked SVC_OPEN),
 * then the route table gives the row for the path and method (404 or 405 from the table
 * otherwise), a POST's Content-Type is checked against the row's (415), and the row's begin
 * handler runs. A row with SVC_BODY collects the body (at most
 * --max-body-bytes; the handler refuses a larger Content-Length before the body is read) and,
 * complete, its finish handler usually hands a job to its kind's pool (queue.c): answered 429
 * at once when the kind's limit of waiting jobs is reached, 503 while stopping; otherwise the
 * connection is suspended and one of the kind's workers, each owning a state the kind provides
 * (a g4v_ctx, a chat session), runs the job and replies, which resumes the connection. So a
 * worker is only ever held by a complete request: a client that sends half a request and stalls
 * holds a connection and its buffer until --timeout closes it, never a worker. Every answer goes
 * through svc_answer (response.c) and is counted for /metrics (metrics.c).
 *
 * One mutex, the server's, guards the queues, the pools' counters and every metric, because an
 * admission, an answer and GET /metrics read them together.
 */
#ifndef G4V_SERVICE_CORE_H
#define G4V_SERVICE_CORE_H

#include "core/auth.h"
#include "cpu_gate.h" /* common/: the CPU budget */
#include "g4v.h"
#include "service.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* "70, 140, 280, 560, 1120" for messages: the budget list from g4v.h, spelled once. */
#define SVC_STR_(...) #__VA_ARGS__
#define SVC_STR(...) SVC_STR_(__VA_ARGS__)
#define SVC_BUDGETS SVC_STR(G4V_BUDGETS)

/* Sizes of the metrics' tables (metrics.c): the status codes counted one by one (any other
 * counts as "other") and a latency histogram's buckets (and +Inf). */
#define SVC_NCODES 15
#define SVC_NBUCKETS 15
/* Sizes of the server's tables: routes, job kinds (pools), wings. */
#define SVC_MAX_ROUTES 32
#define SVC_MAX_POOLS 4
#define SVC_MAX_WINGS 4

typedef struct g4v_service server;
typedef struct request request;
typedef struct svc_pool svc_pool;
typedef struct svc_worker svc_worker;

/* ---- a latency histogram (metrics.c): the encode latency, the chat time to first token ------- */

typedef struct svc_hist {
    uint64_t n[SVC_NBUCKETS + 1]; /* by bucket, the last one +Inf */
    double sum;
    uint64_t count;
} svc_hist;
/* Counts one observation; the caller holds the server's mutex. */
void svc_hist_add(svc_hist *h, double seconds);
/* Appends the histogram's HELP, TYPE, _bucket, _sum and _count lines at b (cap bytes); returns
 * the length it needed. The caller holds the server's mutex. */
size_t svc_hist_text(const svc_hist *h, const char *name, const char *help, char *b, size_t cap);

/* ---- the route table (routes.c) -------------------------------------------------------------- */

enum { SVC_GET = 1, SVC_POST = 2 };
enum {
    SVC_OPEN = 1,  /* answered without the API key (/health) */
    SVC_BODY = 2,  /* a body follows: collected, then finish is called */
    SVC_TIMED = 4, /* its answers go into the server's request latency histogram */
    SVC_UNLISTED = 8, /* left out of the 404's list of endpoints (the chat page's files) */
    SVC_PREFIX = 16,  /* path ends in '/': answers every longer path under it (GET
                         /v1/models/{id}); an exact row wins */
};

/* One row: a path, the methods it answers, and its handlers. Adding an endpoint = one row (in
 * a wing's table, or the core's) + its handler. The 404 text and the 405 answer with its Allow
 * header come from the rows. */
typedef struct svc_route {
    const char *path;
    unsigned methods; /* SVC_GET | SVC_POST */
    unsigned flags;   /* SVC_OPEN | SVC_BODY | SVC_TIMED | SVC_UNLISTED */
    /* The request's first call, the headers in: answer it, or (SVC_BODY) return MHD_YES for
     * the body to follow. q->ctx is the context the row was registered with. */
    enum MHD_Result (*begin)(request *q, struct MHD_Connection *c);
    /* SVC_BODY: the body is complete (q->body, q->len; q->too_big past --max-body-bytes). */
    enum MHD_Result (*finish)(request *q);
    /* optional: the request is over (libmicrohttpd completed it); frees q->data */
    void (*done)(request *q);
    const char *usage; /* optional: what follows "use METHOD" in the 405's message */
    /* POST: the Content-Types it takes ("application/json"; "image/" then "*" is any image type);
     * any other is 415, and so are the ones a browser sends cross-site without asking (doors.c) */
    const char *types;
} svc_route;

/* Adds rows[0..n) (copied) with the context their handlers see as q->ctx. 0, or -1 (printed)
 * when the table is full or a path is there already. */
int svc_routes_add(server *s, const svc_route *rows, size_t n, void *ctx);
/* Adds path as the endpoint of a wing that is not running: every method is answered 404 with
 * "PATH: text"; it is not listed among the endpoints. 0 or -1 (printed). */
int svc_route_add_off(server *s, const char *path, const char *text);

/* The core's own rows: GET /health (open without the key) and GET /metrics. 0 or -1. */
int svc_routes_core(server *s);

/* libmicrohttpd's callbacks, cls being the server */
enum MHD_Result svc_handle(void *cls, struct MHD_Connection *c, const char *url,
                           const char *method, const char *version, const char *upload,
                           size_t *upload_size, void **con_cls);
void svc_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                   enum MHD_RequestTerminationCode toe);

/* ---- job kinds and the queue (queue.c) ------------------------------------------------------- */

/* A kind of job: what its workers own and how one job runs. Every kind is admitted by one rule
 * (svc_enqueue) and served by one worker-pool implementation. */
typedef struct svc_kind {
    const char *name;        /* "encode", "chat" */
    const char *worker_name; /* "worker", "chat slot": in "cannot start %s %d" */
    /* 1: the drain and g4v_service_wait_idle wait until the request is completed (its answer
     * may still be streaming after the worker is free); 0: until the worker is free */
    int hold_until_completed;
    /* Opens worker i's state (a g4v_ctx, a chat session) into *state: 0, or a
     * G4V_SERVICE_ERR_* (printed). ctx is the pool's. */
    int (*worker_open)(void *ctx, int i, void **state);
    void (*worker_close)(void *ctx, void *state);
    /* optional: called under the server's mutex when job is admitted, before a worker sees it */
    void (*admitted)(request *q, void *job);
    /* Runs one job on worker w (w->state, w->p->ctx): replies with svc_reply (q is valid until
     * then) and frees the worker with svc_worker_free once (or the pool does after run). */
    void (*run)(svc_worker *w, request *q, void *job);
    /* optional: runs n (2..the pool's batch) jobs taken together from the queue, as run does
     * one: replies to each, frees the worker once */
    void (*run_batch)(svc_worker *w, request **q, void **jobs, int n);
    void (*release)(void *job); /* optional: after run */
    /* Answers a refused job (code 429 or 503; busy, queued: the pool's then, limit: its limit)
     * in the kind's own format, and drops the job. */
    enum MHD_Result (*refuse)(request *q, void *job, int code, int busy, int queued, int limit);
} svc_kind;

/* A kind's queue and workers; the counters under the server's mutex. */
struct svc_pool {
    const svc_kind *k;
    void *ctx; /* the wing's, passed to the kind's functions */
    server *s;
    int n, limit; /* workers running; jobs that may wait before 429 */
    int batch;    /* jobs a worker takes at once when the kind has run_batch (1: one) */
    int size;     /* workers asked for */
    void **state; /* each worker's (size of them, NULL where none opened) */
    pthread_t *th;
    request *head, *tail;
    int queued, busy; /* waiting (local jobs included); running */
    int local;        /* of the waiting, local jobs (svc_run_local): not counted for 429 */
    int active;       /* admitted, request not completed yet */
    int exit;
    uint64_t rejected; /* answered 429 */
    pthread_cond_t work;
};

struct svc_worker {
    svc_pool *p;
    void *state;
    int freed;
};

/* Starts a pool of `workers` workers of kind k (each state opened first) that lets `limit` jobs
 * wait; a free worker takes up to `batch` waiting jobs at once if k has run_batch (at most
 * SVC_MAX_BATCH). 0 and *out, or a G4V_SERVICE_ERR_* (printed); a pool partly started is
 * stopped with the others at close. */
#define SVC_MAX_BATCH 64
int svc_pool_start(server *s, const svc_kind *k, void *ctx, int workers, int limit, int batch,
                   svc_pool **out);
/* The compute threads each of `workers` workers gets: `requested`, or (0) the CPUs shared out
 * among them, at least 1. */
int svc_threads_each(int requested, int workers);
/* Admits job (the request's connection suspended until a worker replies) or refuses it through
 * the kind: 503 while stopping, 429 (Retry-After) when `limit` jobs would wait. */
enum MHD_Result svc_enqueue(request *q, svc_pool *p, void *job);
/* Jobs without an HTTP request: another wing's work done by this kind's workers (the chat
 * slots' images, by the encode contexts). qs[0..n) (the caller's, zeroed) and jobs[0..n) are
 * queued together behind what waits already, in the one FIFO, never refused for the limit (the
 * caller's own request was admitted) nor while stopping (it may be finishing an admitted one);
 * the kind's run/run_batch sees them with q->local set and ends each with svc_local_done instead
 * of svc_reply. Blocks until all are done. 0, or -1 when the pool has stopped. */
int svc_run_local(svc_pool *p, request *qs, void **jobs, int n);
void svc_local_done(request *q);
/* The worker's job is done with: a client that sends its next request as soon as it has this
 * answer finds the worker free. Once per job; later calls do nothing. */
void svc_worker_free(svc_worker *w);
/* A worker's answer to a suspended request: resumes it, and its handler queues resp. */
void svc_reply(request *q, int code, struct MHD_Response *resp);

/* ---- a wing (the list: tools/service/wings.c) ------------------------------------------------ */

typedef struct svc_wing {
    const char *name;
    /* NULL: always runs; else 1 if it runs with these options */
    int (*wanted)(const g4v_service_options *o);
    /* Starts its job kinds (svc_pool_start) and adds its routes (svc_routes_add): 0 or a
     * G4V_SERVICE_ERR_* (printed). *state: its own, given to the hooks below (set even on
     * failure, for close). */
    int (*open)(server *s, void **state);
    /* optional: after every pool stopped; frees state */
    void (*close)(server *s, void *state);
    /* optional: appends its GET /metrics lines at b (cap bytes); returns the length needed */
    size_t (*metrics)(server *s, void *state, char *b, size_t cap);
    /* optional: its part of the "listening on" line */
    void (*summary)(server *s, void *state, char *b, size_t cap);
    /* optional: adds its fields to GET /v1/info's object (a cJSON *; out of memory leaves
     * fields out) */
    void (*info)(server *s, void *state, void *object);
    /* Not wanted: these paths are answered 404 "PATH: off_text" (NULL-terminated). */
    const char *off_paths[4];
    const char *off_text;
} svc_wing;

extern const svc_wing *const svc_wings[]; /* NULL-terminated, in the order they open */

/* ---- the server and one request -------------------------------------------------------------- */

typedef struct svc_row {
    svc_route r;
    void *ctx;
    const char *off; /* svc_route_add_off's text, or NULL */
} svc_row;

struct g4v_service {
    g4v_service_options a;
    g4v_model *model; /* the vision model, shared by the wings */
    g4v_cache *cache; /* --cache, or NULL */
    char fingerprint[G4V_FINGERPRINT_HEX];
    g4v_model_info info;
    struct MHD_Daemon *daemon;
    unsigned char *api_key; /* SVC_KEY_MAX bytes, zero-padded; NULL: no key (auth.c) */
    size_t api_key_len;
    svc_row routes[SVC_MAX_ROUTES];
    int nroutes;
    struct {
        const svc_wing *w;
        void *state;
    } wings[SVC_MAX_WINGS];
    int nwings;

    pthread_mutex_t mu; /* everything below, and the pools' queues and counters */
    pthread_cond_t idle;
    svc_pool *pools[SVC_MAX_POOLS];
    int npools;
    int stopping;
    long inflight; /* requests begun and not yet completed */
    uint64_t by_code[SVC_NCODES + 1];
    svc_hist latency; /* answers of SVC_TIMED routes */
    /* every compute team enters it: the encode contexts' encodes and the text model's decode
     * calls together never have more threads busy than the cores (docs/SERVICE.md "Threads") */
    fe_cpu_gate gate;
};

enum { ST_RECEIVING, ST_QUEUED, ST_DONE, ST_ANSWERED };

struct request {
    server *s;
    struct MHD_Connection *conn;
    const svc_route *route; /* its row, NULL for the core's answers (401, 404, 405) */
    void *ctx;              /* the row's context */
    int state, too_big;
    double t0;
    unsigned char *body;
    size_t len, cap;
    void *data;     /* the route's own, for this request (freed by route->done) */
    void *job;      /* admitted into pool */
    svc_pool *pool; /* NULL until admitted */
    struct MHD_Response *resp; /* a worker's answer */
    int code;
    const char *cors; /* an allowed origin: Access-Control-Allow-Origin's value, else NULL */
    const char *url;  /* the request's path: valid during the route's begin call only */
    pthread_cond_t *local; /* a local job's (svc_run_local): signalled when done; else NULL */
    request *next;
};

/* 1 while any pool has a job waiting or running (or, for a kind that holds until completed, a
 * request admitted and not completed); the caller holds the server's mutex. */
int svc_pools_busy(const server *s);
/* Stops every pool (after their queues are empty), last started first. */
void svc_pools_stop(server *s);

/* ---- answers (response.c) -------------------------------------------------------------------- */

struct MHD_Response *svc_buffer_response(char *body, size_t len, const char *type);
struct MHD_Response *svc_error_response(int http, const char *msg, const char *status);
/* The error body of every refusal, OpenAI's: {"error": {"message", "type", "param", "code"}};
 * type follows the HTTP status (svc_error_type), param may be NULL (null). */
struct MHD_Response *svc_error_body(int http, const char *msg, const char *code,
                                    const char *param);
const char *svc_error_type(int http);
enum MHD_Result svc_answer(request *q, int code, struct MHD_Response *resp);
enum MHD_Result svc_answer_error(request *q, int code, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int svc_http_code_for(int g4v_status);

/* ---- metrics (metrics.c) --------------------------------------------------------------------- */

void svc_record(server *s, int code, double seconds, int timed);
char *svc_metrics_text(server *s, size_t *len); /* malloc'ed, NULL when out of memory */
/* The metrics text's one writer, for the core and every wing: appends printf text at b + n (b
 * holds cap bytes) and returns the new length, counting what did not fit as snprintf does. */
size_t svc_putf(char *b, size_t cap, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* One scalar metric: its HELP and TYPE lines and its value (integers up to 2^53 print exactly). */
size_t svc_metric(char *b, size_t cap, size_t n, const char *name, const char *type,
                  const char *help, double value);

/* ---- the doors (doors.c): which pages may use the service ---------------------------------- */

/* Checks --allowed-origin and --allowed-host (warning for '*'): 0 or G4V_SERVICE_ERR_USAGE
 * (printed). */
int svc_doors_setup(const g4v_service_options *a);
/* 1 if a request whose Host header is host (NULL: none) may be answered: the bound address,
 * localhost, 127.0.0.1, [::1], an --allowed-host (or '*'), or any IP literal when bound to a
 * wildcard address. */
int svc_door_host_ok(const g4v_service_options *a, const char *host);
/* The Origin check: *allowed 0 when origin (NULL: none) is neither the server's own
 * (http(s):// and the request's host) nor an --allowed-origin. Returns the value of
 * Access-Control-Allow-Origin to send (the allowed origin, "*"), NULL for none. */
const char *svc_door_origin(const g4v_service_options *a, const char *origin, const char *host,
                            int *allowed);
/* 1 if a POST's Content-Type (NULL: none) is in accepted (svc_route.types) and not one of the
 * types a browser sends cross-site without a preflight. */
int svc_door_type_ok(const char *accepted, const char *content_type);
/* A model path as the API names it: whole for a caller that holds the key (a key is set), else
 * its last component only, so that a keyless server tells no page where its files are. */
const char *svc_model_name(const server *s, const char *path);

/* ---- listen.c ---------------------------------------------------------------------------------
 * A listening socket on host:port, its URL into where and whether it is a loopback address into
 * *loopback; -1 (printed) on failure. Then libmicrohttpd on it (fd >= 0: epoll and a thread
 * pool, as g4v serve runs) or with no listening socket (fd < 0: poll, connections from
 * g4v_service_add_connection). 0 ok, -1 (printed). */
int svc_listen(const char *host, int port, char *where, size_t cap, int *loopback);
/* 1 if every address host resolves to is a loopback one (or it does not resolve: svc_listen
 * says so), for refusing a reachable --host before the models load. */
int svc_host_is_loopback(const char *host);
int svc_daemon_start(server *s, int fd, const char *where);

#endif
