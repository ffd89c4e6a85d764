/* chat_session.c - g4v soft tokens into a Gemma 4 text model in libllama (chat_session.h). */
#include "chat_backend.h"
#include "chat_error.h"
#include "chat_fatal.h"
#include "chat_items.h"
#include "chat_llama_probe.h"
#include "chat_session_impl.h"
#include "chat_thought.h"
#include "frontend.h"
#include "tempdir.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


void chat_options_init(chat_options *o) {
    memset(o, 0, sizeof *o);
    chat_params_init(&o->params);
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
    chat_conversation_clear(s);
    free(s->pt);
    free(s->pm);
    free(s->items);
    free(s->fed_media);
    if (s->smpl) llama_sampler_free(s->smpl);
    if (s->grammar) llama_sampler_free(s->grammar);
    free(s->cand);
    if (s->lctx) llama_free(s->lctx);
    if (s->lm) llama_model_free(s->lm);
    chat_template_free(&s->tmpl);
    g4v_ctx_free(s->vctx);
    if (!s->o.cache) g4v_cache_close(s->cache);
    if (!s->o.vision_model) g4v_model_free(s->vm);
    if (s->cache_private) fe_temp_dir_remove(s->cache_dir);
    free(s);
}

/* The id of a special token given as text, or -1 when it is not one token. */
static llama_token single_token(const struct llama_vocab *v, const char *text) {
    llama_token t[2];
    int n = llama_tokenize(v, text, (int32_t)strlen(text), t, 2, false, true);
    return n == 1 ? t[0] : -1;
}

/* ---- opening: the vision side, the text model, its context, the turn format ------------------ */

/* The vision model (loaded, or borrowed) and its context, and the session's budget. */
static int open_vision(chat_session *s, const chat_options *o, char *err, size_t errsz) {
    char msg[768];
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
        return st == G4V_ERR_ARG ? CHAT_ERR_USAGE : CHAT_ERR_MODEL;
    }
    g4v_model_get_info(s->vm, &s->vinfo, NULL, 0);
    /* budget 0: the checkpoint's own default (its processor_config.json), known once loaded */
    if (!s->o.budget) s->o.budget = s->vinfo.default_budget > 0 ? s->vinfo.default_budget
                                                                : G4V_DEFAULT_BUDGET;
    s->open_budget = s->o.budget;
    if (s->vinfo.math != o->math) { /* a borrowed model: the options must say what it computes */
        seterr(err, errsz, "the vision model computes in the math mode %s, not %s as asked",
               g4v_math_mode_name(s->vinfo.math), g4v_math_mode_name(o->math));
        return CHAT_ERR_USAGE;
    }
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = s->threads;
    if (g4v_ctx_create(s->vm, &co, &s->vctx, msg, sizeof msg)) {
        seterr(err, errsz, "vision context: %s", msg);
        return CHAT_ERR_INTERNAL;
    }
    return CHAT_OK;
}

/* The feature cache: borrowed, the one in cache_dir, or a private temporary one. */
static int open_cache(chat_session *s, const chat_options *o, char *err, size_t errsz) {
    char msg[768];
    if (o->cache) {
        s->cache = o->cache;
    } else if (o->cache_dir) {
        snprintf(s->cache_dir, sizeof s->cache_dir, "%s", o->cache_dir);
    } else {
        const char *where = NULL;
        if (fe_temp_dir(s->cache_dir, sizeof s->cache_dir, "g4v-chat", &where)) {
            seterr(err, errsz, "cannot create a temporary feature cache under %s", where);
            return CHAT_ERR_INTERNAL;
        }
        s->cache_private = 1;
    }
    if (!o->cache && g4v_cache_open(s->cache_dir, NULL, &s->cache, msg, sizeof msg)) {
        seterr(err, errsz, "feature cache: %s", msg);
        return CHAT_ERR_USAGE;
    }
    g4v_ctx_set_cache(s->vctx, s->cache);
    return CHAT_OK;
}

/* "…is not a Gemma 4 text model": the architecture is known and is not gemma4. */
static int not_gemma4(const chat_session *s, const char *path, char *err, size_t errsz) {
    if (!s->arch[0] || !strcmp(s->arch, "gemma4")) return 0;
    seterr(err, errsz,
           "%s is not a Gemma 4 text model (general.architecture is '%s', not 'gemma4')", path,
           s->arch);
    return 1;
}

/* llama.cpp's backends, then the Gemma 4 text model, checked against the vision model. */
static int open_text_model(chat_session *s, const chat_options *o, char *err, size_t errsz) {
    atomic_store(&g_verbose, o->verbose);
    llama_log_set(log_cb, NULL);
    if (chat_backend_load(err, errsz)) return CHAT_ERR_MODEL; /* no CPU backend for it */
    /* llama.cpp's AMX / repacked weights only where a child ran them first (chat_llama_probe.h) */
    chat_llama_probe probe;
    if (chat_llama_probe_get(&probe, err, errsz)) return CHAT_ERR_MODEL;
    chat_fatal_install(); /* a crash in llama.cpp's kernels says where and what to do */
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.use_extra_bufts = probe.use_extra_buffers != 0;
    clear_log();
    gguf_arch(o->lm_path, s->arch, sizeof s->arch);
    if (!strcmp(s->arch, "clip")) {
        seterr(err, errsz,
               "%s is a llama.cpp mmproj (vision projector) file, not a Gemma 4 text model: give "
               "it as --model and the text model's GGUF as --lm", o->lm_path);
        return CHAT_ERR_MODEL;
    }
    if (not_gemma4(s, o->lm_path, err, errsz)) return CHAT_ERR_MODEL;
    s->lm = llama_model_load_from_file(o->lm_path, mp);
    if (!s->lm) {
        seterr(err, errsz, "cannot load the language model %s%s", o->lm_path, last_log());
        return CHAT_ERR_MODEL;
    }
    if (llama_model_meta_val_str(s->lm, "general.architecture", s->arch, sizeof s->arch) < 0)
        s->arch[0] = 0;
    if (!s->arch[0]) snprintf(s->arch, sizeof s->arch, "%s", "(none)");
    if (not_gemma4(s, o->lm_path, err, errsz)) return CHAT_ERR_MODEL;
    s->n_embd = llama_model_n_embd_inp(s->lm);
    if (s->n_embd != s->vinfo.dim) {
        seterr(err, errsz,
               "the models do not belong together: the vision model %s gives soft tokens of %d "
               "floats, the text model %s takes %d (llama_model_n_embd)",
               o->vision_path, s->vinfo.dim, o->lm_path, s->n_embd);
        return CHAT_ERR_MODEL;
    }
    s->vocab = llama_model_get_vocab(s->lm);
    if (llama_vocab_n_tokens(s->vocab) <= s->vinfo.eoi_token_id) {
        seterr(err, errsz, "the text model's vocabulary (%d tokens) has no image tokens",
               llama_vocab_n_tokens(s->vocab));
        return CHAT_ERR_MODEL;
    }
    s->non_causal = chat_use_non_causal(!strcmp(s->vinfo.kind, "unified"), s->n_embd);
    return CHAT_OK;
}

/* The llama.cpp context the conversation lives in. */
static int open_context(chat_session *s, char *err, size_t errsz) {
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
    /* every layer's cache the whole context long, the sliding-window ones too: prompt reuse cuts
     * a context anywhere, and a window layer must still hold the positions before the cut
     * (docs/CHAT.md "Prompt reuse"; libllama's default, set here because reuse relies on it) */
    cp.swa_full = true;
    s->lctx = llama_init_from_model(s->lm, cp);
    if (!s->lctx) {
        seterr(err, errsz, "cannot create a llama.cpp context of %d tokens%s", s->n_ctx,
               last_log());
        return CHAT_ERR_INTERNAL;
    }
    s->n_ctx = (int)llama_n_ctx(s->lctx);
    return CHAT_OK;
}

/* The turn format (the model's template or ours), the special tokens, and the samplers of the
 * first conversation's parameters. */
static int open_turns(chat_session *s, const chat_options *o, char *err, size_t errsz) {
    char msg[768];
    if (chat_template_init(&s->tmpl, s->lm, o->chat_template, o->vision_path, msg,
                           sizeof msg)) {
        seterr(err, errsz, "%s: %s", o->lm_path, msg);
        return CHAT_ERR_USAGE;
    }
    s->tok_open = single_token(s->vocab, "<|channel>");
    s->tok_close = single_token(s->vocab, "<channel|>");
    s->tok_call = single_token(s->vocab, "<|tool_call>");
    s->tok_call_end = single_token(s->vocab, "<tool_call|>");
    s->tok_response = single_token(s->vocab, "<|tool_response>");
    int rc = chat_sampler_make(s, &s->o.params, &s->smpl, &s->grammar, err, errsz);
    if (rc) return rc;
    if (chat_template_set_tools(&s->tmpl, o->params.tools)) {
        seterr(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    s->o.params.grammar = NULL; /* the caller's: not kept past this call */
    s->o.params.tools = NULL;
    return CHAT_OK;
}

int chat_session_open(const chat_options *o, chat_session **out, char *err, size_t errsz) {
    *out = NULL;
    chat_session *s = calloc(1, sizeof *s);
    if (!s) {
        seterr(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    s->o = *o;
    if (!s->o.video_budget) s->o.video_budget = G4V_DEFAULT_VIDEO_BUDGET;
    if (!s->o.video_frames) s->o.video_frames = G4V_DEFAULT_VIDEO_FRAMES;
    s->n_ctx = o->n_ctx > 0 ? o->n_ctx : 8192;
    s->threads = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (s->threads < 1) s->threads = 1;
    int rc = open_vision(s, o, err, errsz);
    if (!rc) rc = open_cache(s, o, err, errsz);
    if (!rc) rc = open_text_model(s, o, err, errsz);
    if (!rc) rc = open_context(s, err, errsz);
    if (!rc) rc = open_turns(s, o, err, errsz);
    if (rc) {
        chat_session_close(s);
        return rc;
    }
    *out = s;
    return CHAT_OK;
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
    snprintf(i->template_origin, sizeof i->template_origin, "%s", s->tmpl.origin);
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
    free(r->reasoning);
    free(r->tool_calls);
    free(r->media);
    memset(r, 0, sizeof *r);
}

int chat_session_prefill(chat_session *s, const chat_media *media, int n_media,
                         const char *text, chat_turn_result *r, char *err, size_t errsz) {
    memset(r, 0, sizeof *r);
    int rc = chat_session_add_user(s, media, n_media, text, err, errsz);
    if (rc) return rc;
    chat_feed_stats st;
    rc = chat_session_feed(s, &st, err, errsz);
    if (rc) return rc;
    r->media = calloc((size_t)(n_media > 0 ? n_media : 1), sizeof *r->media);
    if (!r->media) {
        seterr(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    for (int i = 0; i < n_media && i < s->n_fed_media; i++) /* this turn's: the last ones */
        r->media[i] = s->fed_media[s->n_fed_media - n_media + i];
    r->n_media = n_media;
    r->n_prompt_text = st.text_tokens;
    r->n_prompt_rows = st.image_rows;
    r->n_prompt_pos = st.text_tokens + st.image_rows;
    r->encode_s = st.encode_s;
    r->prefill_s = st.prefill_s;
    r->n_cached = st.reused_pos;
    r->n_past = (int)s->n_past;
    return CHAT_OK;
}

int chat_session_generate(chat_session *s, chat_emit_fn emit, void *user, chat_turn_result *r,
                          char *err, size_t errsz) {
    int rc = CHAT_OK;
    double t0 = fe_now_s() - r->encode_s - r->prefill_s;
    struct llama_batch one = {0};
    chat_thought th;
    chat_thought_init(&th, emit, user);
    /* 4. the answer, its thought apart */
    one = llama_batch_init(1, 0, 1);
    if (!one.token) goto oom;
    r->stop = "max_tokens";
    double t2 = fe_now_s();
    llama_sampler_reset(s->smpl);
    if (s->grammar) llama_sampler_reset(s->grammar);
    chat_text calls = {0};
    size_t call_start = 0;
    int in_call = 0;
    for (int k = 0; s->o.params.max_tokens <= 0 || k < s->o.params.max_tokens; k++) {
        llama_token tok = chat_sample(s, err, errsz);
        if (tok < 0) {
            rc = CHAT_ERR_INTERNAL;
            break;
        }
        r->n_generated++;
        if (k == 0) r->ttft_s = fe_now_s() - t0; /* from the turn's start: encode + prefill + 1 */
        if (llama_vocab_is_eog(s->vocab, tok) || (tok == s->tok_response && r->n_tool_calls)) {
            /* after its calls the model would wait for <|tool_response>: the turn ends */
            r->stop = r->n_tool_calls && !in_call ? "tool_calls" : "end_of_turn";
            break;
        }
        char buf[256];
        int n = 0, a = 0;
        if (tok == s->tok_call || in_call) { /* a tool call: kept whole, special tokens as text */
            if (tok == s->tok_call && !in_call) {
                in_call = 1;
                call_start = calls.n;
            }
            n = llama_token_to_piece(s->vocab, tok, buf, (int32_t)sizeof buf, 0, true);
            if (n > 0 && chat_text_put(&calls, buf, (size_t)n)) goto oom;
            if (tok == s->tok_call_end) {
                in_call = 0;
                r->n_tool_calls++;
                if (emit) a = emit(calls.s + call_start, calls.n - call_start, CHAT_EMIT_TOOL_CALL,
                                   user);
            }
        } else {
            int kind = tok == s->tok_open    ? CHAT_PIECE_OPEN
                       : tok == s->tok_close ? CHAT_PIECE_CLOSE
                                             : CHAT_PIECE_TEXT;
            if (kind == CHAT_PIECE_TEXT)
                n = llama_token_to_piece(s->vocab, tok, buf, (int32_t)sizeof buf, 0, false);
            a = chat_thought_add(&th, kind, buf, n > 0 ? (size_t)n : 0);
        }
        if (a < 0) goto oom;
        if (a > 0) break;
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
        if (chat_items_push(s, chat_item_text(tok))) goto oom;
    }
    s->plan_base = s->n_items;
    /* a thought's first line still waiting to be told apart from a channel name is thought */
    if (chat_thought_finish(&th) < 0) goto oom;
    r->generate_s = fe_now_s() - t2;
    r->text = th.answer.s ? th.answer.s : calloc(1, 1);
    r->text_len = th.answer.n;
    th.answer.s = NULL;
    if (!r->text) goto oom;
    r->reasoning = th.thought.s;
    r->reasoning_len = th.thought.n;
    th.thought.s = NULL;
    r->tool_calls = calls.s;
    r->tool_calls_len = calls.n;
    calls.s = NULL;
    r->n_past = (int)s->n_past;
    /* the answer joins the conversation: the next turn's rendering holds it (thought stripped
     * as the template does; the context is cut where the rendering differs from it) */
    if (chat_template_add_answer(&s->tmpl, r->text, r->reasoning)) goto oom;
    s->plan_dirty = 1;
    chat_conversation_keep(s);
    goto out;
oom:
    seterr(err, errsz, "out of memory");
    rc = CHAT_ERR_INTERNAL;
out:
    if (one.token) llama_batch_free(one);
    chat_thought_free(&th);
    free(calls.s);
    return rc;
}

int chat_session_turn(chat_session *s, const chat_media *media, int n_media, const char *text,
                      chat_emit_fn emit, void *user, chat_turn_result *r, char *err,
                      size_t errsz) {
    int rc = chat_session_prefill(s, media, n_media, text, r, err, errsz);
    if (rc) return rc;
    return chat_session_generate(s, emit, user, r, err, errsz);
}

int chat_session_restart(chat_session *s, const chat_params *o, char *err, size_t errsz) {
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
    n.params = *o;
    n.params.budget = budget;
    n.budget = budget; /* what a medium without its own budget gets in this conversation */
    struct llama_sampler *smpl, *grammar;
    int rc = chat_sampler_make(s, &n.params, &smpl, &grammar, err, errsz);
    if (rc) return rc;
    if (chat_template_set_tools(&s->tmpl, o->tools)) {
        llama_sampler_free(smpl);
        if (grammar) llama_sampler_free(grammar);
        seterr(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    llama_sampler_free(s->smpl);
    if (s->grammar) llama_sampler_free(s->grammar);
    s->smpl = smpl;
    s->grammar = grammar;
    n.params.grammar = NULL; /* the caller's: not kept past this call */
    n.params.tools = NULL;   /* the template keeps its copy */
    s->o = n;
    chat_conversation_clear(s);
    if (s->o.no_prompt_reuse) {
        llama_memory_clear(llama_get_memory(s->lctx), true);
        s->n_past = 0;
        s->n_items = 0;
    }
    s->plan_base = 0;
    s->matching = 1; /* the next feed compares its plan with what the context holds */
    s->turns = 0;
    return CHAT_OK;
}

const uint64_t *chat_session_items(const chat_session *s, int *n) {
    *n = s->n_items;
    return s->items;
}

int chat_session_state_save(chat_session *s, void **state, size_t *size, char *err,
                            size_t errsz) {
    *state = NULL;
    *size = 0;
    /* the whole context's state, not sequence 0's (the only one here): llama.cpp leaves the
     * sliding-window layers' cells outside the window out of a sequence's state, which then
     * cannot be cut before its last window's start when it is resumed (a state longer than the
     * window was refused by the check in chat_session_state_load) */
    size_t n = llama_state_get_size(s->lctx);
    void *b = malloc(n ? n : 1);
    if (!b) {
        seterr(err, errsz, "out of memory saving a context state of %zu bytes", n);
        return -1;
    }
    if (llama_state_get_data(s->lctx, b, n) != n) {
        free(b);
        seterr(err, errsz, "llama_state_get_data failed%s", last_log());
        return -1;
    }
    *state = b;
    *size = n;
    return 0;
}

int chat_session_state_load(chat_session *s, const uint64_t *items, int n_items,
                            const void *state, size_t size, char *err, size_t errsz) {
    llama_memory_t mem = llama_get_memory(s->lctx);
    llama_memory_seq_rm(mem, 0, -1, -1);
    s->n_items = 0;
    s->n_past = 0;
    s->plan_base = 0;
    llama_pos n_pos = 0;
    for (int i = 0; i < n_items; i++)
        n_pos += chat_item_n_pos(items[i]);
    clear_log();
    if (llama_state_set_data(s->lctx, state, size) != size ||
        llama_memory_seq_pos_max(mem, 0) + 1 != n_pos || llama_memory_seq_pos_min(mem, 0) != 0) {
        llama_memory_seq_rm(mem, 0, -1, -1);
        seterr(err, errsz, "a saved context state of %zu bytes does not load%s", size, last_log());
        return -1;
    }
    for (int i = 0; i < n_items; i++)
        if (chat_items_push(s, items[i])) {
            llama_memory_seq_rm(mem, 0, -1, -1);
            s->n_items = 0;
            seterr(err, errsz, "out of memory");
            return -1;
        }
    s->n_past = n_pos;
    return 0;
}

struct llama_context *chat_session_llama_context(chat_session *s) { return s->lctx; }
const struct llama_model *chat_session_llama_model(const chat_session *s) { return s->lm; }
int chat_session_n_past(const chat_session *s) { return (int)s->n_past; }
