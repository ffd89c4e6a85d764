/* cmd_serve.c - `g4v serve`: an HTTP encode service on GNU libmicrohttpd (docs/SERVICE.md).
 *
 *   g4v serve --model DIR [--host 127.0.0.1] [--port N] [--contexts K] [--threads N]
 *             [--queue Q] [--cache DIR] ...
 *
 * Endpoints: POST /v1/encode (body: the image bytes) -> features as JSON, .npy or safetensors;
 * GET /v1/info, /health, /metrics (Prometheus text).
 *
 * How a request flows: libmicrohttpd's threads (--http-threads) parse HTTP and collect the body
 * (at most --max-body-bytes: a larger Content-Length is answered 413 before the body is read).
 * A complete encode request becomes a job: if --queue jobs are already waiting it is answered
 * 429 at once; otherwise its connection is suspended and one of K workers, each owning one
 * g4v_ctx, encodes it, builds the response and resumes the connection. So a context is only ever
 * held by a complete request: a client that sends half a request and stalls holds a connection
 * and its buffer until --timeout closes it, never a context. SIGTERM or SIGINT: stop accepting
 * connections, finish every request already received (up to --drain-seconds for bodies still
 * arriving), then exit 0.
 */
#include "base/clock.h"
#include "base/utf8.h"
#include "cli.h"
#include "g4v.h"
#include "serve_format.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef struct serve_args {
    const char *model, *host, *cache;
    int port, contexts, threads, http_threads, queue, timeout_s, drain_s, tokens, precise, no_exif;
    int resize; /* --resize: the default G4V_RESIZE_* */
    unsigned long long max_body, cache_max_bytes;
} serve_args;

/* Status codes the service answers with, for the metrics (anything else counts as "other"). */
static const int known_codes[] = {200, 400, 404, 405, 406, 413, 415, 422, 429, 500, 503};
#define NCODES (int)(sizeof known_codes / sizeof known_codes[0])
static const double buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                 0.5,   1,      2.5,   5,    10,    30,   60};
#define NBUCKETS (int)(sizeof buckets / sizeof buckets[0])

typedef struct request request;

typedef struct server {
    serve_args a;
    g4v_model *model;
    g4v_cache *cache;
    g4v_ctx **ctx;
    pthread_t *workers;
    int nworkers, threads; /* contexts running, compute threads each */
    char fingerprint[G4V_FINGERPRINT_HEX];
    g4v_model_info info;
    struct MHD_Daemon *daemon;

    pthread_mutex_t mu; /* everything below */
    pthread_cond_t work, idle;
    request *head, *tail;
    int queued, busy, stopping, workers_exit;
    long inflight; /* requests begun and not yet completed */
    uint64_t by_code[NCODES + 1];
    uint64_t hist[NBUCKETS + 1];
    double lat_sum;
    uint64_t lat_count, encodes, hits, misses;
} server;

enum { REQ_OTHER, REQ_ENCODE };
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
};

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: g4v serve --model DIR [options]\n"
        "\n"
        "Serves Gemma 4 vision encoding over HTTP (docs/SERVICE.md):\n"
        "  POST /v1/encode[?tokens=N&dtype=f32|bf16&exif=0|1&resize=pillow|torchvision\n"
        "                  &format=json|npy|safetensors]\n"
        "       body: the image bytes (JPEG/PNG/WebP/GIF/BMP); answer: the soft tokens in the\n"
        "       format Accept asks for (application/json with base64 features, the default;\n"
        "       application/x-npy; application/x-safetensors), with prompt ids, grid and sizes\n"
        "  GET  /v1/info     the model, its fingerprint, budgets and the service's limits\n"
        "  GET  /health      200 \"ok\" while serving\n"
        "  GET  /metrics     Prometheus text: requests by status, latency, queue, cache\n"
        "\n"
        "  --model DIR          checkpoint directory or mmproj .gguf file (required)\n"
        "  --host ADDR          address to listen on (default 127.0.0.1: this machine only;\n"
        "                       the service has no authentication and no TLS)\n"
        "  --port N             TCP port (default 8080; 0 picks a free one, printed at start)\n"
        "  --contexts K         encodes run at once, one g4v context each (default 1)\n"
        "  --threads N          compute threads per context (default: CPUs / K, at least 1)\n"
        "  --queue Q            complete requests that may wait for a context; more are\n"
        "                       answered 429 at once (default 16)\n"
        "  --http-threads N     threads parsing HTTP (default 2)\n"
        "  --max-body-bytes N   largest image accepted, else 413 (default 67108864)\n"
        "  --timeout S          close a connection idle for S seconds, e.g. a client that\n"
        "                       stalls mid-request (default 30)\n"
        "  --drain-seconds S    on SIGTERM, wait at most S seconds for request bodies still\n"
        "                       arriving; received requests are always finished (default 30)\n"
        "  --tokens N           default budget, one of " CLI_BUDGETS " (default %d)\n"
        "  --precise            f32 GEMM inputs (default: bf16 inputs)\n"
        "  --no-exif            ignore EXIF orientation by default\n"
        "  --resize pillow|torchvision  default resize (pillow: Pillow's BICUBIC, the\n"
        "                       default; torchvision: torch's antialiased bicubic, as\n"
        "                       transformers' torchvision backend); ?resize= overrides it\n"
        "  --cache DIR          feature cache shared with `g4v encode --cache` and other\n"
        "                       servers (identical bytes on a hit)\n"
        "  --cache-max-bytes N  cache size bound, LRU eviction (default 1073741824)\n"
        "  -h, --help           this help\n"
        "\n"
        "SIGTERM or SIGINT: stop accepting, finish the requests in flight, exit 0.\n"
        "exit codes: 0 ok, 1 usage, 3 model, 4 cannot listen or open the cache, 5 internal\n",
        G4V_DEFAULT_BUDGET);
}

static int parse_num(const char *s, long long lo, long long hi, long long *v) {
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end || end == s || x < lo || x > hi) return -1;
    *v = x;
    return 0;
}

/* 0 ok, -1 usage error (printed), -2 help printed. */
static int parse_args(int argc, char **argv, serve_args *a) {
    a->host = "127.0.0.1";
    a->port = 8080;
    a->contexts = 1;
    a->queue = 16;
    a->http_threads = 2;
    a->timeout_s = 30;
    a->drain_s = 30;
    a->tokens = G4V_DEFAULT_BUDGET;
    a->max_body = 64ull << 20;
    static const struct {
        const char *name;
        long long lo, hi;
        size_t off;
        int is_ull;
    } nums[] = {
        {"--port", 0, 65535, offsetof(serve_args, port), 0},
        {"--contexts", 1, 256, offsetof(serve_args, contexts), 0},
        {"--threads", 1, 4096, offsetof(serve_args, threads), 0},
        {"--queue", 0, 100000, offsetof(serve_args, queue), 0},
        {"--http-threads", 1, 256, offsetof(serve_args, http_threads), 0},
        {"--timeout", 1, 86400, offsetof(serve_args, timeout_s), 0},
        {"--drain-seconds", 0, 86400, offsetof(serve_args, drain_s), 0},
        {"--tokens", 1, 1000000, offsetof(serve_args, tokens), 0},
        {"--max-body-bytes", 1, 1ll << 40, offsetof(serve_args, max_body), 1},
        {"--cache-max-bytes", 1, 1ll << 62, offsetof(serve_args, cache_max_bytes), 1},
    };
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int has_val = i + 1 < argc, done = 0;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
            usage(stdout);
            return -2;
        }
        for (size_t k = 0; k < sizeof nums / sizeof nums[0] && !done; k++) {
            if (strcmp(s, nums[k].name)) continue;
            long long v;
            if (!has_val || parse_num(argv[++i], nums[k].lo, nums[k].hi, &v)) {
                fprintf(stderr, "g4v serve: %s needs a number from %lld to %lld\n", s, nums[k].lo,
                        nums[k].hi);
                return -1;
            }
            if (nums[k].is_ull)
                *(unsigned long long *)((char *)a + nums[k].off) = (unsigned long long)v;
            else
                *(int *)((char *)a + nums[k].off) = (int)v;
            done = 1;
        }
        if (done) continue;
        if (!strcmp(s, "--model") && has_val)
            a->model = argv[++i];
        else if (!strcmp(s, "--host") && has_val)
            a->host = argv[++i];
        else if (!strcmp(s, "--cache") && has_val)
            a->cache = argv[++i];
        else if (!strcmp(s, "--precise"))
            a->precise = 1;
        else if (!strcmp(s, "--no-exif"))
            a->no_exif = 1;
        else if (!strcmp(s, "--resize") && has_val) {
            const char *v = argv[++i];
            if (strcmp(v, "pillow") && strcmp(v, "torchvision")) {
                fprintf(stderr, "g4v serve: --resize: '%s' is not pillow or torchvision\n", v);
                return -1;
            }
            a->resize = !strcmp(v, "torchvision") ? G4V_RESIZE_TORCHVISION : G4V_RESIZE_PILLOW;
        }
        else {
            fprintf(stderr, "g4v serve: unknown or incomplete option '%s' (see --help)\n", s);
            return -1;
        }
    }
    if (!a->model) {
        fprintf(stderr, "g4v serve: --model DIR is required (see --help)\n");
        return -1;
    }
    char msg[128];
    if (g4v_budget_check(a->tokens, msg, sizeof msg)) {
        fprintf(stderr, "g4v serve: --tokens: %s\n", msg);
        return -1;
    }
    if (a->cache_max_bytes && !a->cache) {
        fprintf(stderr, "g4v serve: --cache-max-bytes needs --cache DIR\n");
        return -1;
    }
    return 0;
}

/* ---- metrics ---------------------------------------------------------------------------- */

static void record(server *s, int code, double seconds, int encode) {
    int i = 0;
    while (i < NCODES && known_codes[i] != code)
        i++;
    pthread_mutex_lock(&s->mu);
    s->by_code[i]++;
    if (encode) {
        int b = 0;
        while (b < NBUCKETS && seconds > buckets[b])
            b++;
        s->hist[b]++;
        s->lat_sum += seconds;
        s->lat_count++;
    }
    pthread_mutex_unlock(&s->mu);
}

static char *metrics_text(server *s, size_t *len) {
    size_t cap = 8192;
    char *b = malloc(cap);
    if (!b) return NULL;
    size_t n = 0;
#define OUT(...) n += (size_t)snprintf(b + n, n < cap ? cap - n : 0, __VA_ARGS__)
/* One scalar metric: its HELP and TYPE lines and its value (integers up to 2^53 print exactly). */
#define METRIC(name, type, help, value)                                                            \
    OUT("# HELP " name " " help "\n# TYPE " name " " type "\n" name " %.17g\n", (double)(value))
    g4v_cache_stats cs;
    g4v_cache_get_stats(s->cache, &cs, NULL, 0);
    pthread_mutex_lock(&s->mu);
    OUT("# HELP g4v_http_requests_total HTTP requests answered, by status code.\n"
        "# TYPE g4v_http_requests_total counter\n");
    for (int i = 0; i <= NCODES; i++) {
        if (i < NCODES)
            OUT("g4v_http_requests_total{code=\"%d\"} %llu\n", known_codes[i],
                (unsigned long long)s->by_code[i]);
        else
            OUT("g4v_http_requests_total{code=\"other\"} %llu\n",
                (unsigned long long)s->by_code[i]);
    }
    OUT("# HELP g4v_encode_request_seconds Time from the request's arrival to its answer "
        "(POST /v1/encode).\n# TYPE g4v_encode_request_seconds histogram\n");
    uint64_t cum = 0;
    for (int i = 0; i < NBUCKETS; i++) {
        cum += s->hist[i];
        OUT("g4v_encode_request_seconds_bucket{le=\"%g\"} %llu\n", buckets[i],
            (unsigned long long)cum);
    }
    cum += s->hist[NBUCKETS];
    OUT("g4v_encode_request_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    OUT("g4v_encode_request_seconds_sum %.6f\n", s->lat_sum);
    OUT("g4v_encode_request_seconds_count %llu\n", (unsigned long long)s->lat_count);
    METRIC("g4v_queue_depth", "gauge", "Complete encode requests waiting for a context.",
           s->queued);
    METRIC("g4v_queue_capacity", "gauge", "Waiting requests allowed before 429.", s->a.queue);
    METRIC("g4v_encodes_in_progress", "gauge", "Contexts encoding now.", s->busy);
    METRIC("g4v_contexts", "gauge", "Encode contexts.", s->nworkers);
    METRIC("g4v_requests_in_flight", "gauge", "HTTP requests begun and not yet completed.",
           s->inflight);
    METRIC("g4v_encodes_total", "counter", "Images encoded or served from the cache.", s->encodes);
    pthread_mutex_unlock(&s->mu);
    METRIC("g4v_cache_hits_total", "counter", "Encode requests served from the feature cache.",
           cs.hits);
    METRIC("g4v_cache_misses_total", "counter", "Cache lookups that found no valid entry.",
           cs.misses);
    METRIC("g4v_cache_corrupt_total", "counter",
           "Damaged cache entries found (recomputed, never served).", cs.corrupt);
    METRIC("g4v_cache_evictions_total", "counter",
           "Cache entries removed to stay under the size bound.", cs.evictions);
    METRIC("g4v_cache_errors_total", "counter", "Failed cache writes or scans.", cs.errors);
#undef METRIC
#undef OUT
    if (n >= cap) { /* cannot happen with the fixed set above; never send a cut text */
        free(b);
        return NULL;
    }
    *len = n;
    return b;
}

/* ---- responses -------------------------------------------------------------------------- */

static struct MHD_Response *buffer_response(char *body, size_t len, const char *type) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return NULL;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    return r;
}

/* {"error": msg, "status": name}. msg may quote what the client sent (a path, a parameter): bytes
 * that are not UTF-8 become '?' in the printed text, so that the answer stays JSON (cJSON copies
 * bytes as they are; a structural character is ASCII, never replaced). */
static struct MHD_Response *error_response(const char *msg, const char *status) {
    cJSON *o = cJSON_CreateObject();
    char *text = NULL;
    if (o && cJSON_AddStringToObject(o, "error", msg) &&
        cJSON_AddStringToObject(o, "status", status))
        text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) return NULL;
    g4v_utf8_sanitize(text);
    size_t n = strlen(text);
    char *body = malloc(n + 2);
    if (body) {
        memcpy(body, text, n);
        body[n] = '\n';
        body[n + 1] = '\0';
    }
    cJSON_free(text);
    return body ? buffer_response(body, n + 1, "application/json") : NULL;
}

/* Answers now (the request's first or last call): queues resp (or a bare 500 if it is NULL). */
static enum MHD_Result answer(request *q, int code, struct MHD_Response *resp) {
    if (!resp) {
        code = MHD_HTTP_INTERNAL_SERVER_ERROR;
        resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        if (!resp) return MHD_NO;
    }
    if (code == MHD_HTTP_TOO_MANY_REQUESTS || code == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(resp, "Retry-After", "1");
    enum MHD_Result r = MHD_queue_response(q->conn, (unsigned)code, resp);
    MHD_destroy_response(resp);
    q->state = ST_ANSWERED; /* whatever MHD still delivers of the body is dropped */
    record(q->s, code, g4v_now_s() - q->t0, q->kind == REQ_ENCODE);
    return r;
}

static enum MHD_Result answer_error(request *q, int code, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static enum MHD_Result answer_error(request *q, int code, const char *status, const char *fmt,
                                    ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return answer(q, code, error_response(msg, status));
}

static int http_code_for(int st) {
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

static char *info_json(server *s, size_t *len) {
    const g4v_model_info *m = &s->info;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    static const int budgets[] = {G4V_BUDGETS};
    cJSON_AddStringToObject(o, "model", s->a.model);
    cJSON_AddStringToObject(o, "variant", m->variant);
    cJSON_AddStringToObject(o, "kind", m->kind); /* "tower" or "unified" */
    cJSON_AddStringToObject(o, "fingerprint", s->fingerprint);
    cJSON_AddStringToObject(o, "mode", m->precise ? "precise" : "fast");
    cJSON_AddStringToObject(o, "version", g4v_version());
    cJSON_AddNumberToObject(o, "dim", m->dim);
    cJSON_AddNumberToObject(o, "num_layers", m->num_layers);
    cJSON_AddNumberToObject(o, "hidden_size", m->hidden_size);
    cJSON_AddNumberToObject(o, "param_count", (double)m->param_count);
    cJSON_AddItemToObject(o, "budgets",
                          cJSON_CreateIntArray(budgets, sizeof budgets / sizeof budgets[0]));
    cJSON_AddNumberToObject(o, "default_budget", m->default_budget);
    cJSON_AddBoolToObject(o, "apply_exif", m->apply_exif);
    cJSON_AddStringToObject(o, "resize", m->resize == G4V_RESIZE_TORCHVISION ? "torchvision" : "pillow");
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
        cJSON_AddNumberToObject(sv, "timeout_seconds", s->a.timeout_s);
        cJSON_AddBoolToObject(sv, "cache", s->cache != NULL);
    }
    char *t = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!t) return NULL;
    *len = strlen(t);
    return t; /* cJSON allocates with malloc by default: MHD may free() it */
}

/* ---- the encode workers ----------------------------------------------------------------- */

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
        q->code = http_code_for(st);
        q->resp = error_response(g4v_ctx_error(ctx), g4v_status_name(st));
        return;
    }
    const char *cache = !s->cache ? "off" : g4v_ctx_cache_hit(ctx) ? "hit" : "miss";
    size_t len = 0;
    char *body = serve_format_body((serve_format)q->fmt, &r, q->bf16, cache, s->fingerprint, &len);
    q->resp = body ? buffer_response(body, len, serve_format_mime((serve_format)q->fmt)) : NULL;
    if (!q->resp) {
        q->code = MHD_HTTP_SERVICE_UNAVAILABLE;
        q->resp = error_response("out of memory building the response", "G4V_ERR_NOMEM");
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

/* ---- the HTTP handler ------------------------------------------------------------------- */

static enum MHD_Result begin_encode(request *q, struct MHD_Connection *c) {
    server *s = q->s;
    const char *v;
    long long n;
    q->budget = 0;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "tokens"))) {
        char msg[160];
        if (parse_num(v, 1, 1000000, &n) || g4v_budget_check((int)n, msg, sizeof msg))
            return answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                "tokens=%.40s: unsupported token budget (use one of %s)", v,
                                CLI_BUDGETS);
        q->budget = (int)n;
    }
    q->bf16 = 0;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "dtype"))) {
        if (!strcmp(v, "bf16"))
            q->bf16 = 1;
        else if (strcmp(v, "f32") && strcmp(v, "float32"))
            return answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                "dtype=%.40s: use f32 or bf16", v);
    }
    q->exif = -1;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "exif"))) {
        if (strcmp(v, "0") && strcmp(v, "1"))
            return answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG", "exif=%.40s: use 0 or 1",
                                v);
        q->exif = v[0] == '1';
    }
    q->resize = -1;
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "resize"))) {
        if (strcmp(v, "pillow") && strcmp(v, "torchvision"))
            return answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                "resize=%.40s: use pillow or torchvision", v);
        q->resize = !strcmp(v, "torchvision") ? G4V_RESIZE_TORCHVISION : G4V_RESIZE_PILLOW;
    }
    if ((v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format"))) {
        if ((q->fmt = serve_format_from_name(v)) < 0)
            return answer_error(q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
                                "format=%.40s: use json, npy or safetensors", v);
    } else {
        const char *accept =
            MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
        if ((q->fmt = serve_format_from_accept(accept)) < 0)
            return answer_error(q, MHD_HTTP_NOT_ACCEPTABLE, "G4V_ERR_ARG",
                                "Accept: %.200s: this service answers application/json, "
                                "application/x-npy or application/x-safetensors",
                                accept);
    }
    const char *cl =
        MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (cl && !parse_num(cl, 0, (1ll << 62), &n) && (unsigned long long)n > s->a.max_body)
        return answer_error(q, MHD_HTTP_CONTENT_TOO_LARGE, "G4V_ERR_LIMIT",
                            "body of %lld bytes is above this server's limit of %llu bytes "
                            "(--max-body-bytes)",
                            n, s->a.max_body);
    return MHD_YES; /* the body follows */
}

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

static enum MHD_Result finish_encode(request *q) {
    server *s = q->s;
    if (q->too_big)
        return answer_error(q, MHD_HTTP_CONTENT_TOO_LARGE, "G4V_ERR_LIMIT",
                            "body is above this server's limit of %llu bytes (--max-body-bytes)",
                            s->a.max_body);
    if (q->len == 0)
        return answer_error(
            q, MHD_HTTP_BAD_REQUEST, "G4V_ERR_ARG",
            "empty body: POST the image's bytes (e.g. curl --data-binary @cat.jpg)");
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        return answer_error(q, MHD_HTTP_SERVICE_UNAVAILABLE, "SERVE_STOPPING",
                            "the server is shutting down");
    }
    /* requests that would wait: those queued plus this one, less the idle contexts */
    if (s->queued + 1 - (s->nworkers - s->busy) > s->a.queue) {
        int queued = s->queued, busy = s->busy;
        pthread_mutex_unlock(&s->mu);
        return answer_error(q, MHD_HTTP_TOO_MANY_REQUESTS, "SERVE_BUSY",
                            "all %d contexts are busy and %d requests are waiting (--queue %d); "
                            "retry later",
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

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
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
        int is_get = !strcmp(method, MHD_HTTP_METHOD_GET),
            is_post = !strcmp(method, MHD_HTTP_METHOD_POST);
        if (!strcmp(url, "/v1/encode")) {
            q->kind = REQ_ENCODE;
            if (!is_post) {
                q->kind = REQ_OTHER;
                return answer_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, "G4V_ERR_ARG",
                                    "%s /v1/encode: use POST with the image as the body", method);
            }
            return begin_encode(q, c);
        }
        int known = !strcmp(url, "/health") || !strcmp(url, "/v1/info") || !strcmp(url, "/metrics");
        if (!known)
            return answer_error(q, MHD_HTTP_NOT_FOUND, "G4V_ERR_ARG",
                                "no such endpoint: %.200s (POST /v1/encode, GET /v1/info, "
                                "/health, /metrics)",
                                url);
        if (!is_get)
            return answer_error(q, MHD_HTTP_METHOD_NOT_ALLOWED, "G4V_ERR_ARG", "%s %s: use GET",
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
            body = metrics_text(s, &len);
            type = "text/plain; version=0.0.4";
        }
        return answer(q, MHD_HTTP_OK, body ? buffer_response(body, len, type) : NULL);
    }
    if (q->kind != REQ_ENCODE || q->state == ST_ANSWERED) { /* answered already: drop the rest */
        *upload_size = 0;
        return MHD_YES;
    }
    if (q->state == ST_RECEIVING && *upload_size) {
        enum MHD_Result r = receive(q, upload, *upload_size);
        *upload_size = 0;
        return r;
    }
    if (q->state == ST_RECEIVING) return finish_encode(q);
    if (q->state == ST_DONE) {
        struct MHD_Response *resp = q->resp;
        q->resp = NULL;
        return answer(q, q->code, resp);
    }
    return MHD_YES; /* queued: nothing to do until resumed */
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
    (void)c, (void)toe;
    server *s = cls;
    request *q = *con_cls;
    if (!q) return;
    *con_cls = NULL;
    if (q->resp) MHD_destroy_response(q->resp);
    free(q->body);
    free(q);
    pthread_mutex_lock(&s->mu);
    s->inflight--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}

/* ---- start, serve, stop ----------------------------------------------------------------- */

/* A listening socket on host:port; its port and a printable address into where. -1 on failure
 * (message printed). */
static int listen_on(const char *host, int port, char *where, size_t cap) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int e = getaddrinfo(host, ps, &hints, &res);
    if (e) {
        fprintf(stderr, "g4v serve: --host %s: %s\n", host, gai_strerror(e));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
            e = errno;
            close(fd);
            fd = -1;
            errno = e;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "g4v serve: cannot listen on %s port %d: %s\n", host, port,
                strerror(errno));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char addr[INET6_ADDRSTRLEN] = "?";
    int bound = port;
    if (!getsockname(fd, (struct sockaddr *)&ss, &sl)) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a6->sin6_addr, addr, sizeof addr);
            bound = ntohs(a6->sin6_port);
            snprintf(where, cap, "http://[%s]:%d", addr, bound);
        } else {
            struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a4->sin_addr, addr, sizeof addr);
            bound = ntohs(a4->sin_port);
            snprintf(where, cap, "http://%s:%d", addr, bound);
        }
        int loopback = ss.ss_family == AF_INET6
                           ? IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr)
                           : (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
        if (!loopback)
            fprintf(stderr,
                    "g4v serve: warning: listening on %s, reachable from other machines; "
                    "the service has no authentication and no TLS\n",
                    addr);
    }
    return fd;
}

static int setup(server *s) {
    serve_args *a = &s->a;
    char msg[1024];
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.budget = a->tokens;
    mo.precise = a->precise;
    mo.apply_exif = !a->no_exif;
    mo.resize = a->resize;
    if (a->max_body > mo.max_file_bytes) mo.max_file_bytes = a->max_body;
    int st = g4v_model_load(a->model, &mo, &s->model, msg, sizeof msg);
    if (st) {
        fprintf(stderr, "g4v serve: model %s: %s\n", a->model, msg);
        return cli_exit_for_status(st, 1);
    }
    g4v_model_get_info(s->model, &s->info, NULL, 0);
    double t0 = g4v_now_s();
    if ((st = g4v_model_fingerprint(s->model, s->fingerprint, sizeof s->fingerprint, NULL, 0))) {
        fprintf(stderr, "g4v serve: model fingerprint: %s\n", g4v_status_name(st));
        return G4V_EXIT_INTERNAL;
    }
    fprintf(stderr, "g4v serve: model %s (%s), fingerprint %s (%.2f s)\n", a->model,
            s->info.variant, s->fingerprint, g4v_now_s() - t0);
    if (a->cache) {
        g4v_cache_options co;
        g4v_cache_options_init(&co);
        if (a->cache_max_bytes) co.max_bytes = a->cache_max_bytes;
        if ((st = g4v_cache_open(a->cache, &co, &s->cache, msg, sizeof msg))) {
            fprintf(stderr, "g4v serve: --cache: %s\n", msg);
            return G4V_EXIT_OUTPUT;
        }
    }
    int threads = a->threads;
    if (!threads) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > a->contexts ? (int)(cpus / a->contexts) : 1;
    }
    s->threads = threads;
    s->ctx = calloc((size_t)a->contexts, sizeof *s->ctx);
    s->workers = calloc((size_t)a->contexts, sizeof *s->workers);
    if (!s->ctx || !s->workers) return G4V_EXIT_INTERNAL;
    for (int i = 0; i < a->contexts; i++) {
        g4v_ctx_options co;
        g4v_ctx_options_init(&co);
        co.threads = threads;
        if ((st = g4v_ctx_create(s->model, &co, &s->ctx[i], msg, sizeof msg))) {
            fprintf(stderr, "g4v serve: context %d: %s\n", i, msg);
            return G4V_EXIT_INTERNAL;
        }
        g4v_ctx_set_cache(s->ctx[i], s->cache);
        worker_arg *w = malloc(sizeof *w);
        if (!w) return G4V_EXIT_INTERNAL;
        *w = (worker_arg){s, s->ctx[i]};
        if (pthread_create(&s->workers[i], NULL, worker_main, w)) {
            free(w);
            fprintf(stderr, "g4v serve: cannot start worker %d\n", i);
            return G4V_EXIT_INTERNAL;
        }
        s->nworkers++;
    }
    return 0;
}

static void teardown(server *s) {
    pthread_mutex_lock(&s->mu);
    s->workers_exit = 1;
    pthread_cond_broadcast(&s->work);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->nworkers; i++)
        pthread_join(s->workers[i], NULL);
    for (int i = 0; s->ctx && i < s->a.contexts; i++)
        g4v_ctx_free(s->ctx[i]);
    free(s->ctx);
    free(s->workers);
    g4v_cache_close(s->cache);
    g4v_model_free(s->model);
}

int cmd_serve(int argc, char **argv) {
    static server srv; /* one per process; static keeps it off the stack */
    server *s = &srv;
    memset(s, 0, sizeof *s);
    int r = parse_args(argc, argv, &s->a);
    if (r) return r == -2 ? G4V_EXIT_OK : G4V_EXIT_USAGE;
    /* Every thread created from here on inherits this mask: the signals wait for sigwait below. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    int rc = setup(s);
    char where[128] = "";
    int fd = rc ? -1 : listen_on(s->a.host, s->a.port, where, sizeof where);
    if (!rc && fd < 0) rc = G4V_EXIT_OUTPUT;
    if (!rc) {
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
        s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_LISTEN_SOCKET, fd,
                                     MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->a.http_threads,
                                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->a.timeout_s,
                                     MHD_OPTION_CONNECTION_LIMIT, (unsigned)1000,
                                     MHD_OPTION_NOTIFY_COMPLETED, completed, s, MHD_OPTION_END);
        if (!s->daemon) {
            fprintf(stderr, "g4v serve: libmicrohttpd could not start on %s\n", where);
            close(fd);
            rc = G4V_EXIT_INTERNAL;
        }
    }
    if (rc) {
        teardown(s);
        return rc;
    }
    printf("g4v serve: listening on %s (%d contexts x %d threads, queue %d%s%s)\n", where,
           s->nworkers, s->threads, s->a.queue, s->cache ? ", cache " : "",
           s->cache ? s->a.cache : "");
    fflush(stdout);
    int sig = 0;
    while (sigwait(&stop, &sig)) {
    }
    fprintf(stderr, "g4v serve: %s: finishing the requests in flight\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    /* No new connections; the ones open may still send requests, which get 503. */
    MHD_socket lfd = MHD_quiesce_daemon(s->daemon);
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += s->a.drain_s;
    int timed_out = 0;
    while (s->queued || s->busy || (s->inflight && !timed_out))
        timed_out = pthread_cond_timedwait(&s->idle, &s->mu, &deadline) == ETIMEDOUT || timed_out;
    long left = s->inflight;
    pthread_mutex_unlock(&s->mu);
    if (left)
        fprintf(stderr, "g4v serve: closing %ld connections still sending after %d s\n", left,
                s->a.drain_s);
    MHD_stop_daemon(s->daemon);
    teardown(s);
    fprintf(stderr, "g4v serve: stopped\n");
    return G4V_EXIT_OK;
}
