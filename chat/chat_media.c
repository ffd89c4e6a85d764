/* chat_media.c - one medium of a chat turn: its identity (a content hash, what prompt reuse
 * compares) and its soft-token rows from libg4v, through the feature cache
 * (chat_session_impl.h). */
#include "chat_error.h"
#include "chat_session_impl.h"
#include "frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void chat_enc_free(enc_media *e) {
    if (!e) return;
    free(e->rows);
    free(e->frame_rows);
    free(e->mmss);
    memset(e, 0, sizeof *e);
}

/* SHA-256 over what decides a medium's rows; its first 8 bytes are the hash. */
typedef struct hash64 {
    fe_sha256_ctx c;
} hash64;
static void h_init(hash64 *h) { fe_sha256_init(&h->c); }
static void h_add(hash64 *h, const void *p, size_t n) { fe_sha256_update(&h->c, p, n); }
static uint64_t h_final(hash64 *h) {
    uint8_t d[FE_SHA256_BYTES];
    fe_sha256_final(&h->c, d);
    uint64_t v;
    memcpy(&v, d, sizeof v);
    return v;
}

int chat_media_budget(const chat_session *s, const chat_media *m) {
    if (m->budget) return m->budget;
    return m->medium == FE_MEDIUM_VIDEO ? s->o.video_budget : s->o.budget;
}

int chat_media_hash(const chat_session *s, const chat_media *m, uint64_t *out, char *err,
                    size_t errsz) {
    hash64 h;
    h_init(&h);
    /* the kind's value, as an int (chat_items.h: hashes outlive the process) */
    int head[3] = {(int)m->medium, chat_media_budget(s, m),
                   m->medium == FE_MEDIUM_VIDEO ? s->o.video_frames : 0};
    h_add(&h, head, sizeof head);
    if (m->data) {
        h_add(&h, m->data, m->size);
    } else {
        FILE *f = fopen(m->path, "rb");
        if (!f) {
            seterr(err, errsz, "%s: cannot read the file", m->path);
            return CHAT_ERR_INPUT;
        }
        unsigned char buf[65536];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, f)) > 0)
            h_add(&h, buf, n);
        int bad = ferror(f);
        fclose(f);
        if (bad) {
            seterr(err, errsz, "%s: cannot read the file", m->path);
            return CHAT_ERR_INPUT;
        }
    }
    *out = h_final(&h);
    return CHAT_OK;
}

uint64_t chat_frame_hash(uint64_t video_hash, int frame) {
    hash64 h;
    h_init(&h);
    h_add(&h, &video_hash, sizeof video_hash);
    h_add(&h, &frame, sizeof frame);
    return h_final(&h);
}

/* An encode call failed: its message into err; the turn's input was bad unless memory or the
 * library itself failed. */
static int encode_failed(const chat_session *s, const chat_media *m, int st, char *err,
                         size_t errsz) {
    /* bytes in memory: the library says "memory buffer", the medium's name says which one */
    if (m->data)
        seterr(err, errsz, "%s: %s", m->path, g4v_ctx_error(s->vctx));
    else
        seterr(err, errsz, "%s", g4v_ctx_error(s->vctx));
    return st == G4V_ERR_NOMEM || st == G4V_ERR_INTERNAL ? CHAT_ERR_INTERNAL : CHAT_ERR_INPUT;
}

/* One kind's decoder: encodes pm's medium into its rows (e) and its stat (ms). CHAT_OK, or an
 * error with its message; -1 when out of memory. */
typedef int (*medium_encoder)(chat_session *s, const chat_media *m, enc_media *e,
                              chat_media_stat *ms, char *err, size_t errsz);

static int encode_image(chat_session *s, const chat_media *m, enc_media *e, chat_media_stat *ms,
                        char *err, size_t errsz) {
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.budget = chat_media_budget(s, m);
    g4v_result r;
    int st = m->data ? g4v_encode_memory(s->vctx, m->data, m->size, &eo, &r)
                     : g4v_encode_file(s->vctx, m->path, &eo, &r);
    if (st) return encode_failed(s, m, st, err, errsz);
    size_t n = (size_t)r.n_tokens * (size_t)r.dim;
    e->rows = malloc(n * sizeof(float));
    e->frame_rows = malloc(sizeof(int));
    if (!e->rows || !e->frame_rows) return -1;
    memcpy(e->rows, r.features, n * sizeof(float));
    e->n_rows = r.n_tokens;
    e->n_frames = 1;
    e->frame_rows[0] = r.n_tokens;
    ms->n_rows = r.n_tokens;
    ms->n_frames = 1;
    ms->width = r.width;
    ms->height = r.height;
    ms->cache_hit = g4v_ctx_cache_hit(s->vctx);
    return CHAT_OK;
}

/* A video: its sampled frames, one after another (docs/VIDEO.md). */
static int encode_video(chat_session *s, const chat_media *m, enc_media *e, chat_media_stat *ms,
                        char *err, size_t errsz) {
    g4v_video_options vo;
    g4v_video_options_init(&vo);
    vo.budget = chat_media_budget(s, m);
    vo.num_frames = s->o.video_frames;
    g4v_video_result r;
    int st = m->data ? g4v_encode_video_memory(s->vctx, m->data, m->size, &vo, &r)
                     : g4v_encode_video_file(s->vctx, m->path, &vo, &r);
    if (st) return encode_failed(s, m, st, err, errsz);
    size_t n = (size_t)r.n_tokens * (size_t)r.dim;
    e->rows = malloc(n * sizeof(float));
    e->frame_rows = malloc((size_t)r.n_frames * sizeof(int));
    e->mmss = malloc((size_t)r.n_frames * sizeof *e->mmss);
    if (!e->rows || !e->frame_rows || !e->mmss) return -1;
    memcpy(e->rows, r.features, n * sizeof(float));
    e->n_rows = r.n_tokens;
    e->n_frames = r.n_frames;
    for (int k = 0; k < r.n_frames; k++) {
        e->frame_rows[k] = r.frames[k].n_tokens;
        memcpy(e->mmss[k], r.frames[k].mmss, sizeof e->mmss[k]);
    }
    ms->n_rows = r.n_tokens;
    ms->n_frames = r.n_frames;
    ms->width = r.width;
    ms->height = r.height;
    ms->cache_hit = g4v_ctx_cache_hit(s->vctx); /* every frame from the cache */
    return CHAT_OK;
}

/* The decoder of each kind of medium (medium.h): a new kind is a row here. */
static const medium_encoder encoders[FE_MEDIUM_COUNT] = {
    [FE_MEDIUM_IMAGE] = encode_image,
    [FE_MEDIUM_VIDEO] = encode_video,
};

int chat_media_encode(chat_session *s, plan_medium *pm, char *err, size_t errsz) {
    const chat_media *m = &pm->src;
    enc_media *e = &pm->e;
    chat_media_stat *ms = &pm->stat;
    double t0 = fe_now_s();
    ms->medium = m->medium;
    if ((unsigned)m->medium >= FE_MEDIUM_COUNT || !encoders[m->medium]) {
        seterr(err, errsz, "%s: not a kind of medium this session reads", m->path);
        return CHAT_ERR_INPUT;
    }
    int rc = encoders[m->medium](s, m, e, ms, err, errsz);
    if (rc < 0) goto oom;
    if (rc) return rc;
    ms->seconds = fe_now_s() - t0;
    return CHAT_OK;
oom:
    chat_enc_free(e);
    seterr(err, errsz, "out of memory");
    return CHAT_ERR_INTERNAL;
}
