/* chat_slots.c - the job kind "chat" (core/core.h, svc_kind): the language model's slots
 * (--lm-slots K) are the workers of the core's queue, each owning one chat session (chat/)
 * on a sequence of the one text model's one context (chat_engine.h: every answering slot's next
 * token in one decode call), sharing the service's vision model and one
 * feature cache (--cache, else a private one removed at exit), so an image sent again in a later
 * turn of a conversation is read from the cache, not encoded again. A complete chat request is
 * admitted by the core (429 with Retry-After when --max-queue requests already wait, 503 while
 * stopping: answered here in the OpenAI error format) and its connection suspended; a slot's
 * worker replays the conversation (chat_replay.c; the API is stateless:
 * every request carries all its turns), answers errors before any byte of an answer, then
 * generates (chat_generate.c): into one JSON answer, or as server-sent events while the tokens
 * come. This file keeps the kind's life cycle: the slots opened and closed, a request's run in
 * named steps, the slot it takes and what it counts; chat_slots_impl.h lists the others.
 *
 * A client that hangs up frees its slot at once: the worker polls the socket for POLLRDHUP after
 * every token (chat_generate.c; libmicrohttpd sees nothing of a suspended connection), and a
 * stream's writer sees the request completed. --request-timeout bounds a request from its
 * arrival to its last token.
 */
#include "chat/chat_wing.h"
#include "frontend.h"
#include "tempdir.h"

#include <stdio.h>
#include <stdlib.h>

#ifndef G4V_HAVE_LLAMA

int chat_slots_open(chat_wing *cw) {
    (void)cw;
    fprintf(stderr, "g4v serve: --lm: this g4v was built without llama.cpp's libllama\n"
                    "  (scripts/build-llama.sh, then reconfigure; docs/CHAT.md)\n");
    return G4V_SERVICE_ERR_USAGE;
}
void chat_slots_close(chat_wing *cw) { (void)cw; }

#else

#include "chat_engine.h"
#include "chat_prompt_cache.h"
#include "chat_slots_impl.h"

#include <string.h>

enum { LARGEST_BUDGET = 1120 }; /* the last of G4V_BUDGETS: a slot takes any */

/* Answers the still-suspended request (before any byte of a stream) and resumes it. */
static void reply(chat_job *j, int code, struct MHD_Response *resp) {
    request *q = j->q;
    j->q = NULL;
    svc_reply(q, code, resp); /* svc_handle queues resp */
}

static void reply_fail(chat_job *j, const chat_fail *f) {
    struct MHD_Response *r = chat_error_response(f);
    reply(j, r ? f->http : MHD_HTTP_INTERNAL_SERVER_ERROR, r);
}

/* The free slot the job goes to (chat_affinity.c); a worker always finds one: there are as many
 * slots as workers. */
static chat_slot *slot_take(chat_wing *cw, const chat_job *j) {
    server *s = cw->s;
    pthread_mutex_lock(&s->mu);
    int i = chat_affinity_pick(cw->slots, cw->n_slots, j);
    chat_slot *sl = i >= 0 ? &cw->slots[i] : NULL;
    if (sl) {
        sl->busy = 1;
        sl->last_used = ++cw->use_clock;
    }
    pthread_mutex_unlock(&s->mu);
    return sl;
}

/* What the slot's sequence holds now, for the next request's choice: the request's turns once
 * they were fed, and the answer when it was given whole. Under the server's mutex. */
static void slot_keys(chat_slot *sl, const chat_job *j, int fed, const char *answer, size_t n) {
    sl->n_keys = 0;
    if (!fed) return;
    memcpy(sl->keys, j->keys, (size_t)j->n_keys * sizeof *sl->keys);
    sl->n_keys = j->n_keys;
    if (answer && !j->prefill && j->keys_complete && j->n_keys > 0)
        sl->keys[sl->n_keys++] = chat_answer_key(j->keys[j->n_keys - 1], answer, n);
}

/* Counts the request for /metrics and frees its slot, before its answer is released. */
static void count(svc_worker *w, chat_slot *sl, const chat_job *j, int fed, const char *answer,
                  size_t answer_len, const chat_usage *u, const char *why, int ok) {
    chat_wing *cw = w->p->ctx;
    server *s = cw->s;
    pthread_mutex_lock(&s->mu);
    if (sl) {
        slot_keys(sl, j, fed, ok ? answer : NULL, answer_len);
        sl->busy = 0;
    }
    if (!ok) {
        cw->failed++;
    } else {
        cw->requests++;
        cw->prompt_tokens += (uint64_t)u->prompt_tokens;
        cw->gen_tokens += (uint64_t)u->completion_tokens;
        cw->prefill_s += u->prefill_s;
        cw->gen_s += u->generate_s;
        cw->images_encoded += (uint64_t)u->images_encoded;
        cw->images_cached += (uint64_t)u->images_cached;
        cw->images_reused += (uint64_t)u->images_reused;
        cw->cached_tokens += (uint64_t)u->cached_tokens;
        svc_hist_add(&cw->ttft, u->ttft_s);
    }
    if (why && !strcmp(why, "client_gone")) cw->cancelled++;
    if (why && !strcmp(why, "timeout")) cw->timeouts++;
    pthread_mutex_unlock(&s->mu);
    svc_worker_free(w); /* the session is done with: a client that sends its next request as
                           soon as it has this answer must find the slot free */
}

/* Before a slot: a client that hung up while it waited, a request past --request-timeout, or
 * (never) no free slot is answered and counted here. The slot it takes, or NULL. */
static chat_slot *take(svc_worker *w, chat_wing *cw, chat_job *j) {
    server *s = j->s;
    chat_fail f;
    chat_usage u = {0};
    if (chat_client_gone(j)) { /* hung up while waiting: nobody to answer */
        count(w, NULL, j, 0, NULL, 0, &u, "client_gone", 0);
        reply(j, 499, MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
        return NULL;
    }
    double deadline = j->t0 + s->a.request_timeout_s;
    if (fe_now_s() > deadline) {
        chat_fail_set(&f, MHD_HTTP_SERVICE_UNAVAILABLE, "server_error", "timeout",
                      "waited more than --request-timeout %d s for a slot", s->a.request_timeout_s);
        count(w, NULL, j, 0, NULL, 0, &u, "timeout", 0);
        reply_fail(j, &f);
        return NULL;
    }
    chat_slot *sl = slot_take(cw, j);
    if (!sl) {
        chat_fail_set(&f, 500, "server_error", "internal_error", "no free language-model slot");
        count(w, NULL, j, 0, NULL, 0, &u, NULL, 0);
        reply_fail(j, &f);
        return NULL;
    }
    return sl;
}

/* The conversation replayed on the slot's session and, for a stream, the response begun (its
 * role sent). 0, or -1 answered and counted. */
static int begin(svc_worker *w, chat_slot *sl, chat_job *j, chat_usage *u) {
    chat_wing *cw = w->p->ctx;
    chat_fail f;
    if (chat_replay(cw, sl->cs, j, u, &f)) {
        count(w, sl, j, 0, NULL, 0, u, NULL, 0);
        reply_fail(j, &f);
        return -1;
    }
    if (j->stream) {
        struct MHD_Response *r = chat_stream_response(j);
        if (!r) {
            chat_fail_set(&f, 500, "server_error", "out_of_memory", "out of memory");
            count(w, sl, j, 1, NULL, 0, u, NULL, 0);
            reply_fail(j, &f);
            free(u->prompt_text);
            free(u->prompt_ids);
            return -1;
        }
        reply(j, MHD_HTTP_OK, r);
        chat_out_role(j);
    }
    return 0;
}

/* The answer, once the slot is counted and free: a stream's end (or its end without [DONE]), or
 * the whole answer, a 499 for a client gone, the error. */
static void deliver(chat_job *j, const chat_answers *a, const chat_usage *u) {
    const gen *g = &a->gs[0];
    if (j->stream) {
        if (a->gone || a->rc) {
            chat_stream_abort(j);
        } else {
            chat_usage ue = *u;
            ue.finish_reason = a->fin[a->done - 1];
            chat_out_end(j, &ue);
        }
    } else if (a->gone) {
        reply(j, 499, MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT));
    } else if (a->rc) {
        reply_fail(j, &a->f);
    } else {
        size_t len = 0;
        char *body = j->responses
                         ? chat_response_json(j, g->text ? g->text : "", g->len, u, &len)
                         : chat_completion_json(j, g->text ? g->text : "", g->len, u, &len);
        reply(j, MHD_HTTP_OK, body ? svc_buffer_response(body, len, "application/json") : NULL);
    }
}

static void run(svc_worker *w, request *q, void *job) {
    (void)q; /* j->q until the job replies */
    chat_job *j = job;
    chat_wing *cw = w->p->ctx;
    chat_usage u = {0};
    chat_slot *sl = take(w, cw, j);
    if (!sl || begin(w, sl, j, &u)) return;
    chat_answers a;
    chat_generate(j, sl->cs, j->t0 + j->s->a.request_timeout_s, &a, &u);
    const gen *g = &a.gs[0];
    const char *why = a.gone ? "client_gone" : a.gs[a.done ? a.done - 1 : 0].why;
    /* the slot's keys take the answer only when the context holds choice 0's */
    count(w, sl, j, 1, a.done == 1 && g->text ? g->text : a.done == 1 ? "" : NULL, g->len, &u,
          why, !a.rc && !a.gone);
    deliver(j, &a, &u);
    chat_answers_free(&a);
    free(u.prompt_text);
    free(u.prompt_ids);
}

static int slot_open(void *ctx, int i, void **state) {
    chat_wing *cw = ctx;
    server *s = cw->s;
    const g4v_service_options *a = &s->a;
    char msg[1024];
    chat_options o;
    chat_options_init(&o);
    o.lm_path = a->lm;
    o.vision_path = a->model;
    o.vision_model = s->model;
    o.cache = cw->cache;
    o.n_ctx = a->lm_ctx;
    o.threads = cw->threads;
    o.vision = chat_vision_of(cw, i); /* the encode wing's contexts, not one of its own */
    o.engine = cw->engine;
    o.seq = i;
    o.budget = a->tokens;
    o.max_budget = LARGEST_BUDGET;
    o.math = a->math; /* the shared model's mode, which the session checks */
    o.no_prompt_reuse = a->no_prompt_reuse;
    o.chat_template = a->chat_template;
    chat_session *cs = NULL;
    int rc = chat_session_open(&o, &cs, msg, sizeof msg);
    if (rc) {
        fprintf(stderr, "g4v serve: --lm %s: %s\n", a->lm, msg);
        return rc == CHAT_ERR_USAGE ? G4V_SERVICE_ERR_USAGE
               : rc == CHAT_ERR_MODEL ? G4V_SERVICE_ERR_MODEL
                                      : G4V_SERVICE_ERR_INTERNAL;
    }
    pthread_mutex_lock(&s->mu);
    cw->slots[i].cs = cs;
    pthread_mutex_unlock(&s->mu);
    *state = &cw->slots[i];
    return 0;
}

static void slot_close(void *ctx, void *state) {
    chat_wing *cw = ctx;
    chat_slot *sl = state;
    if (cw->pc && cw->s->a.cache && sl->cs) /* kept across the restart */
        chat_cache_use_save(cw, sl->cs);
    pthread_mutex_lock(&cw->s->mu);
    chat_session *cs = sl->cs;
    sl->cs = NULL;
    pthread_mutex_unlock(&cw->s->mu);
    chat_session_close(cs);
}

/* The request's hold on the job, taken before a slot can see it; the queue keeps the
 * parser's (released after run). */
static void admitted(request *q, void *job) {
    chat_job *j = job;
    j->refs++;
    j->q = q;
}

static void release(void *job) { chat_job_unref(job); }

static enum MHD_Result refuse(request *q, void *job, int code, int busy, int queued, int limit) {
    chat_fail f;
    chat_job_unref(job);
    if (code == MHD_HTTP_SERVICE_UNAVAILABLE)
        chat_fail_set(&f, code, "server_error", "shutting_down", "the server is shutting down");
    else
        chat_fail_set(&f, code, "rate_limit_error", "queue_full",
                      "all %d slots are busy and %d requests are waiting (--max-queue %d); "
                      "retry later",
                      busy, queued, limit);
    return chat_answer_error(q, &f);
}

static const svc_kind chat_kind = {
    .name = "chat",
    .worker_name = "chat slot",
    .hold_until_completed = 1, /* a stream goes on after the slot is free */
    .worker_open = slot_open,
    .worker_close = slot_close,
    .admitted = admitted,
    .run = run,
    .release = release,
    .refuse = refuse,
};

int chat_slots_open(chat_wing *cw) {
    server *s = cw->s;
    const g4v_service_options *a = &s->a;
    char msg[1024];
    if (s->cache) {
        cw->cache = s->cache;
    } else {
        const char *where = NULL;
        if (fe_temp_dir(cw->cache_dir, sizeof cw->cache_dir, "g4v-serve", &where)) {
            fprintf(stderr, "g4v serve: cannot create a feature cache under %s\n", where);
            return G4V_SERVICE_ERR_LISTEN;
        }
        cw->cache_private = 1;
        if (g4v_cache_open(cw->cache_dir, NULL, &cw->cache, msg, sizeof msg)) {
            fprintf(stderr, "g4v serve: feature cache: %s\n", msg);
            return G4V_SERVICE_ERR_LISTEN;
        }
    }
    int threads = cw->threads = svc_threads_each(a->lm_threads, 1);
    cw->slots = calloc((size_t)a->lm_slots, sizeof *cw->slots);
    if (!cw->slots) return G4V_SERVICE_ERR_INTERNAL;
    cw->n_slots = a->lm_slots;
    double t0 = fe_now_s();
    chat_engine_options eo = {.lm_path = a->lm,
                              .n_seq = a->lm_slots,
                              .n_ctx_seq = a->lm_ctx,
                              .n_batch = LARGEST_BUDGET, /* a whole image of any budget */
                              .step_tokens = a->lm_step_tokens,
                              .one_per_step = a->lm_no_batching,
                              .threads = threads,
                              .verbose = 0,
                              .gate = &s->gate}; /* the CPU budget, shared with the encodes */
    int rc = chat_vision_open(cw);
    if (rc) return rc;
    if (chat_engine_open(&eo, &cw->engine, msg, sizeof msg)) {
        fprintf(stderr, "g4v serve: --lm %s: %s\n", a->lm, msg);
        return G4V_SERVICE_ERR_MODEL;
    }
    rc = svc_pool_start(s, &chat_kind, cw, a->lm_slots, a->max_queue, 1, &cw->pool);
    if (!rc) rc = chat_cache_use_open(cw);
    if (rc) return rc;
    chat_session_info info; /* what chat_precheck checks requests against */
    chat_session_get_info(cw->slots[0].cs, &info);
    cw->lm = chat_session_llama_model(cw->slots[0].cs);
    cw->n_ctx = info.n_ctx;
    cw->builtin_template = info.builtin_template;
    snprintf(cw->template_origin, sizeof cw->template_origin, "%s", info.template_origin);
    fprintf(stderr,
            "g4v serve: chat model %s: %d slot%s on one context (%s), %d threads, %d context "
            "tokens each (%.2f s)\n",
            a->lm, cw->pool->n, cw->pool->n == 1 ? "" : "s",
            a->lm_no_batching ? "one slot per decode call" : "their steps decoded together",
            threads, a->lm_ctx, fe_now_s() - t0);
    return G4V_SERVICE_OK;
}

void chat_slots_close(chat_wing *cw) {
    free(cw->slots); /* the pool has stopped: every slot is closed, its state saved */
    cw->slots = NULL;
    chat_engine_close(cw->engine);
    cw->engine = NULL;
    chat_pcache_close(cw->pc); /* writes what waits for the disk */
    cw->pc = NULL;
    if (!cw->cache_private) return;
    g4v_cache_close(cw->cache);
    fe_temp_dir_remove(cw->cache_dir);
}

#endif
