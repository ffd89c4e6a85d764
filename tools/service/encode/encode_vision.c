/* encode_vision.c - the other wings' media encoded by the encode wing's workers (encode_wing.h):
 * one vision path in the server. A chat slot's images and videos become local jobs of the job
 * kind "encode" (core/queue.c svc_run_local): queued in the same FIFO as POST /v1/encode, run by
 * the same workers on the same g4v_ctx (one per --contexts, --threads each) over the server's
 * model, taken together up to --batch and encoded in one g4v_encode_batch (the images of
 * conversations that arrive together go through the tower together). Every encode enters the
 * server's CPU gate, as the text model's decode calls do (docs/SERVICE.md "Threads").
 *
 * Order: a worker that has just encoded a conversation's media waits until that conversation
 * has decoded them and drawn its first token (encode_vision_fed, chat_vision.fed) before it
 * takes another job, so that with the cores busy the first conversation's prompt is decoded
 * before the second one's image is encoded: conversations arriving together get their first
 * tokens in arrival order (the first as soon as alone), instead of all of them at the end. */
#include "encode/encode_wing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The longest a worker waits for a conversation to decode what it encoded and draw its first
 * token: a prompt that takes longer (a long text around the image, on a slow machine) then
 * shares the cores with the next encode, and a session that never says so (a bug) costs the
 * others a pause, not the contexts. */
enum { ENCODE_FED_WAIT_MS = 30000 };

int encode_gate_enter(encode_wing *ew) { return fe_cpu_gate_enter(&ew->s->gate, ew->threads); }
void encode_gate_leave(encode_wing *ew, int taken) { fe_cpu_gate_leave(&ew->s->gate, taken); }

int encode_vision_run(encode_client *c, encode_vision_job *jobs, int n) {
    if (n <= 0) return 0;
    server *s = c->ew->s;
    enum { ON_STACK = 16 };
    request sq[ON_STACK];
    void *sj[ON_STACK];
    request *qs = n <= ON_STACK ? sq : calloc((size_t)n, sizeof *qs);
    void **js = n <= ON_STACK ? sj : malloc((size_t)n * sizeof *js);
    int rc = -1;
    if (qs && js) {
        memset(qs, 0, (size_t)n * sizeof *qs);
        for (int i = 0; i < n; i++) {
            jobs[i].client = c;
            jobs[i].status = G4V_ERR_INTERNAL;
            snprintf(jobs[i].error, sizeof jobs[i].error, "the encode contexts have stopped");
            js[i] = &jobs[i];
        }
        pthread_mutex_lock(&s->mu);
        c->queued += n;
        c->unfed = 0; /* its next media: a worker waiting for it goes on */
        pthread_cond_broadcast(&c->ew->fed);
        pthread_mutex_unlock(&s->mu);
        rc = svc_run_local(c->ew->pool, qs, js, n);
        if (rc) {
            pthread_mutex_lock(&s->mu);
            c->queued -= n;
            pthread_mutex_unlock(&s->mu);
        }
    }
    if (qs != sq) free(qs);
    if (js != sj) free(js);
    return rc;
}

void encode_vision_fed(encode_client *c) {
    server *s = c->ew->s;
    pthread_mutex_lock(&s->mu);
    if (c->unfed) {
        c->unfed = 0;
        pthread_cond_broadcast(&c->ew->fed);
    }
    pthread_mutex_unlock(&s->mu);
}

static void failed(encode_vision_job *j, int st, const char *msg) {
    fe_encoded_free(&j->out);
    j->status = st;
    snprintf(j->error, sizeof j->error, "%s", msg);
}

static void succeeded(encode_vision_job *j) {
    j->status = G4V_OK;
    j->error[0] = 0;
}

static void image_done(encode_vision_job *j, int st, const char *msg, const g4v_result *r,
                       int cache_hit) {
    if (st)
        failed(j, st, msg);
    else if (fe_encoded_image(&j->out, r, cache_hit))
        failed(j, G4V_ERR_NOMEM, "out of memory");
    else
        succeeded(j);
}

static void encode_video(g4v_ctx *ctx, encode_vision_job *j) {
    g4v_video_options vo;
    g4v_video_options_init(&vo);
    vo.budget = j->budget;
    vo.num_frames = j->frames;
    g4v_video_result r;
    int st = j->data ? g4v_encode_video_memory(ctx, j->data, j->size, &vo, &r)
                     : g4v_encode_video_file(ctx, j->path, &vo, &r);
    if (st)
        failed(j, st, g4v_ctx_error(ctx));
    else if (fe_encoded_video(&j->out, &r, g4v_ctx_cache_hit(ctx))) /* a hit: every frame */
        failed(j, G4V_ERR_NOMEM, "out of memory");
    else
        succeeded(j);
}

static void encode_image(g4v_ctx *ctx, encode_vision_job *j) {
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.budget = j->budget;
    g4v_result r;
    int st = j->data ? g4v_encode_memory(ctx, j->data, j->size, &eo, &r)
                     : g4v_encode_file(ctx, j->path, &eo, &r);
    image_done(j, st, g4v_ctx_error(ctx), &r, g4v_ctx_cache_hit(ctx));
}

/* Several images in one pass of the tower (--batch): each what its single call gives. */
static void encode_images(g4v_ctx *ctx, encode_vision_job **js, int n) {
    g4v_encode_options eo[SVC_MAX_BATCH];
    g4v_batch_item it[SVC_MAX_BATCH];
    memset(it, 0, (size_t)n * sizeof *it);
    for (int i = 0; i < n; i++) {
        g4v_encode_options_init(&eo[i]);
        eo[i].budget = js[i]->budget;
        if (js[i]->data) {
            it[i].bytes = js[i]->data;
            it[i].size = js[i]->size;
        } else {
            it[i].path = js[i]->path;
        }
        it[i].opts = &eo[i];
    }
    g4v_encode_batch(ctx, it, n);
    for (int i = 0; i < n; i++)
        image_done(js[i], it[i].status, it[i].error, &it[i].result, it[i].cache_hit);
}

/* Whether a worker that encoded for clients cs[0..n) waits: one of them has its media still to
 * decode and nothing more queued. Under the server's mutex. */
static int someone_unfed(encode_client **cs, int n) {
    for (int i = 0; i < n; i++)
        if (cs[i]->unfed && !cs[i]->queued) return 1;
    return 0;
}

void encode_vision_jobs(svc_worker *w, request **qs, int n) {
    g4v_ctx *ctx = w->state;
    encode_wing *ew = w->p->ctx;
    server *s = ew->s;
    encode_vision_job *js[SVC_MAX_BATCH], *images[SVC_MAX_BATCH];
    int n_images = 0;
    if (n < 1 || n > SVC_MAX_BATCH) return;
    for (int i = 0; i < n; i++) {
        js[i] = qs[i]->job;
        if (js[i]->medium == FE_MEDIUM_IMAGE) images[n_images++] = js[i];
    }
    /* the clients' cache (the chat slots share one: --cache, or their own), the requests' back
     * after */
    g4v_ctx_set_cache(ctx, js[0]->client->cache);
    int gated = encode_gate_enter(ew);
    if (n_images == 1)
        encode_image(ctx, images[0]);
    else if (n_images > 1)
        encode_images(ctx, images, n_images);
    for (int i = 0; i < n; i++)
        if (js[i]->medium == FE_MEDIUM_VIDEO) encode_video(ctx, js[i]);
        else if (js[i]->medium != FE_MEDIUM_IMAGE) failed(js[i], G4V_ERR_ARG, "not a medium");
    encode_gate_leave(ew, gated);
    g4v_ctx_set_cache(ctx, s->cache);
    encode_client *cs[SVC_MAX_BATCH];
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < n; i++) {
        cs[i] = js[i]->client;
        cs[i]->queued--;
        cs[i]->unfed = 1;
    }
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n; i++) svc_local_done(qs[i]); /* qs[i] is gone after this */
    /* until the conversations have decoded what they got (or asked for more) */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ENCODE_FED_WAIT_MS / 1000;
    until.tv_nsec += (long)(ENCODE_FED_WAIT_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&s->mu);
    while (someone_unfed(cs, n))
        if (pthread_cond_timedwait(&ew->fed, &s->mu, &until) == ETIMEDOUT) break;
    pthread_mutex_unlock(&s->mu);
}
