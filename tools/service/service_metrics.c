/* service_metrics.c - what GET /metrics reports (Prometheus text format 0.0.4): requests by
 * status, the encode latency histogram, the queue, the contexts and the feature cache. The names
 * and their order are an interface (dashboards, tests/service/test_serve.py): add, never rename.
 * The counters live in the server under its mutex (service_internal.h); svc_record counts one
 * answer, svc_metrics_text prints them all. */
#include "chat_service.h"
#include "service_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* Status codes the service answers with, for the metrics (anything else counts as "other"). */
static const int known_codes[] = {200, 400, 401, 403, 404, 405, 406, 413, 415, 422, 429, 500, 503};
static const double buckets[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                 0.5,   1,      2.5,   5,    10,    30,   60};
_Static_assert(sizeof known_codes / sizeof known_codes[0] == SVC_NCODES, "SVC_NCODES");
_Static_assert(sizeof buckets / sizeof buckets[0] == SVC_NBUCKETS, "SVC_NBUCKETS");
#define NCODES SVC_NCODES
#define NBUCKETS SVC_NBUCKETS

int g4v_service_answers_with(int code) {
    for (int i = 0; i < NCODES; i++)
        if (known_codes[i] == code) return 1;
    return 0;
}

void svc_record(server *s, int code, double seconds, int encode) {
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

char *svc_metrics_text(server *s, size_t *len) {
    size_t cap = 16384;
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
    n += svc_chat_metrics_text(s, b + n, n < cap ? cap - n : 0);
#undef METRIC
#undef OUT
    if (n >= cap) { /* cannot happen with the fixed set above; never send a cut text */
        free(b);
        return NULL;
    }
    *len = n;
    return b;
}
