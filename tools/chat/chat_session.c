/* chat_session.c - g4v soft tokens into a Gemma 4 text model in libllama (chat_session.h). */
#include "chat_session.h"
#include "chat_backend.h"
#include "chat_error.h"
#include "frontend.h"
#include "tempdir.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chat_prefill.h"
#include "chat_template.h"
#include "g4v.h"
#include "llama.h"

struct chat_session {
    chat_options o;
    int open_budget; /* the budget the session was opened with: a restart's default */
    g4v_model *vm;
    g4v_ctx *vctx;
    g4v_cache *cache;
    char cache_dir[512];
    int cache_private;
    g4v_model_info vinfo;
    struct llama_model *lm;
    struct llama_context *lctx;
    const struct llama_vocab *vocab;
    struct llama_sampler *smpl;
    chat_template tmpl;
    char arch[32];
    int n_embd, n_ctx, n_batch, threads, non_causal, turns;
    llama_pos n_past;
};

void chat_options_init(chat_options *o) {
    memset(o, 0, sizeof *o);
    o->temp = 1.0f; /* Gemma 4's generation_config.json: temperature 1, top_k 64, top_p 0.95 */
    o->top_k = 64;
    o->top_p = 0.95f;
    o->seed = 0xFFFFFFFFu;
    o->max_tokens = 1024;
}

/* llama.cpp's log: quiet unless verbose, but its last error is kept for our message. The
 * callback is process-wide and may run on several sessions' threads at once (g4v serve's slots
 * decode in parallel), so the kept text is guarded by a lock and read through last_log(). */
static pthread_mutex_t g_log_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_last_log[512];
static atomic_int g_verbose;
static void log_cb(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (atomic_load(&g_verbose)) fputs(text, stderr);
    if (level == GGML_LOG_LEVEL_ERROR && text && *text) { /* "first; second; ..." */
        pthread_mutex_lock(&g_log_lock);
        size_t n = strlen(g_last_log);
        snprintf(g_last_log + n, sizeof g_last_log - n, "%s%s", n ? "; " : "", text);
        n = strlen(g_last_log);
        while (n && (g_last_log[n - 1] == '\n' || g_last_log[n - 1] == ' ')) g_last_log[--n] = 0;
        pthread_mutex_unlock(&g_log_lock);
    }
}

/* Forgets the kept log text. */
static void clear_log(void) {
    pthread_mutex_lock(&g_log_lock);
    g_last_log[0] = 0;
    pthread_mutex_unlock(&g_log_lock);
}

/* ": <the kept log text>" for an error message, or "" when there is none (a static copy: the
 * sessions are opened one at a time). */
static const char *last_log(void) {
    static char copy[sizeof g_last_log + 2];
    pthread_mutex_lock(&g_log_lock);
    snprintf(copy, sizeof copy, "%s%s", g_last_log[0] ? ": " : "", g_last_log);
    pthread_mutex_unlock(&g_log_lock);
    return copy;
}

/* general.architecture of a GGUF file if it is the first key (as every writer puts it), read
 * before llama.cpp sees the file so that a wrong file gets a clear message. "" if unknown. */
static void gguf_arch(const char *path, char *arch, size_t cap) {
    arch[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    unsigned char h[24];
    uint64_t klen = 0, vlen = 0;
    uint32_t type = 0;
    char key[32];
    if (fread(h, 1, 24, f) == 24 && !memcmp(h, "GGUF", 4) && fread(&klen, 8, 1, f) == 1 &&
        klen == strlen("general.architecture") && fread(key, 1, klen, f) == klen &&
        !memcmp(key, "general.architecture", klen) && fread(&type, 4, 1, f) == 1 &&
        type == 8 /* string */ && fread(&vlen, 8, 1, f) == 1 && vlen < cap &&
        fread(arch, 1, vlen, f) == vlen)
        arch[vlen] = 0;
    else
        arch[0] = 0;
    fclose(f);
}

void chat_session_close(chat_session *s) {
    if (!s) return;
    if (s->smpl) llama_sampler_free(s->smpl);
    if (s->lctx) llama_free(s->lctx);
    if (s->lm) llama_model_free(s->lm);
    chat_template_free(&s->tmpl);
    g4v_ctx_free(s->vctx);
    if (!s->o.cache) g4v_cache_close(s->cache);
    if (!s->o.vision_model) g4v_model_free(s->vm);
    if (s->cache_private) fe_temp_dir_remove(s->cache_dir);
    free(s);
}

static struct llama_sampler *make_sampler(const chat_options *o) {
    struct llama_sampler_chain_params p = llama_sampler_chain_default_params();
    p.no_perf = true;
    struct llama_sampler *c = llama_sampler_chain_init(p);
    if (!c) return NULL;
    if (o->temp <= 0) {
        llama_sampler_chain_add(c, llama_sampler_init_greedy());
        return c;
    }
    if (o->top_k > 0) llama_sampler_chain_add(c, llama_sampler_init_top_k(o->top_k));
    if (o->top_p < 1.0f) llama_sampler_chain_add(c, llama_sampler_init_top_p(o->top_p, 1));
    llama_sampler_chain_add(c, llama_sampler_init_temp(o->temp));
    llama_sampler_chain_add(c, llama_sampler_init_dist(o->seed));
    return c;
}

int chat_session_open(const chat_options *o, chat_session **out, char *err, size_t errsz) {
    *out = NULL;
    chat_session *s = calloc(1, sizeof *s);
    if (!s) {
        seterr(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    s->o = *o;
    if (!s->o.budget) s->o.budget = G4V_DEFAULT_BUDGET;
    s->open_budget = s->o.budget;
    if (!s->o.video_budget) s->o.video_budget = G4V_DEFAULT_VIDEO_BUDGET;
    if (!s->o.video_frames) s->o.video_frames = G4V_DEFAULT_VIDEO_FRAMES;
    s->n_ctx = o->n_ctx > 0 ? o->n_ctx : 8192;
    s->threads = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (s->threads < 1) s->threads = 1;
    char msg[768];
    int rc = CHAT_ERR_MODEL;

    /* the vision side */
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.budget = s->o.budget;
    mo.math = o->math;
    int st = 0;
    if (o->vision_model)
        s->vm = o->vision_model;
    else
        st = g4v_model_load(o->vision_path, &mo, &s->vm, msg, sizeof msg);
    if (st) {
        seterr(err, errsz, "vision model: %s", msg);
        rc = st == G4V_ERR_ARG ? CHAT_ERR_USAGE : CHAT_ERR_MODEL;
        goto fail;
    }
    g4v_model_get_info(s->vm, &s->vinfo, NULL, 0);
    if (s->vinfo.math != o->math) { /* a borrowed model: the options must say what it computes */
        seterr(err, errsz, "the vision model computes in the math mode %s, not %s as asked",
               g4v_math_mode_name(s->vinfo.math), g4v_math_mode_name(o->math));
        rc = CHAT_ERR_USAGE;
        goto fail;
    }
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = s->threads;
    if (g4v_ctx_create(s->vm, &co, &s->vctx, msg, sizeof msg)) {
        seterr(err, errsz, "vision context: %s", msg);
        rc = CHAT_ERR_INTERNAL;
        goto fail;
    }
    if (o->cache) {
        s->cache = o->cache;
    } else if (o->cache_dir) {
        snprintf(s->cache_dir, sizeof s->cache_dir, "%s", o->cache_dir);
    } else {
        const char *where = NULL;
        if (fe_temp_dir(s->cache_dir, sizeof s->cache_dir, "g4v-chat", &where)) {
            seterr(err, errsz, "cannot create a temporary feature cache under %s", where);
            rc = CHAT_ERR_INTERNAL;
            goto fail;
        }
        s->cache_private = 1;
    }
    if (!o->cache && g4v_cache_open(s->cache_dir, NULL, &s->cache, msg, sizeof msg)) {
        seterr(err, errsz, "feature cache: %s", msg);
        rc = CHAT_ERR_USAGE;
        goto fail;
    }
    g4v_ctx_set_cache(s->vctx, s->cache);

    /* the text side */
    atomic_store(&g_verbose, o->verbose);
    llama_log_set(log_cb, NULL);
    if (chat_backend_load(err, errsz)) goto fail; /* CHAT_ERR_MODEL: no CPU backend for it */
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    clear_log();
    gguf_arch(o->lm_path, s->arch, sizeof s->arch);
    if (!strcmp(s->arch, "clip")) {
        seterr(err, errsz,
               "%s is a llama.cpp mmproj (vision projector) file, not a Gemma 4 text model: give "
               "it as --model and the text model's GGUF as --lm", o->lm_path);
        goto fail;
    }
    if (s->arch[0] && strcmp(s->arch, "gemma4")) {
        seterr(err, errsz,
               "%s is not a Gemma 4 text model (general.architecture is '%s', not 'gemma4')",
               o->lm_path, s->arch);
        goto fail;
    }
    s->lm = llama_model_load_from_file(o->lm_path, mp);
    if (!s->lm) {
        seterr(err, errsz, "cannot load the language model %s%s", o->lm_path, last_log());
        goto fail;
    }
    if (llama_model_meta_val_str(s->lm, "general.architecture", s->arch, sizeof s->arch) < 0)
        s->arch[0] = 0;
    if (strcmp(s->arch, "gemma4") != 0) {
        seterr(err, errsz,
               "%s is not a Gemma 4 text model (general.architecture is '%s', not 'gemma4')",
               o->lm_path, s->arch);
        goto fail;
    }
    s->n_embd = llama_model_n_embd_inp(s->lm);
    if (s->n_embd != s->vinfo.dim) {
        seterr(err, errsz,
               "the models do not belong together: the vision model %s gives soft tokens of %d "
               "floats, the text model %s takes %d (llama_model_n_embd)",
               o->vision_path, s->vinfo.dim, o->lm_path, s->n_embd);
        goto fail;
    }
    s->vocab = llama_model_get_vocab(s->lm);
    if (llama_vocab_n_tokens(s->vocab) <= s->vinfo.eoi_token_id) {
        seterr(err, errsz, "the text model's vocabulary (%d tokens) has no image tokens",
               llama_vocab_n_tokens(s->vocab));
        goto fail;
    }
    s->non_causal = chat_use_non_causal(!strcmp(s->vinfo.kind, "unified"), s->n_embd);
    /* a whole image (or frame) in one decode call and one ubatch: needed for bidirectional
     * attention over its rows (docs/CHAT.md §3) */
    int rows_max = s->o.budget > s->o.video_budget ? s->o.budget : s->o.video_budget;
    if (s->o.max_budget > rows_max) rows_max = s->o.max_budget;
    s->n_batch = rows_max > 512 ? rows_max : 512;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)s->n_ctx;
    cp.n_batch = (uint32_t)s->n_batch;
    cp.n_ubatch = (uint32_t)s->n_batch;
    cp.n_threads = s->threads;
    cp.n_threads_batch = s->threads;
    cp.no_perf = true;
    s->lctx = llama_init_from_model(s->lm, cp);
    if (!s->lctx) {
        seterr(err, errsz, "cannot create a llama.cpp context of %d tokens%s", s->n_ctx,
               last_log());
        rc = CHAT_ERR_INTERNAL;
        goto fail;
    }
    s->n_ctx = (int)llama_n_ctx(s->lctx);
    if (chat_template_init(&s->tmpl, s->lm, msg, sizeof msg)) {
        seterr(err, errsz, "%s: %s", o->lm_path, msg);
        goto fail;
    }
    s->smpl = make_sampler(&s->o);
    if (!s->smpl) {
        seterr(err, errsz, "cannot create the sampler");
        rc = CHAT_ERR_INTERNAL;
        goto fail;
    }
    *out = s;
    return CHAT_OK;
fail:
    chat_session_close(s);
    return rc;
}

void chat_session_get_info(const chat_session *s, chat_session_info *i) {
    memset(i, 0, sizeof *i);
    snprintf(i->arch, sizeof i->arch, "%s", s->arch);
    i->n_embd = s->n_embd;
    i->n_ctx = s->n_ctx;
    i->n_layer = llama_model_n_layer(s->lm);
    i->n_vocab = llama_vocab_n_tokens(s->vocab);
    i->threads = s->threads;
    i->n_batch = s->n_batch;
    i->non_causal = s->non_causal;
    i->builtin_template = s->tmpl.builtin;
    snprintf(i->vision_kind, sizeof i->vision_kind, "%s", s->vinfo.kind);
    snprintf(i->vision_variant, sizeof i->vision_variant, "%s", s->vinfo.variant);
    i->budget = s->o.budget;
    i->video_budget = s->o.video_budget;
    i->video_frames = s->o.video_frames;
    g4v_cache_stats cs;
    g4v_cache_get_stats(s->cache, &cs, NULL, 0);
    i->cache_hits = cs.hits;
    i->cache_misses = cs.misses;
    snprintf(i->cache_dir, sizeof i->cache_dir, "%s", s->cache_dir);
    i->cache_private = s->cache_private;
}

void chat_turn_result_free(chat_turn_result *r) {
    if (!r) return;
    free(r->text);
    free(r->media);
    memset(r, 0, sizeof *r);
}

/* One encoded medium: its rows (copied out of the g4v ctx) and, for a video, frame labels. */
typedef struct enc_media {
    float *rows;
    int n_rows, n_frames;
    int *frame_rows;       /* rows per frame */
    char (*mmss)[16];
} enc_media;

static void enc_free(enc_media *e, int n) {
    for (int i = 0; e && i < n; i++) {
        free(e[i].rows);
        free(e[i].frame_rows);
        free(e[i].mmss);
    }
    free(e);
}

/* An encode call failed: its message into err; the turn's input was bad unless memory or the
 * library itself failed. */
static int encode_failed(const chat_session *s, int st, char *err, size_t errsz) {
    seterr(err, errsz, "%s", g4v_ctx_error(s->vctx));
    return st == G4V_ERR_NOMEM || st == G4V_ERR_INTERNAL ? CHAT_ERR_INTERNAL : CHAT_ERR_INPUT;
}

static int encode_media(chat_session *s, const chat_media *m, enc_media *e, chat_media_stat *ms,
                        char *err, size_t errsz) {
    double t0 = fe_now_s();
    ms->is_video = m->is_video;
    if (!m->is_video) {
        g4v_encode_options eo;
        g4v_encode_options_init(&eo);
        eo.budget = s->o.budget;
        g4v_result r;
        int st = m->data ? g4v_encode_memory(s->vctx, m->data, m->size, &eo, &r)
                         : g4v_encode_file(s->vctx, m->path, &eo, &r);
        if (st) return encode_failed(s, st, err, errsz);
        size_t n = (size_t)r.n_tokens * (size_t)r.dim;
        e->rows = malloc(n * sizeof(float));
        e->frame_rows = malloc(sizeof(int));
        if (!e->rows || !e->frame_rows) goto oom;
        memcpy(e->rows, r.features, n * sizeof(float));
        e->n_rows = r.n_tokens;
        e->n_frames = 1;
        e->frame_rows[0] = r.n_tokens;
        ms->n_rows = r.n_tokens;
        ms->n_frames = 1;
        ms->width = r.width;
        ms->height = r.height;
        ms->cache_hit = g4v_ctx_cache_hit(s->vctx);
    } else {
        if (m->data) {
            seterr(err, errsz, "%s: a video is read from a file, not from memory", m->path);
            return CHAT_ERR_INPUT;
        }
        g4v_video_options vo;
        g4v_video_options_init(&vo);
        vo.budget = s->o.video_budget;
        vo.num_frames = s->o.video_frames;
        g4v_video_result r;
        int st = g4v_encode_video_file(s->vctx, m->path, &vo, &r);
        if (st) return encode_failed(s, st, err, errsz);
        size_t n = (size_t)r.n_tokens * (size_t)r.dim;
        e->rows = malloc(n * sizeof(float));
        e->frame_rows = malloc((size_t)r.n_frames * sizeof(int));
        e->mmss = malloc((size_t)r.n_frames * sizeof *e->mmss);
        if (!e->rows || !e->frame_rows || !e->mmss) goto oom;
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
    }
    ms->seconds = fe_now_s() - t0;
    return CHAT_OK;
oom:
    seterr(err, errsz, "out of memory");
    return CHAT_ERR_INTERNAL;
}

/* The rendered turn with its media markers replaced: text pieces and image pieces. A video is,
 * per frame, "MM:SS " + the frame's rows (wrapped in <|image> ... <image|> by chat_tokenize),
 * frames joined by one space (g4v_video_prompt_text). */
static int build_pieces(const char *text, const enc_media *e, int n_media, int n_embd,
                        chat_piece **out, int *n_out, char ***strs, int *n_strs) {
    int cap = 2 * n_media + 2;
    for (int i = 0; i < n_media; i++) cap += 2 * e[i].n_frames;
    int n = 0, ns = 0, mi = 0;
    chat_piece *p = calloc((size_t)cap, sizeof *p);
    char **sv = calloc((size_t)cap, sizeof *sv);
    if (!p || !sv) goto oom;
    const char *cur = text;
    size_t mlen = strlen(CHAT_MEDIA_MARKER);
    for (;;) {
        const char *hit = strstr(cur, CHAT_MEDIA_MARKER);
        size_t len = hit ? (size_t)(hit - cur) : strlen(cur);
        char *t = malloc(len + 1);
        if (!t) goto oom;
        memcpy(t, cur, len);
        t[len] = 0;
        sv[ns++] = t;
        p[n++].text = t;
        if (!hit) break;
        if (mi >= n_media) goto oom; /* cannot happen: one marker per medium */
        const enc_media *m = &e[mi++];
        size_t off = 0;
        for (int k = 0; k < m->n_frames; k++) {
            if (m->mmss) {
                char *lab = malloc(24);
                if (!lab) goto oom;
                snprintf(lab, 24, "%s%s ", k ? " " : "", m->mmss[k]);
                sv[ns++] = lab;
                p[n++].text = lab;
            }
            p[n].rows = m->rows + off * (size_t)n_embd;
            p[n].n_rows = m->frame_rows[k];
            n++;
            off += (size_t)m->frame_rows[k];
        }
        cur = hit + mlen;
    }
    *out = p;
    *n_out = n;
    *strs = sv;
    *n_strs = ns;
    return 0;
oom:
    for (int i = 0; sv && i < ns; i++) free(sv[i]);
    free(sv);
    free(p);
    return -1;
}

int chat_session_prefill(chat_session *s, const chat_media *media, int n_media,
                         const char *text, chat_turn_result *r, char *err, size_t errsz) {
    memset(r, 0, sizeof *r);
    int rc = CHAT_OK;
    enc_media *e = calloc((size_t)(n_media > 0 ? n_media : 1), sizeof *e);
    r->media = calloc((size_t)(n_media > 0 ? n_media : 1), sizeof *r->media);
    char *content = NULL, *turn = NULL, **strs = NULL;
    chat_piece *pieces = NULL;
    int n_pieces = 0, n_strs = 0, rendered = 0;
    chat_chunks ch = {0};
    if (!e || !r->media) goto oom;
    r->n_media = n_media;

    /* 1. every medium first: a bad one refuses the turn before anything reaches the model */
    for (int i = 0; i < n_media; i++) {
        rc = encode_media(s, &media[i], &e[i], &r->media[i], err, errsz);
        if (rc) goto out;
        r->encode_s += r->media[i].seconds;
    }
    /* 2. the turn's text: media first, then the text (Gemma 4's template renders content items
     *    in order; one placeholder per medium) */
    size_t tl = strlen(text), ml = strlen(CHAT_MEDIA_MARKER);
    content = malloc((size_t)n_media * ml + tl + 1);
    if (!content) goto oom;
    content[0] = 0;
    for (int i = 0; i < n_media; i++) strcat(content, CHAT_MEDIA_MARKER);
    strcat(content, text);
    turn = chat_template_user_turn(&s->tmpl, s->o.system, content, s->turns == 0, err, errsz);
    if (!turn) {
        rc = CHAT_ERR_INTERNAL;
        goto out;
    }
    rendered = 1;
    if (build_pieces(turn, e, n_media, s->n_embd, &pieces, &n_pieces, &strs, &n_strs)) goto oom;
    if (chat_tokenize(s->vocab, pieces, n_pieces, s->turns == 0, &ch, err, errsz)) {
        rc = CHAT_ERR_INTERNAL;
        goto out;
    }
    r->n_prompt_pos = ch.n_pos;
    r->n_prompt_text = ch.n_text_tokens;
    r->n_prompt_rows = ch.n_image_rows;
    if (s->n_past + ch.n_pos + 1 > s->n_ctx) {
        seterr(err, errsz,
               "the prompt does not fit in the context: this turn needs %d positions (%d text "
               "tokens, %d image rows) + 1 to answer, %d of %d are left (--ctx)",
               ch.n_pos, ch.n_text_tokens, ch.n_image_rows, s->n_ctx - (int)s->n_past, s->n_ctx);
        rc = CHAT_ERR_INPUT;
        goto out;
    }
    /* 3. prefill, as libmtmd would */
    double t1 = fe_now_s();
    llama_pos past0 = s->n_past;
    if (chat_decode_chunks(s->lctx, &ch, s->non_causal, s->n_batch, &s->n_past, err, errsz)) {
        llama_memory_seq_rm(llama_get_memory(s->lctx), 0, past0, -1);
        s->n_past = past0;
        rc = CHAT_ERR_INTERNAL;
        goto out;
    }
    r->prefill_s = fe_now_s() - t1;
    s->turns++;
    rendered = 0; /* the turn is in the conversation now */

    r->n_past = (int)s->n_past;
    goto out;
oom:
    seterr(err, errsz, "out of memory");
    rc = CHAT_ERR_INTERNAL;
out:
    if (rendered) chat_template_undo_user(&s->tmpl);
    chat_chunks_free(&ch);
    for (int i = 0; strs && i < n_strs; i++) free(strs[i]);
    free(strs);
    free(pieces);
    free(turn);
    free(content);
    enc_free(e, n_media);
    return rc;
}

int chat_session_generate(chat_session *s, chat_emit_fn emit, void *user, chat_turn_result *r,
                          char *err, size_t errsz) {
    int rc = CHAT_OK;
    double t0 = fe_now_s() - r->encode_s - r->prefill_s;
    char *ans = NULL;
    struct llama_batch one = {0};
    /* 4. the answer */
    size_t acap = 256, alen = 0;
    ans = malloc(acap);
    one = llama_batch_init(1, 0, 1);
    if (!ans || !one.token) goto oom;
    ans[0] = 0;
    r->stop = "max_tokens";
    double t2 = fe_now_s();
    llama_sampler_reset(s->smpl);
    for (int k = 0; s->o.max_tokens <= 0 || k < s->o.max_tokens; k++) {
        llama_token tok = llama_sampler_sample(s->smpl, s->lctx, -1);
        r->n_generated++;
        if (k == 0) r->ttft_s = fe_now_s() - t0; /* from the turn's start: encode + prefill + 1 */
        if (llama_vocab_is_eog(s->vocab, tok)) {
            r->stop = "end_of_turn";
            break;
        }
        char buf[256];
        int n = llama_token_to_piece(s->vocab, tok, buf, (int32_t)sizeof buf, 0, false);
        if (n > 0) {
            if (alen + (size_t)n + 1 > acap) {
                while (alen + (size_t)n + 1 > acap) acap *= 2;
                char *a2 = realloc(ans, acap);
                if (!a2) goto oom;
                ans = a2;
            }
            memcpy(ans + alen, buf, (size_t)n);
            alen += (size_t)n;
            ans[alen] = 0;
            if (emit && emit(buf, (size_t)n, user)) break;
        }
        if (s->n_past + 1 > s->n_ctx) {
            r->stop = "context_full";
            break;
        }
        one.n_tokens = 1;
        one.token[0] = tok;
        one.pos[0] = s->n_past;
        one.n_seq_id[0] = 1;
        one.seq_id[0][0] = 0;
        one.logits[0] = 1;
        int d = llama_decode(s->lctx, one);
        if (d != 0) {
            seterr(err, errsz, "llama_decode failed while answering (%d)", d);
            rc = CHAT_ERR_INTERNAL;
            break;
        }
        s->n_past++;
    }
    r->generate_s = fe_now_s() - t2;
    r->text = ans;
    r->text_len = alen;
    ans = NULL;
    r->n_past = (int)s->n_past;
    chat_template_answer(&s->tmpl, r->text);
    goto out;
oom:
    seterr(err, errsz, "out of memory");
    rc = CHAT_ERR_INTERNAL;
out:
    if (one.token) llama_batch_free(one);
    free(ans);
    return rc;
}

int chat_session_turn(chat_session *s, const chat_media *media, int n_media, const char *text,
                      chat_emit_fn emit, void *user, chat_turn_result *r, char *err,
                      size_t errsz) {
    int rc = chat_session_prefill(s, media, n_media, text, r, err, errsz);
    if (rc) return rc;
    return chat_session_generate(s, emit, user, r, err, errsz);
}

int chat_session_restart(chat_session *s, const chat_options *o, char *err, size_t errsz) {
    /* 0: the session's own budget, never the previous conversation's (g4v serve restarts a slot
     * per request, and one request's "g4v": {"tokens": 70} must not stay for the next) */
    int budget = o->budget ? o->budget : s->open_budget;
    char msg[160];
    if (g4v_budget_check(budget, msg, sizeof msg)) {
        seterr(err, errsz, "%s", msg);
        return CHAT_ERR_USAGE;
    }
    if (budget > s->n_batch) { /* a whole image must fit one decode call (docs/CHAT.md §3) */
        seterr(err, errsz, "a budget of %d soft tokens is above this session's limit of %d",
               budget, s->n_batch);
        return CHAT_ERR_USAGE;
    }
    chat_options n = s->o;
    n.system = o->system;
    n.temp = o->temp;
    n.top_k = o->top_k;
    n.top_p = o->top_p;
    n.seed = o->seed;
    n.max_tokens = o->max_tokens;
    n.budget = budget;
    struct llama_sampler *smpl = make_sampler(&n);
    if (!smpl) {
        seterr(err, errsz, "cannot create the sampler");
        return CHAT_ERR_INTERNAL;
    }
    llama_sampler_free(s->smpl);
    s->smpl = smpl;
    s->o = n;
    llama_memory_clear(llama_get_memory(s->lctx), true);
    s->n_past = 0;
    s->turns = 0;
    chat_template_reset(&s->tmpl);
    return CHAT_OK;
}

int chat_session_feed_answer(chat_session *s, const char *text, char *err, size_t errsz) {
    int len = (int)strlen(text);
    int n = -llama_tokenize(s->vocab, text, len, NULL, 0, false, false);
    if (n < 0) n = 0;
    llama_token *tok = malloc((size_t)(n > 0 ? n : 1) * sizeof *tok);
    if (!tok) {
        seterr(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    if (n > 0 && llama_tokenize(s->vocab, text, len, tok, n, false, false) != n) {
        free(tok);
        seterr(err, errsz, "cannot tokenize an earlier answer");
        return CHAT_ERR_INTERNAL;
    }
    if (s->n_past + n + 1 > s->n_ctx) {
        free(tok);
        seterr(err, errsz,
               "the conversation does not fit in the context: an earlier answer of %d tokens "
               "after %d positions, %d in all",
               n, (int)s->n_past, s->n_ctx);
        return CHAT_ERR_INPUT;
    }
    for (int i = 0; i < n; i += s->n_batch) {
        int m = n - i < s->n_batch ? n - i : s->n_batch;
        struct llama_batch b = llama_batch_get_one(tok + i, m);
        llama_pos *pos = malloc((size_t)m * sizeof *pos);
        if (!pos) {
            free(tok);
            seterr(err, errsz, "out of memory");
            return CHAT_ERR_INTERNAL;
        }
        for (int k = 0; k < m; k++) pos[k] = s->n_past + k;
        b.pos = pos;
        int d = llama_decode(s->lctx, b);
        free(pos);
        if (d) {
            free(tok);
            seterr(err, errsz, "llama_decode failed on an earlier answer (%d)", d);
            return CHAT_ERR_INTERNAL;
        }
        s->n_past += m;
    }
    free(tok);
    chat_template_answer(&s->tmpl, text);
    return CHAT_OK;
}

struct llama_context *chat_session_llama_context(chat_session *s) { return s->lctx; }
const struct llama_model *chat_session_llama_model(const chat_session *s) { return s->lm; }
int chat_session_n_past(const chat_session *s) { return (int)s->n_past; }
