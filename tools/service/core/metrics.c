/* metrics.c - what GET /metrics reports (Prometheus text format 0.0.4): the core's requests by
 * status, then each wing's lines in the order the wings open (the encode latency histogram, the
 * queue, the contexts and the feature cache; the chat lines with --lm). The names and their
 * order are an interface (dashboards, tests/service/test_serve_metrics.py): add, never rename.
 * The counters live in the server under its mutex (core.h); svc_record counts one answer,
 * svc_metrics_text prints them all. Also the one latency histogram type, svc_hist, and the one
 * writer of metrics lines, svc_putf / svc_metric, that the wings' own lines go through. */
#include "core/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Status codes the service answers with, for the metrics (anything else counts as "other"). */
static const int known_codes[] = {200, 204, 400, 401, 403, 404, 405,
                                   406, 413, 415, 421, 422, 429, 500, 503};
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

void svc_hist_add(svc_hist *h, double seconds) {
    int b = 0;
    while (b < NBUCKETS && seconds > buckets[b])
        b++;
    h->n[b]++;
    h->sum += seconds;
    h->count++;
}

size_t svc_putf(char *b, size_t cap, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b + n, n < cap ? cap - n : 0, fmt, ap);
    va_end(ap);
    return n + (size_t)k;
}

size_t svc_metric(char *b, size_t cap, size_t n, const char *name, const char *type,
                  const char *help, double value) {
    return svc_putf(b, cap, n, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type,
                    name, value);
}

size_t svc_hist_text(const svc_hist *h, const char *name, const char *help, char *b, size_t cap) {
    size_t n = 0;
    n = svc_putf(b, cap, n, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < NBUCKETS; i++) {
        cum += h->n[i];
        n = svc_putf(b, cap, n, "%s_bucket{le=\"%g\"} %llu\n", name, buckets[i],
                     (unsigned long long)cum);
    }
    cum += h->n[NBUCKETS];
    n = svc_putf(b, cap, n, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    n = svc_putf(b, cap, n, "%s_sum %.6f\n", name, h->sum);
    n = svc_putf(b, cap, n, "%s_count %llu\n", name, (unsigned long long)h->count);
    return n;
}

void svc_record(server *s, int code, double seconds, int timed) {
    int i = 0;
    while (i < NCODES && known_codes[i] != code)
        i++;
    pthread_mutex_lock(&s->mu);
    s->by_code[i]++;
    if (timed) svc_hist_add(&s->latency, seconds);
    pthread_mutex_unlock(&s->mu);
}

char *svc_metrics_text(server *s, size_t *len) {
    size_t cap = 16384;
    char *b = malloc(cap);
    if (!b) return NULL;
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    n = svc_putf(b, cap, n,
                 "# HELP g4v_http_requests_total HTTP requests answered, by status code.\n"
                 "# TYPE g4v_http_requests_total counter\n");
    for (int i = 0; i <= NCODES; i++) {
        if (i < NCODES)
            n = svc_putf(b, cap, n, "g4v_http_requests_total{code=\"%d\"} %llu\n",
                         known_codes[i], (unsigned long long)s->by_code[i]);
        else
            n = svc_putf(b, cap, n, "g4v_http_requests_total{code=\"other\"} %llu\n",
                         (unsigned long long)s->by_code[i]);
    }
    pthread_mutex_unlock(&s->mu);
    for (int w = 0; w < s->nwings; w++)
        if (s->wings[w].w->metrics)
            n += s->wings[w].w->metrics(s, s->wings[w].state, b + n, n < cap ? cap - n : 0);
    if (n >= cap) { /* cannot happen with the fixed set above; never send a cut text */
        free(b);
        return NULL;
    }
    *len = n;
    return b;
}
