/* chat_media.c - one medium of a chat turn: its identity (a content hash, what prompt reuse
 * compares) and its soft-token rows from libg4v, through the feature cache
 * (chat_session_impl.h), by the session's encoder: its own g4v_ctx (g4v chat), or the one it is
 * given (chat_vision: g4v serve's encode contexts). */
#include "chat_error.h"
#include "chat_session_impl.h"
#include "frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int chat_media_error(const chat_media *m, int st, const char *msg, char *err, size_t errsz) {
    /* bytes in memory: the library says "memory buffer", the medium's name says which one */
    if (m->data)
        seterr(err, errsz, "%s: %s", m->path, msg);
    else
        seterr(err, errsz, "%s", msg);
    return st == G4V_ERR_NOMEM || st == G4V_ERR_INTERNAL ? CHAT_ERR_INTERNAL : CHAT_ERR_INPUT;
}

void chat_encoded_free(chat_encoded *e) { fe_encoded_free(e); }

/* One kind's decoder on the session's own context: encodes m into e. CHAT_OK, or an error with
 * its message; -1 when out of memory. */
typedef int (*medium_encoder)(chat_session *s, const chat_media *m, int budget, int frames,
                              chat_encoded *e, char *err, size_t errsz);

static int encode_image(chat_session *s, const chat_media *m, int budget, int frames,
                        chat_encoded *e, char *err, size_t errsz) {
    (void)frames;
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.budget = budget;
    g4v_result r;
    int st = m->data ? g4v_encode_memory(s->vctx, m->data, m->size, &eo, &r)
                     : g4v_encode_file(s->vctx, m->path, &eo, &r);
    if (st) return chat_media_error(m, st, g4v_ctx_error(s->vctx), err, errsz);
    if (fe_encoded_image(e, &r, g4v_ctx_cache_hit(s->vctx))) return -1;
    return CHAT_OK;
}

/* A video: its sampled frames, one after another (docs/VIDEO.md). */
static int encode_video(chat_session *s, const chat_media *m, int budget, int frames,
                        chat_encoded *e, char *err, size_t errsz) {
    g4v_video_options vo;
    g4v_video_options_init(&vo);
    vo.budget = budget;
    vo.num_frames = frames;
    g4v_video_result r;
    int st = m->data ? g4v_encode_video_memory(s->vctx, m->data, m->size, &vo, &r)
                     : g4v_encode_video_file(s->vctx, m->path, &vo, &r);
    if (st) return chat_media_error(m, st, g4v_ctx_error(s->vctx), err, errsz);
    /* a hit: every frame from the cache */
    if (fe_encoded_video(e, &r, g4v_ctx_cache_hit(s->vctx))) return -1;
    return CHAT_OK;
}

/* The decoder of each kind of medium (medium.h): a new kind is a row here. */
static const medium_encoder encoders[FE_MEDIUM_COUNT] = {
    [FE_MEDIUM_IMAGE] = encode_image,
    [FE_MEDIUM_VIDEO] = encode_video,
};

/* The session's own encoder (chat_options.vision NULL): its g4v_ctx, one medium after another. */
static int own_encode(void *ctx, const chat_media *media, const int *budgets, int frames, int n,
                      chat_encoded *out, char *err, size_t errsz) {
    chat_session *s = ctx;
    for (int i = 0; i < n; i++) {
        const chat_media *m = &media[i];
        if ((unsigned)m->medium >= FE_MEDIUM_COUNT || !encoders[m->medium]) {
            seterr(err, errsz, "%s: not a kind of medium this session reads", m->path);
            return CHAT_ERR_INPUT;
        }
        int rc = encoders[m->medium](s, m, budgets[i], frames, &out[i], err, errsz);
        if (rc < 0) {
            chat_encoded_free(&out[i]);
            seterr(err, errsz, "out of memory");
            return CHAT_ERR_INTERNAL;
        }
        if (rc) return rc;
    }
    return CHAT_OK;
}

void chat_media_own_vision(chat_session *s) {
    s->own_vision = (chat_vision){.ctx = s, .encode = own_encode};
    s->vision = s->o.vision ? s->o.vision : &s->own_vision;
}

void chat_media_fed(chat_session *s) {
    if (s->vision && s->vision->fed) s->vision->fed(s->vision->ctx);
}

int chat_media_encode_all(chat_session *s, plan_medium **pms, int n, char *err, size_t errsz) {
    if (n <= 0) return CHAT_OK;
    enum { ON_STACK = 16 };
    chat_media sm[ON_STACK];
    int sb[ON_STACK];
    chat_encoded so[ON_STACK];
    chat_media *media = n <= ON_STACK ? sm : malloc((size_t)n * sizeof *media);
    int *budgets = n <= ON_STACK ? sb : malloc((size_t)n * sizeof *budgets);
    chat_encoded *out = n <= ON_STACK ? so : calloc((size_t)n, sizeof *out);
    int rc = CHAT_OK;
    if (!media || !budgets || !out) {
        seterr(err, errsz, "out of memory");
        rc = CHAT_ERR_INTERNAL;
        goto done;
    }
    memset(out, 0, (size_t)n * sizeof *out);
    for (int i = 0; i < n; i++) {
        media[i] = pms[i]->src;
        budgets[i] = chat_media_budget(s, &media[i]);
    }
    double t0 = fe_now_s();
    rc = s->vision->encode(s->vision->ctx, media, budgets, s->o.video_frames, n, out, err, errsz);
    double dt = fe_now_s() - t0;
    /* the ones encoded (all, or those before a failure) are the plan's: a refused prompt keeps
     * them for the next try, as one encode call at a time did */
    for (int i = 0; i < n; i++) {
        if (!out[i].rows) continue;
        plan_medium *pm = pms[i];
        chat_media_stat *ms = &pm->stat;
        pm->e = out[i]; /* the session takes the arrays over */
        ms->medium = pm->src.medium;
        ms->n_rows = out[i].n_rows;
        ms->n_frames = out[i].n_frames;
        ms->width = out[i].width;
        ms->height = out[i].height;
        ms->cache_hit = out[i].cache_hit;
        ms->seconds = dt / n; /* the call's time, shared out (a shared encoder batches) */
    }
done:
    if (media != sm) free(media);
    if (budgets != sb) free(budgets);
    if (out != so) free(out);
    return rc;
}

int chat_media_encode(chat_session *s, plan_medium *pm, char *err, size_t errsz) {
    return chat_media_encode_all(s, &pm, 1, err, errsz);
}
