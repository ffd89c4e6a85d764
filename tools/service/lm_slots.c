/* lm_slots.c - the language model's slots (--lm-slots K): K chat sessions (tools/chat), each its
 * own libllama context over the same text model, sharing the service's vision model and one
 * feature cache (--cache, else a private one removed at exit), so an image sent again in a later
 * turn of a conversation is read from the cache, not encoded again. A complete chat request is
 * admitted (429 with Retry-After when --max-queue requests already wait, 503 while stopping)
 * and its connection suspended; a slot's worker replays the conversation (the API is stateless:
 * every request carries all its turns), answers errors before any byte of an answer, then
 * generates: into one JSON answer, or as server-sent events while the tokens come.
 *
 * A client that hangs up frees its slot at once: the worker polls the socket for POLLRDHUP after
 * every token (libmicrohttpd sees nothing of a suspended connection), and a stream's writer sees
 * the request completed. --request-timeout bounds a request from its arrival to its last token.
 */
#define _GNU_SOURCE /* POLLRDHUP, memmem, nftw */
#include "chat_service.h"
#include "frontend.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef G4V_HAVE_LLAMA

int svc_lm_start(server *s) {
    (void)s;
    fprintf(stderr, "g4v serve: --lm: this g4v was built without llama.cpp's libllama\n"
                    "  (scripts/build-llama.sh, then reconfigure; docs/CHAT.md)\n");
    return G4V_SERVICE_ERR_USAGE;
}
void svc_lm_stop(server *s) { (void)s; }
enum MHD_Result svc_lm_enqueue(request *q, chat_job *j) {
    chat_job_unref(j);
    return svc_answer(q, MHD_HTTP_INTERNAL_SERVER_ERROR, NULL);
}

#else

#include "chat_session.h"

#include <ftw.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

enum { LARGEST_BUDGET = 1120 }; /* the last of G4V_BUDGETS: a slot takes any */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* The client hung up: libmicrohttpd completed the request, or the socket says so. */
static int client_gone(chat_job *j) {
    pthread_mutex_lock(&j->mu);
    int gone = j->gone;
    if (!gone && j->fd >= 0) { /* under j->mu: the request cannot complete, the fd stays ours */
        struct pollfd p = {.fd = j->fd, .events = POLLRDHUP};
        gone = poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
    }
    pthread_mutex_unlock(&j->mu);
    return gone;
}

/* Answers the still-suspended request (before any byte of a stream) and resumes it. */
static void reply(server *s, chat_job *j, int code, struct MHD_Response *resp) {
    request *q = j->q;
    j->q = NULL;
    q->code = code;
    q->resp = resp;
    pthread_mutex_lock(&s->mu);
    q->state = ST_DONE;
    pthread_mutex_unlock(&s->mu);
    MHD_resume_connection(q->conn); /* svc_handle queues q->resp */
}

static void reply_fail(server *s, chat_job *j, const chat_fail *f) {
    struct MHD_Response *r = chat_error_response(f);
    reply(s, j, r ? f->http : MHD_HTTP_INTERNAL_SERVER_ERROR, r);
}

/* What generation keeps: the answer so far, what of it was streamed, why it stopped. */
typedef struct gen {
    chat_job *j;
    double deadline, first_s;
    char *text;
    size_t len, cap, sent, scanned, hold;
    const char *why; /* set when we stopped it: "stop_string", "timeout", "client_gone" */
} gen;

static int on_piece(const char *p, size_t n, void *user) {
    gen *g = user;
    chat_job *j = g->j;
    if (!g->first_s) g->first_s = g4v_now_s();
    if (g->len + n + 1 > g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 1024;
        while (cap < g->len + n + 1)
            cap *= 2;
        char *t = realloc(g->text, cap);
        if (!t) {
            g->why = "out_of_memory";
            return 1;
        }
        g->text = t;
        g->cap = cap;
    }
    memcpy(g->text + g->len, p, n);
    g->len += n;
    g->text[g->len] = 0;
    /* a stop string ends the answer before it (searched where it may have begun) */
    size_t from = g->scanned > g->hold ? g->scanned - g->hold : 0, cut = g->len;
    for (int i = 0; i < j->n_stop; i++) {
        char *hit = memmem(g->text + from, g->len - from, j->stop[i], strlen(j->stop[i]));
        if (hit && (size_t)(hit - g->text) < cut) cut = (size_t)(hit - g->text);
    }
    g->scanned = g->len;
    if (cut < g->len) {
        g->len = cut;
        g->text[cut] = 0;
        g->why = "stop_string";
        return 1;
    }
    if (j->stream) { /* what can no longer become a stop string nor split a character */
        size_t safe = chat_utf8_safe_len(g->text, g->len > g->hold ? g->len - g->hold : 0);
        if (safe > g->sent) {
            if (chat_stream_text(j, g->text + g->sent, safe - g->sent)) {
                g->why = "client_gone";
                return 1;
            }
            g->sent = safe;
        }
    }
    if (client_gone(j)) {
        g->why = "client_gone";
        return 1;
    }
    if (g4v_now_s() > g->deadline) {
        g->why = "timeout";
        return 1;
    }
    return 0;
}

/* Maps a chat_session failure to the answer. */
static void session_fail(chat_fail *f, int rc, const char *err) {
    if (rc == CHAT_ERR_INPUT && strstr(err, "does not fit in the context"))
        chat_fail_set(f, 400, "invalid_request_error", "context_length_exceeded", "%s", err);
    else if (rc == CHAT_ERR_INPUT)
        chat_fail_set(f, 400, "invalid_request_error", "invalid_image", "%s", err);
    else if (rc == CHAT_ERR_USAGE)
        chat_fail_set(f, 400, "invalid_request_error", "invalid_parameter", "%s", err);
    else
        chat_fail_set(f, 500, "server_error", "internal_error", "%s", err);
}

/* Feeds every turn of the conversation; the last (a user turn) is left to generate. */
static int replay(server *s, chat_session *cs, chat_job *j, chat_usage *u, chat_fail *f) {
    (void)s;
    char err[1024] = "";
    chat_options o;
    chat_options_init(&o);
    o.system = j->system;
    o.temp = j->temperature;
    o.top_k = j->top_k;
    o.top_p = j->top_p;
    o.seed = j->seed;
    o.max_tokens = j->max_tokens;
    o.budget = j->budget;
    int rc = chat_session_restart(cs, &o, err, sizeof err);
    for (int t = 0; !rc && t < j->n_turns; t++) {
        chat_turn_in *ti = &j->turns[t];
        if (ti->role == CHAT_ROLE_ASSISTANT) {
            rc = chat_session_feed_answer(cs, ti->text, err, sizeof err);
            continue;
        }
        chat_media *m = calloc((size_t)(ti->n_img ? ti->n_img : 1), sizeof *m);
        if (!m) {
            chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
            return -1;
        }
        for (int i = 0; i < ti->n_img; i++) {
            m[i].path = ti->img[i].path ? ti->img[i].path : ti->img[i].name;
            m[i].data = ti->img[i].data;
            m[i].size = ti->img[i].size;
            m[i].is_video = ti->img[i].is_video;
        }
        chat_turn_result r;
        rc = chat_session_prefill(cs, m, ti->n_img, ti->text, &r, err, sizeof err);
        free(m);
        if (!rc) {
            u->image_tokens += r.n_prompt_rows;
            u->prefill_s += r.prefill_s + r.encode_s;
            for (int i = 0; i < r.n_media; i++)
                r.media[i].cache_hit ? u->images_cached++ : u->images_encoded++;
        }
        chat_turn_result_free(&r);
    }
    if (rc) {
        session_fail(f, rc, err);
        return -1;
    }
    u->prompt_tokens = chat_session_n_past(cs);
    return 0;
}

/* Counts the request for /metrics and frees its slot, before its answer is released. */
static void count(server *s, const chat_usage *u, const char *why, int ok) {
    lm_pool *p = s->lm;
    pthread_mutex_lock(&s->mu);
    if (!ok) {
        p->failed++;
    } else {
        p->requests++;
        p->prompt_tokens += (uint64_t)u->prompt_tokens;
        p->gen_tokens += (uint64_t)u->completion_tokens;
        p->prefill_s += u->prefill_s;
        p->gen_s += u->generate_s;
        p->images_encoded += (uint64_t)u->images_encoded;
        p->images_cached += (uint64_t)u->images_cached;
        static const double le[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                    0.5,   1,      2.5,   5,    10,    30,   60};
        _Static_assert(sizeof le / sizeof le[0] == SVC_NBUCKETS, "buckets");
        int b = 0;
        while (b < SVC_NBUCKETS && u->ttft_s > le[b])
            b++;
        p->ttft_hist[b]++;
        p->ttft_sum += u->ttft_s;
        p->ttft_count++;
    }
    if (why && !strcmp(why, "client_gone")) p->cancelled++;
    if (why && !strcmp(why, "timeout")) p->timeouts++;
    p->busy--; /* the session is done with: a client that sends its next request as soon as
                  it has this answer must find the slot free */
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
}

static void run(server *s, chat_session *cs, chat_job *j) {
    chat_fail f;
    chat_usage u = {0};
    if (client_gone(j)) { /* hung up while waiting: nobody to answer */
        count(s, &u, "client_gone", 0);
        reply(s, j, 499, MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
        return;
    }
    double deadline = j->t0 + s->a.request_timeout_s;
    if (g4v_now_s() > deadline) {
        chat_fail_set(&f, MHD_HTTP_SERVICE_UNAVAILABLE, "server_error", "timeout",
                      "waited more than --request-timeout %d s for a slot", s->a.request_timeout_s);
        count(s, &u, "timeout", 0);
        reply_fail(s, j, &f);
        return;
    }
    if (replay(s, cs, j, &u, &f)) {
        count(s, &u, NULL, 0);
        reply_fail(s, j, &f);
        return;
    }
    if (j->stream) {
        struct MHD_Response *r = chat_stream_response(j);
        if (!r) {
            chat_fail_set(&f, 500, "server_error", "out_of_memory", "out of memory");
            count(s, &u, NULL, 0);
            reply_fail(s, j, &f);
            return;
        }
        reply(s, j, MHD_HTTP_OK, r);
        chat_stream_role(j);
    }
    gen g = {.j = j, .deadline = deadline};
    for (int i = 0; i < j->n_stop; i++) /* the longest stop string, less one, is held back */
        if (strlen(j->stop[i]) - 1 > g.hold) g.hold = strlen(j->stop[i]) - 1;
    chat_turn_result r;
    memset(&r, 0, sizeof r);
    char err[1024] = "";
    int rc = chat_session_generate(cs, on_piece, &g, &r, err, sizeof err);
    double end = g4v_now_s();
    u.completion_tokens = r.n_generated;
    u.generate_s = r.generate_s;
    u.ttft_s = (g.first_s ? g.first_s : end) - j->t0;
    u.stop = g.why ? g.why : r.stop;
    u.finish_reason = !strcmp(u.stop, "end_of_turn") || !strcmp(u.stop, "stop_string") ? "stop"
                                                                                        : "length";
    chat_turn_result_free(&r);
    int gone = g.why && !strcmp(g.why, "client_gone");
    if (rc && !gone) session_fail(&f, rc, err);
    count(s, &u, g.why, !rc && !gone);
    if (j->stream) {
        if (gone || rc) {
            chat_stream_abort(j);
        } else {
            chat_stream_text(j, g.text + g.sent, g.len - g.sent);
            chat_stream_end(j, &u);
        }
    } else if (gone) {
        reply(s, j, 499, MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
    } else if (rc) {
        reply_fail(s, j, &f);
    } else {
        size_t len = 0;
        char *body = chat_completion_json(j, g.text ? g.text : "", g.len, &u, &len);
        reply(s, j, MHD_HTTP_OK, body ? svc_buffer_response(body, len, "application/json") : NULL);
    }
    free(g.text);
}

typedef struct slot_arg {
    server *s;
    chat_session *cs;
} slot_arg;

static void *slot_main(void *arg) {
    slot_arg a = *(slot_arg *)arg;
    free(arg);
    server *s = a.s;
    lm_pool *p = s->lm;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!p->head && !p->exit)
            pthread_cond_wait(&p->work, &s->mu);
        chat_job *j = p->head;
        if (!j) { /* exit, and nothing left */
            pthread_mutex_unlock(&s->mu);
            break;
        }
        p->head = j->next;
        if (!p->head) p->tail = NULL;
        p->queued--;
        p->busy++;
        pthread_mutex_unlock(&s->mu);
        run(s, a.cs, j); /* frees the slot (count) before it answers */
        chat_job_unref(j);
    }
    return NULL;
}

enum MHD_Result svc_lm_enqueue(request *q, chat_job *j) {
    server *s = q->s;
    lm_pool *p = s->lm;
    chat_fail f;
    pthread_mutex_lock(&s->mu);
    if (s->stopping) {
        pthread_mutex_unlock(&s->mu);
        chat_job_unref(j);
        chat_fail_set(&f, MHD_HTTP_SERVICE_UNAVAILABLE, "server_error", "shutting_down",
                      "the server is shutting down");
        return chat_answer_error(q, &f);
    }
    /* requests that would wait: those queued plus this one, less the idle slots */
    if (p->queued + 1 - (p->n - p->busy) > s->a.max_queue) {
        int queued = p->queued, busy = p->busy;
        p->rejected++;
        pthread_mutex_unlock(&s->mu);
        chat_job_unref(j);
        chat_fail_set(&f, MHD_HTTP_TOO_MANY_REQUESTS, "rate_limit_error", "queue_full",
                      "all %d slots are busy and %d requests are waiting (--max-queue %d); "
                      "retry later",
                      busy, queued, s->a.max_queue);
        return chat_answer_error(q, &f);
    }
    j->refs++; /* the request's; the queue keeps the parser's */
    j->q = q;
    q->chat = j;
    q->state = ST_QUEUED;
    j->next = NULL;
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    p->queued++;
    s->chat_active++;
    MHD_suspend_connection(q->conn);
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&s->mu);
    return MHD_YES;
}

int svc_lm_start(server *s) {
    const g4v_service_options *a = &s->a;
    lm_pool *p = calloc(1, sizeof *p);
    if (!p) return G4V_SERVICE_ERR_INTERNAL;
    s->lm = p;
    pthread_cond_init(&p->work, NULL);
    char msg[1024];
    if (s->cache) {
        p->cache = s->cache;
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(p->cache_dir, sizeof p->cache_dir, "%s/g4v-serve-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(p->cache_dir)) {
            fprintf(stderr, "g4v serve: cannot create a feature cache under %s\n",
                    tmp && *tmp ? tmp : "/tmp");
            p->cache_dir[0] = 0;
            return G4V_SERVICE_ERR_LISTEN;
        }
        p->cache_private = 1;
        if (g4v_cache_open(p->cache_dir, NULL, &p->cache, msg, sizeof msg)) {
            fprintf(stderr, "g4v serve: feature cache: %s\n", msg);
            return G4V_SERVICE_ERR_LISTEN;
        }
    }
    int threads = a->lm_threads;
    if (!threads) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        threads = cpus > a->lm_slots ? (int)(cpus / a->lm_slots) : 1;
    }
    p->threads = threads;
    p->sess = calloc((size_t)a->lm_slots, sizeof *p->sess);
    p->th = calloc((size_t)a->lm_slots, sizeof *p->th);
    if (!p->sess || !p->th) return G4V_SERVICE_ERR_INTERNAL;
    double t0 = g4v_now_s();
    for (int i = 0; i < a->lm_slots; i++) {
        chat_options o;
        chat_options_init(&o);
        o.lm_path = a->lm;
        o.vision_path = a->model;
        o.vision_model = s->model;
        o.cache = p->cache;
        o.n_ctx = a->lm_ctx;
        o.threads = threads;
        o.budget = a->tokens;
        o.max_budget = LARGEST_BUDGET;
        o.math = a->math; /* the shared model's mode, which the session checks */
        chat_session *cs = NULL;
        int rc = chat_session_open(&o, &cs, msg, sizeof msg);
        if (rc) {
            fprintf(stderr, "g4v serve: --lm %s: %s\n", a->lm, msg);
            return rc == CHAT_ERR_USAGE ? G4V_SERVICE_ERR_USAGE
                   : rc == CHAT_ERR_MODEL ? G4V_SERVICE_ERR_MODEL
                                          : G4V_SERVICE_ERR_INTERNAL;
        }
        p->sess[i] = cs;
        slot_arg *sa = malloc(sizeof *sa);
        if (!sa) return G4V_SERVICE_ERR_INTERNAL;
        *sa = (slot_arg){s, cs};
        if (pthread_create(&p->th[i], NULL, slot_main, sa)) {
            free(sa);
            fprintf(stderr, "g4v serve: cannot start chat slot %d\n", i);
            return G4V_SERVICE_ERR_INTERNAL;
        }
        p->n++;
    }
    fprintf(stderr, "g4v serve: chat model %s: %d slots x %d threads, %d context tokens (%.2f s)\n",
            a->lm, p->n, threads, a->lm_ctx, g4v_now_s() - t0);
    return G4V_SERVICE_OK;
}

void svc_lm_stop(server *s) {
    lm_pool *p = s->lm;
    if (!p) return;
    pthread_mutex_lock(&s->mu);
    p->exit = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    for (int i = 0; p->sess && i < s->a.lm_slots; i++)
        chat_session_close(p->sess[i]);
    if (p->cache_private) {
        g4v_cache_close(p->cache);
        if (p->cache_dir[0]) nftw(p->cache_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    free(p->sess);
    free(p->th);
    pthread_cond_destroy(&p->work);
    free(p);
    s->lm = NULL;
}

#endif
