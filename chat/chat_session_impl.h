/* chat_session_impl.h - the inside of a chat session, shared by the files that make it up:
 *   chat_session.c  open, close, information, a new conversation, the answer
 *   chat_media.c    the media encoded by libg4v (through the feature cache) by the session's
 *                   encoder (its own g4v_ctx, or a chat_vision given), and their identity
 *   chat_feed.c     the plan of a prompt (turns rendered and tokenized, images not yet encoded)
 *                   and its feeding: the prefix the context already holds is kept, the rest
 *                   decoded (docs/CHAT.md "Prompt reuse")
 * Invariant: items[0..n_items) is exactly what the llama context holds on sequence seq, and their
 * positions add up to n_past. */
#ifndef G4V_CHAT_SESSION_IMPL_H
#define G4V_CHAT_SESSION_IMPL_H

#include "chat_engine.h"
#include "chat_prefill.h"
#include "chat_session.h"
#include "chat_template.h"
#include "g4v.h"
#include "llama.h"

#include <stdint.h>

/* One encoded medium: its rows (copied out of the g4v ctx) and, for a video, frame labels. */
typedef fe_encoded enc_media; /* a plan medium's rows (common/encoded.h) */

/* A medium of the plan: where it comes from (borrowed until the feed returns), its identity,
 * and its rows once encoded (an image is encoded only when it must be decoded). */
typedef struct plan_medium {
    chat_media src;
    uint64_t hash;  /* content hash (chat_media_hash) */
    enc_media e;    /* e.rows NULL while not encoded */
    chat_media_stat stat;
    int turn;       /* the message it belongs to */
    char *path_copy; /* src.path, owned (a file named by g4v chat: later turns plan it again) */
} plan_medium;

/* The plan: the whole conversation rendered and tokenized (one such turn). */
typedef struct plan_turn {
    chat_chunks ch;
} plan_turn;

struct chat_session {
    chat_options o;
    int open_budget; /* the budget the session was opened with: a restart's default */
    g4v_model *vm;
    g4v_ctx *vctx;                  /* the own encoder's (NULL with o.vision) */
    const chat_vision *vision;      /* o.vision, or own_vision */
    chat_vision own_vision;         /* over vctx (chat_media.c) */
    g4v_cache *cache;
    char cache_dir[512];
    int cache_private;
    g4v_model_info vinfo;
    chat_engine *engine;            /* the text model and its context (o.engine, or own) */
    int own_engine;
    llama_seq_id seq;               /* the conversation's sequence in the engine's context */
    float *logits;                  /* the last decoded position's logits [n_vocab] */
    struct llama_model *lm;         /* the engine's */
    struct llama_context *lctx;     /* the engine's: llama calls on it other than decoding
                                       tokens (chat_engine_decode) on the engine thread when
                                       they compute (chat_engine_call), else under
                                       chat_engine_lock */
    const struct llama_vocab *vocab;
    struct llama_sampler *smpl;
    struct llama_sampler *grammar;  /* o.grammar's sampler, or NULL (chat_sample.c) */
    llama_token_data *cand;         /* the candidates of a grammar-checked draw [n_vocab] */
    chat_logprob *lp;               /* the answer's tokens' log-probabilities (o.params.logprobs) */
    /* where the last generate began (chat_session_rewind): positions, items, messages, and the
     * logits it drew its first token from */
    llama_pos gen_past;
    int gen_items, gen_msgs, gen_kept_msgs;
    float *gen_logits;
    /* the logits at the end of the last prompt fed (held_items items, their hash held_hash;
     * -1: none): a prompt the context holds whole gets them back instead of its last position
     * decoded again alone, which rounds differently (chat_feed.c) */
    float *held_logits;
    int held_items;
    uint64_t held_hash;
    int n_lp, cap_lp;
    chat_template tmpl;
    llama_token tok_open, tok_close; /* <|channel> and <channel|> (-1: not in the vocabulary) */
    llama_token tok_call, tok_call_end, tok_response; /* <|tool_call>, <tool_call|>,
                                                         <|tool_response> (or -1) */
    char arch[32];
    int n_embd, n_ctx, n_batch, threads, non_causal, turns;
    llama_pos n_past;

    /* what the context holds */
    uint64_t *items;
    int n_items, cap_items;
    /* the conversation: its messages are in tmpl, its media in pm (kept_msgs/kept_media of them
     * were fed; the rest leave it when a feed refuses them) */
    plan_medium *pm;
    int n_pm, cap_pm, kept_msgs, kept_media;
    /* the plan not yet fed: the whole conversation rendered (plan_dirty: not yet), compared from
     * items[plan_base] on (0: the whole rendering is compared with the context) */
    plan_turn *pt;
    int n_pt, cap_pt;
    int plan_base, matching, plan_dirty;
    chat_media_stat *fed_media; /* the last fed plan's media */
    int n_fed_media;
};

/* chat_media.c */
/* Sets s->vision: o.vision, or the session's own encoder over vctx. */
void chat_media_own_vision(chat_session *s);
/* Encodes the media of pms[0..n) through s->vision (one call: a shared encoder may batch them)
 * into their rows and stats; m alone. CHAT_OK or an error with its message. */
int chat_media_encode_all(chat_session *s, plan_medium **pms, int n, char *err, size_t errsz);
int chat_media_encode(chat_session *s, plan_medium *m, char *err, size_t errsz);
/* Tells the encoder that what it encoded is decoded, or never will be (chat_vision.fed). */
void chat_media_fed(chat_session *s);
/* A medium's soft tokens per image (per frame for a video): its own budget, else the session's. */
int chat_media_budget(const chat_session *s, const chat_media *m);
/* The content hash of a medium: its bytes (memory or file), kind and budget (frames for a
 * video). 0 with *out, or CHAT_ERR_INPUT for an unreadable file. */
int chat_media_hash(const chat_session *s, const chat_media *m, uint64_t *out, char *err,
                    size_t errsz);
uint64_t chat_frame_hash(uint64_t video_hash, int frame);

/* chat_sample.c: the sampler of a conversation's settings (o: temp, top_k, top_p, seed, and
 * grammar / grammar_lazy into *grammar, NULL without one), and one token drawn under both. */
int chat_sampler_make(chat_session *s, const chat_params *o, struct llama_sampler **chain,
                      struct llama_sampler **grammar, char *err, size_t errsz);
/* -1 when the grammar allows no token (with a message). */
llama_token chat_sample(chat_session *s, char *err, size_t errsz);
/* A new sampling chain of the conversation's settings with another seed (chat_session_rewind). */
int chat_sampler_reseed(chat_session *s, uint32_t seed);
/* The log-probability of tok under the last position's raw logits (log-softmax over the whole
 * vocabulary) and the top n likeliest, into *out. */
void chat_logprob_of(const chat_session *s, llama_token tok, int n, chat_logprob *out);

/* chat_feed.c */
void chat_plan_clear(chat_session *s);
void chat_conversation_clear(chat_session *s); /* messages, media and plan */
void chat_conversation_keep(chat_session *s);  /* what is in it now stays on a refusal */
int chat_items_push(chat_session *s, uint64_t item);

#endif
