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

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


void chat_options_init(chat_options *o) {
    memset(o, 0, sizeof *o);
    chat_params_init(&o->params);
}

void chat_session_close(chat_session *s) {
    if (!s) return;
    chat_media_fed(s); /* whatever it encoded will not be decoded now */
    chat_conversation_clear(s);
    free(s->pt);
    free(s->pm);
    free(s->items);
    free(s->fed_media);
    if (s->smpl) llama_sampler_free(s->smpl);
    if (s->grammar) llama_sampler_free(s->grammar);
    free(s->cand);
    free(s->lp);
    free(s->gen_logits);
    free(s->held_logits);
    free(s->logits);
    if (s->engine && !s->own_engine && s->lctx) { /* the sequence is left empty for the next */
        chat_engine_lock(s->engine);
        llama_memory_seq_rm(llama_get_memory(s->lctx), s->seq, -1, -1);
        chat_engine_unlock(s->engine);
    }
    if (s->own_engine) chat_engine_close(s->engine);
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
    chat_media_own_vision(s);
    if (o->vision) return CHAT_OK; /* no context of its own: the encoder given has them */
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
    if (s->vctx) g4v_ctx_set_cache(s->vctx, s->cache);
    return CHAT_OK;
}

/* The decode batch: a whole image (or frame) in one decode call and one ubatch, needed for
 * bidirectional attention over its rows (docs/CHAT.md §3). */
static int batch_for(const chat_options *o, int budget, int video_budget) {
    int rows_max = budget > video_budget ? budget : video_budget;
    if (o->max_budget > rows_max) rows_max = o->max_budget;
    return rows_max > 512 ? rows_max : 512;
}

/* The text model and its context: the engine given (a sequence of its context), or one of the
 * session's own; checked against the vision model. */
static int open_text_model(chat_session *s, const chat_options *o, char *err, size_t errsz) {
    if (o->engine) {
        s->engine = o->engine;
        s->seq = o->seq;
        if (o->seq < 0 || o->seq >= chat_engine_n_seq(o->engine)) {
            seterr(err, errsz, "sequence %d is not one of the text model's %d", o->seq,
                   chat_engine_n_seq(o->engine));
            return CHAT_ERR_USAGE;
        }
    } else {
        chat_engine_options eo = {.lm_path = o->lm_path,
                                  .n_seq = 1,
                                  .n_ctx_seq = s->n_ctx,
                                  .n_batch = batch_for(o, s->o.budget, s->o.video_budget),
                                  .threads = s->threads,
                                  .verbose = o->verbose};
        if (chat_engine_open(&eo, &s->engine, err, errsz)) return CHAT_ERR_MODEL;
        s->own_engine = 1;
        s->seq = 0;
    }
    s->lm = chat_engine_model(s->engine);
    s->lctx = chat_engine_context(s->engine);
    s->n_ctx = chat_engine_n_ctx_seq(s->engine);
    s->n_batch = chat_engine_n_batch(s->engine);
    snprintf(s->arch, sizeof s->arch, "%s", chat_engine_arch(s->engine));
    s->n_embd = llama_model_n_embd_inp(s->lm);
    const char *lm_path = o->lm_path ? o->lm_path : "the text model";
    if (s->n_embd != s->vinfo.dim) {
        seterr(err, errsz,
               "the models do not belong together: the vision model %s gives soft tokens of %d "
               "floats, the text model %s takes %d (llama_model_n_embd)",
               o->vision_path, s->vinfo.dim, lm_path, s->n_embd);
        return CHAT_ERR_MODEL;
    }
    s->vocab = llama_model_get_vocab(s->lm);
    if (llama_vocab_n_tokens(s->vocab) <= s->vinfo.eoi_token_id) {
        seterr(err, errsz, "the text model's vocabulary (%d tokens) has no image tokens",
               llama_vocab_n_tokens(s->vocab));
        return CHAT_ERR_MODEL;
    }
    s->logits = malloc((size_t)llama_vocab_n_tokens(s->vocab) * sizeof *s->logits);
    if (!s->logits) {
        seterr(err, errsz, "out of memory");
        return CHAT_ERR_INTERNAL;
    }
    s->non_causal = chat_use_non_causal(!strcmp(s->vinfo.kind, "unified"), s->n_embd);
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
    i->threads = chat_engine_threads(s->engine);
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
    chat_thought th;
    chat_thought_init(&th, emit, user);
    /* 4. the answer, its thought apart; the engine's steps wait for this sequence's tokens */
    chat_engine_answering(s->engine, s->seq, 1);
    r->stop = "max_tokens";
    double t2 = fe_now_s();
    llama_sampler_reset(s->smpl);
    if (s->grammar) llama_sampler_reset(s->grammar);
    chat_text calls = {0};
    size_t call_start = 0;
    int in_call = 0;
    s->n_lp = 0;
    /* where it begins, for chat_session_rewind (another answer to the same prompt) */
    int nv = llama_vocab_n_tokens(s->vocab);
    if (!s->gen_logits && !(s->gen_logits = malloc((size_t)nv * sizeof *s->gen_logits))) goto oom;
    memcpy(s->gen_logits, s->logits, (size_t)nv * sizeof *s->gen_logits);
    s->gen_past = s->n_past;
    s->gen_items = s->n_items;
    s->gen_msgs = s->tmpl.n_msgs;
    s->gen_kept_msgs = s->kept_msgs;
    for (int k = 0; s->o.params.max_tokens <= 0 || k < s->o.params.max_tokens; k++) {
        int gated = chat_engine_gate_enter(s->engine); /* g4v serve's CPU budget */
        llama_token tok = chat_sample(s, err, errsz);
        chat_engine_gate_leave(s->engine, gated);
        if (tok < 0) {
            rc = CHAT_ERR_INTERNAL;
            break;
        }
        r->n_generated++;
        if (k == 0) {
            r->ttft_s = fe_now_s() - t0; /* from the turn's start: encode + prefill + 1 */
            /* the prompt's media are decoded and its first token drawn: a shared encoder may
             * take the cores for the next conversation's (chat_vision.fed) */
            chat_media_fed(s);
        }
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
            if (s->o.params.logprobs && kind == CHAT_PIECE_TEXT && th.mode == 0) {
                /* an answer token: recorded before the emit that may read it */
                if (s->n_lp == s->cap_lp) {
                    int cap = s->cap_lp ? 2 * s->cap_lp : 64;
                    chat_logprob *v = realloc(s->lp, (size_t)cap * sizeof *v);
                    if (!v) goto oom;
                    s->lp = v;
                    s->cap_lp = cap;
                }
                chat_logprob_of(s, tok, s->o.params.top_logprobs, &s->lp[s->n_lp++]);
            }
            a = chat_thought_add(&th, kind, buf, n > 0 ? (size_t)n : 0);
        }
        if (a < 0) goto oom;
        if (a > 0) break;
        if (s->n_past + 1 > s->n_ctx) {
            r->stop = "context_full";
            break;
        }
        char msg[300];
        if (chat_engine_decode(s->engine, s->seq, &tok, 1, s->n_past, s->logits, msg,
                               sizeof msg)) {
            seterr(err, errsz, "while answering: %s", msg);
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
    r->call_cut = in_call;
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
    chat_engine_answering(s->engine, s->seq, 0);
    chat_thought_free(&th);
    free(calls.s);
    return rc;
}

int chat_session_rewind(chat_session *s, uint32_t seed, char *err, size_t errsz) {
    if (!s->gen_logits || s->n_past < s->gen_past) {
        seterr(err, errsz, "no answer to go back from");
        return CHAT_ERR_INTERNAL;
    }
    chat_engine_lock(s->engine);
    llama_memory_seq_rm(llama_get_memory(s->lctx), s->seq, s->gen_past, -1);
    chat_engine_unlock(s->engine);
    s->n_past = s->gen_past;
    s->n_items = s->gen_items;
    s->plan_base = s->gen_items;
    while (s->tmpl.n_msgs > s->gen_msgs) chat_template_pop(&s->tmpl);
    s->kept_msgs = s->gen_kept_msgs;
    s->plan_dirty = 1;
    memcpy(s->logits, s->gen_logits, (size_t)llama_vocab_n_tokens(s->vocab) * sizeof *s->logits);
    if (chat_sampler_reseed(s, seed)) {
        seterr(err, errsz, "cannot create the sampler");
        return CHAT_ERR_INTERNAL;
    }
    return CHAT_OK;
}

const chat_logprob *chat_session_logprobs(const chat_session *s, int *n) {
    *n = s->n_lp;
    return s->lp;
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
    chat_media_fed(s); /* the last conversation's media: decoded, or never to be */
    chat_conversation_clear(s);
    if (s->o.no_prompt_reuse) {
        chat_engine_lock(s->engine);
        llama_memory_seq_rm(llama_get_memory(s->lctx), s->seq, -1, -1);
        chat_engine_unlock(s->engine);
        s->n_past = 0;
        s->n_items = 0;
        s->held_items = -1;
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
    /* the sequence's state, its sliding-window cells outside the last window too (our
     * llama.cpp patch seq-state-keeps-window-cells): without them a state longer than the
     * window could not be cut before its last window's start once resumed */
    chat_engine_lock(s->engine);
    size_t n = llama_state_seq_get_size(s->lctx, s->seq);
    void *b = malloc(n ? n : 1);
    size_t got = b ? llama_state_seq_get_data(s->lctx, b, n, s->seq) : 0;
    chat_engine_unlock(s->engine);
    if (!b) {
        seterr(err, errsz, "out of memory saving a context state of %zu bytes", n);
        return -1;
    }
    if (got != n) {
        free(b);
        seterr(err, errsz, "llama_state_seq_get_data failed%s", chat_engine_last_log());
        return -1;
    }
    *state = b;
    *size = n;
    return 0;
}

int chat_session_state_load(chat_session *s, const uint64_t *items, int n_items,
                            const void *state, size_t size, char *err, size_t errsz) {
    llama_memory_t mem = llama_get_memory(s->lctx);
    s->n_items = 0;
    s->n_past = 0;
    s->plan_base = 0;
    s->held_items = -1; /* the context is another one now */
    llama_pos n_pos = 0;
    for (int i = 0; i < n_items; i++)
        n_pos += chat_item_n_pos(items[i]);
    chat_engine_lock(s->engine);
    llama_memory_seq_rm(mem, s->seq, -1, -1);
    chat_engine_clear_log();
    int ok = llama_state_seq_set_data(s->lctx, state, size, s->seq) == size &&
             llama_memory_seq_pos_max(mem, s->seq) + 1 == n_pos &&
             llama_memory_seq_pos_min(mem, s->seq) == 0;
    if (!ok) llama_memory_seq_rm(mem, s->seq, -1, -1);
    chat_engine_unlock(s->engine);
    if (!ok) {
        seterr(err, errsz, "a saved context state of %zu bytes does not load%s", size,
               chat_engine_last_log());
        return -1;
    }
    for (int i = 0; i < n_items; i++)
        if (chat_items_push(s, items[i])) {
            chat_engine_lock(s->engine);
            llama_memory_seq_rm(mem, s->seq, -1, -1);
            chat_engine_unlock(s->engine);
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
