/* life.c - the service's life: start (the model, its fingerprint, the cache, the core's routes,
 * then every wing: its job kinds' workers and its routes), serve until SIGTERM or SIGINT and
 * drain, stop. g4v_service_run is `g4v serve`; g4v_service_open/close are the same start and
 * stop without a listening socket, for an embedder (fuzz/fuzz_serve.c).
 *
 * SIGTERM or SIGINT: stop accepting connections, finish every request already received (up to
 * --drain-seconds for bodies still arriving), then return G4V_SERVICE_OK.
 */
#include "core/core.h"
#include "frontend.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A model that did not load: as `g4v` maps a library status met while loading a model. */
static int model_failure(int st) {
    switch (st) {
    case G4V_ERR_ARG:
        return G4V_SERVICE_ERR_USAGE;
    case G4V_ERR_MODEL:
    case G4V_ERR_IO:
    case G4V_ERR_IMAGE:
    case G4V_ERR_LIMIT:
    case G4V_ERR_UNSUPPORTED:
        return G4V_SERVICE_ERR_MODEL;
    default:
        return G4V_SERVICE_ERR_INTERNAL;
    }
}

static server *create(const g4v_service_options *o) {
    server *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->a = *o;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->idle, NULL);
    fe_cpu_gate_init(&s->gate, 0); /* one thread per core (docs/SERVICE.md "Threads") */
    return s;
}

/* The model, the cache, the routes, the wings. 0 or a G4V_SERVICE_ERR_* (printed). */
static int setup(server *s) {
    g4v_service_options *a = &s->a;
    char msg[1024];
    /* first, before the models load (seconds): a bad key, or a reachable --host without one */
    int st = svc_auth_setup(s);
    if (st) return st;
    if (!s->api_key && !a->insecure_no_auth && a->host && !svc_host_is_loopback(a->host)) {
        svc_auth_may_listen(s, 0, a->host); /* says why and what to do */
        return G4V_SERVICE_ERR_USAGE;
    }
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.budget = a->tokens;
    mo.math = a->math;
    mo.apply_exif = !a->no_exif;
    mo.resize = a->resize;
    mo.pack_weights = !a->in_place_weights; /* a server keeps its model: packed is faster */
    if (a->max_body > mo.max_file_bytes) mo.max_file_bytes = a->max_body;
    st = g4v_model_load(a->model, &mo, &s->model, msg, sizeof msg);
    if (st) {
        fprintf(stderr, "g4v serve: model %s: %s\n", a->model, msg);
        return model_failure(st);
    }
    g4v_model_get_info(s->model, &s->info, NULL, 0);
    double t0 = fe_now_s();
    if ((st = g4v_model_fingerprint(s->model, s->fingerprint, sizeof s->fingerprint, msg,
                                    sizeof msg))) {
        fprintf(stderr, "g4v serve: model fingerprint: %s\n", msg);
        return G4V_SERVICE_ERR_INTERNAL;
    }
    fprintf(stderr, "g4v serve: model %s (%s), fingerprint %s (%.2f s)\n", a->model,
            s->info.variant, s->fingerprint, fe_now_s() - t0);
    if (a->cache) {
        g4v_cache_options co;
        g4v_cache_options_init(&co);
        if (a->cache_max_bytes) co.max_bytes = a->cache_max_bytes;
        if ((st = g4v_cache_open(a->cache, &co, &s->cache, msg, sizeof msg))) {
            fprintf(stderr, "g4v serve: --cache: %s\n", msg);
            return G4V_SERVICE_ERR_LISTEN;
        }
    }
    for (const svc_wing *const *w = svc_wings; *w; w++) {
        if ((*w)->wanted && !(*w)->wanted(a)) { /* its paths say how to turn it on */
            for (int i = 0; (*w)->off_paths[i]; i++)
                if (svc_route_add_off(s, (*w)->off_paths[i], (*w)->off_text))
                    return G4V_SERVICE_ERR_INTERNAL;
            continue;
        }
        if (s->nwings == SVC_MAX_WINGS) return G4V_SERVICE_ERR_INTERNAL;
        s->wings[s->nwings].w = *w;
        if ((st = (*w)->open(s, &s->wings[s->nwings++].state))) return st;
    }
    return svc_routes_core(s) ? G4V_SERVICE_ERR_INTERNAL : G4V_SERVICE_OK;
}

/* Everything setup made (the daemon already stopped), and s itself. */
static void teardown(server *s) {
    svc_pools_stop(s);
    for (int w = s->nwings - 1; w >= 0; w--)
        if (s->wings[w].w->close) s->wings[w].w->close(s, s->wings[w].state);
    g4v_cache_close(s->cache);
    g4v_model_free(s->model);
    svc_auth_free(s);
    pthread_cond_destroy(&s->idle);
    pthread_mutex_destroy(&s->mu);
    fe_cpu_gate_destroy(&s->gate);
    free(s);
}

int g4v_service_open(const g4v_service_options *o, g4v_service **out) {
    *out = NULL;
    server *s = create(o);
    if (!s) return G4V_SERVICE_ERR_INTERNAL;
    int rc = setup(s);
    if (!rc && svc_daemon_start(s, -1, NULL)) rc = G4V_SERVICE_ERR_INTERNAL;
    if (rc) {
        teardown(s);
        return rc;
    }
    *out = s;
    return G4V_SERVICE_OK;
}

void g4v_service_close(g4v_service *s) {
    if (!s) return;
    if (s->daemon) MHD_stop_daemon(s->daemon);
    teardown(s);
}

long g4v_service_wait_idle(g4v_service *s, double seconds) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long ns = until.tv_nsec + (long)((seconds - (double)(time_t)seconds) * 1e9);
    until.tv_sec += (time_t)seconds + ns / 1000000000L;
    until.tv_nsec = ns % 1000000000L;
    pthread_mutex_lock(&s->mu);
    while (s->inflight || svc_pools_busy(s))
        if (pthread_cond_timedwait(&s->idle, &s->mu, &until) == ETIMEDOUT) break;
    long inflight = s->inflight;
    pthread_mutex_unlock(&s->mu);
    return inflight;
}

int g4v_service_run(const g4v_service_options *o) {
    /* Every thread created from here on inherits this mask: the signals wait for sigwait below. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    server *s = create(o);
    if (!s) return G4V_SERVICE_ERR_INTERNAL;
    int rc = setup(s);
    char where[128] = "";
    int loopback = 0;
    int fd = rc ? -1 : svc_listen(s->a.host, s->a.port, where, sizeof where, &loopback);
    if (!rc && fd < 0) rc = G4V_SERVICE_ERR_LISTEN;
    if (!rc && svc_auth_may_listen(s, loopback, where)) { /* closed before serving anyone */
        close(fd);
        rc = G4V_SERVICE_ERR_USAGE;
    }
    if (!rc && svc_daemon_start(s, fd, where)) rc = G4V_SERVICE_ERR_INTERNAL;
    if (rc) {
        teardown(s);
        return rc;
    }
    char parts[256] = "";
    size_t n = 0;
    for (int w = 0; w < s->nwings; w++) {
        char part[128] = "";
        if (s->wings[w].w->summary) s->wings[w].w->summary(s, s->wings[w].state, part, sizeof part);
        if (part[0] && n < sizeof parts)
            n += (size_t)snprintf(parts + n, sizeof parts - n, "%s%s", n ? ", " : "", part);
    }
    printf("g4v serve: listening on %s (%s%s%s%s)\n", where, parts, s->cache ? ", cache " : "",
           s->cache ? s->a.cache : "", s->api_key ? ", API key required" : "");
    fflush(stdout);
    int sig = 0;
    while (sigwait(&stop, &sig)) {
    }
    fprintf(stderr, "g4v serve: %s: finishing the requests in flight\n",
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    /* No new connections; the ones open may still send requests, which get 503. */
    /* shut down now (new connections are refused), closed only once the daemon has stopped: a
     * worker may still be removing it from its epoll set, and a closed fd number can be reused
     * (ThreadSanitizer saw close racing MHD's epoll_ctl) */
    MHD_socket lfd = MHD_quiesce_daemon(s->daemon);
    if (lfd != MHD_INVALID_SOCKET) shutdown(lfd, SHUT_RDWR);
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += s->a.drain_s;
    int timed_out = 0;
    while (svc_pools_busy(s) || (s->inflight && !timed_out))
        timed_out = pthread_cond_timedwait(&s->idle, &s->mu, &deadline) == ETIMEDOUT || timed_out;
    long left = s->inflight;
    pthread_mutex_unlock(&s->mu);
    if (left)
        fprintf(stderr, "g4v serve: closing %ld connections still sending after %d s\n", left,
                s->a.drain_s);
    MHD_stop_daemon(s->daemon);
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
    teardown(s);
    fprintf(stderr, "g4v serve: stopped\n");
    return G4V_SERVICE_OK;
}
