/* chat_session.h - a conversation with a Gemma 4 text model in libllama about images and videos
 * encoded by libg4v (docs/CHAT.md). One session = one conversation: one sequence of a text
 * model's context (chat_engine.h) whose KV cells hold the whole conversation, and a vision model
 * + feature cache that encode its media. The session opens what it is not lent: g4v chat's one
 * session opens all of them; g4v serve's slots share one engine (one text model, one context, a
 * sequence per slot), the service's vision model and one feature cache (chat_options: engine,
 * seq, vision_model, cache). */
#ifndef G4V_CHAT_SESSION_H
#define G4V_CHAT_SESSION_H

#include "chat_params.h"
#include "g4v.h"
#include "encoded.h" /* common/: fe_encoded */
#include "medium.h"  /* common/: fe_medium */

#include <stddef.h>
#include <stdint.h>

/* Failure kinds (the CLI maps them to its exit codes). */
enum {
    CHAT_OK = 0,
    CHAT_ERR_USAGE = 1,    /* a bad option value */
    CHAT_ERR_INPUT = 2,    /* an image/video that cannot be encoded, a prompt over the context */
    CHAT_ERR_MODEL = 3,    /* a model that cannot be loaded, is not Gemma 4, or does not fit */
    CHAT_ERR_INTERNAL = 5  /* llama_decode failed, out of memory */
};

struct chat_vision;

/* The session's constants; what each request asks is chat_params (chat_params.h). */
typedef struct chat_options {
    const char *lm_path;     /* Gemma 4 text model, GGUF */
    const char *vision_path; /* Hugging Face checkpoint dir or mmproj GGUF */
    int n_ctx;               /* context tokens; 0 = 8192 */
    int threads;             /* 0 = one per online CPU */
    int budget;              /* the session's image soft tokens, which a request's 0 means:
                                0 = the model's default (280), else one of G4V_BUDGETS */
    int video_budget;        /* per video frame: 0 = 70 */
    int video_frames;        /* frames per video: 0 = 32 */
    const char *cache_dir;   /* feature cache; NULL = a private temporary one */
    g4v_math_mode math;      /* libg4v's math mode (G4V_MATH_FAST by default, PRECISE, INT8
                                or INT8_BLOCKS); with vision_model, that model's own mode */
    int verbose;             /* 1: let llama.cpp log to stderr */
    struct g4v_model *vision_model; /* borrowed instead of loading vision_path, or NULL */
    struct g4v_cache *cache;        /* borrowed instead of opening cache_dir, or NULL */
    int max_budget;          /* largest budget chat_session_restart may ask for (it sizes the
                                decode batch); 0 = budget */
    const char *chat_template; /* a Jinja file, or "builtin", instead of the model's own template
                                  (docs/CHAT.md §2); NULL: the model's */
    int no_prompt_reuse;     /* 1: a restart clears the context (every request decodes its whole
                                prompt); 0: it keeps it, and the next prompt's prefix that the
                                context holds is not decoded again (docs/CHAT.md "Prompt reuse") */
    chat_params params;      /* the first conversation's (chat_params_init's by default) */
    struct chat_engine *engine; /* borrowed text model and context (chat_engine.h), shared with
                                   other sessions, instead of loading lm_path; NULL: the session
                                   opens one of its own (one sequence, n_ctx, threads) */
    int seq;                 /* with engine: the sequence this session's conversation lives in
                                (no other session may use it) */
    const struct chat_vision *vision; /* borrowed encoder of the media (g4v serve: the encode
                                wing's contexts, shared by every slot), or NULL: a g4v_ctx of the
                                session's own with `threads` threads (g4v chat). The vision model
                                and feature cache are still the session's (vision_model, cache):
                                the encoder must use the same ones */
} chat_options;

void chat_options_init(chat_options *o);

typedef struct chat_session chat_session;

/* One medium of a user turn: a file, or its bytes in memory. */
typedef struct chat_media {
    const char *path;  /* the file, or only a name for messages when data is set */
    fe_medium medium;  /* an image or a video */
    const void *data;  /* the bytes in memory (g4v serve's data: URIs), or NULL */
    size_t size;
    int budget;        /* soft tokens of this image (of each frame of a video); 0: the
                          session's budget (video_budget), else one of G4V_BUDGETS */
    const char *url;   /* g4v serve --allow-image-urls: where the caller fetches data from
                          before it plans the turn, or NULL; the session never reads it */
} chat_media;

/* One medium's soft tokens as an encoder gives them (chat_vision): malloc'ed arrays that the
 * session takes over. */
typedef fe_encoded chat_encoded; /* common/encoded.h */

/* What encodes a session's media. encode: media[0..n) (one turn's, in order; budgets[i] soft
 * tokens per image or per video frame, a video sampled in `frames` frames) into out[0..n),
 * each what libg4v gives for it alone. CHAT_OK, or the first failure's CHAT_ERR_INPUT (the
 * medium cannot be encoded) or CHAT_ERR_INTERNAL with its message in err (chat_media_error); the
 * outs before it are filled, the others left zero. fed (optional): what it encoded has been
 * decoded and the answer's first token drawn, or it never will be (a feed refused, a restart,
 * the close): g4v serve's encoders hold their next image until then, so that with the cores
 * busy a conversation gets its first token before the next conversation's image takes them. */
typedef struct chat_vision {
    void *ctx;
    int (*encode)(void *ctx, const struct chat_media *media, const int *budgets, int frames,
                  int n, chat_encoded *out, char *err, size_t errsz);
    void (*fed)(void *ctx);
} chat_vision;

/* The message of a failed encode (libg4v's status st, message msg) as the session words it,
 * into err: the returned CHAT_ERR_INTERNAL for memory or the library failing, else
 * CHAT_ERR_INPUT. For encoders other than the session's own. */
int chat_media_error(const struct chat_media *m, int st, const char *msg, char *err,
                     size_t errsz);
void chat_encoded_free(chat_encoded *e);

typedef struct chat_media_stat {
    fe_medium medium;
    int n_rows;     /* soft tokens (all frames of a video) */
    int n_frames;   /* video frames (1 for an image) */
    int width, height; /* target size */
    int cache_hit;  /* image served from the feature cache */
    int reused;     /* an image the context already held: neither encoded nor decoded again */
    double seconds; /* encode (or cache read) time */
} chat_media_stat;

typedef struct chat_turn_result {
    char *text;             /* the answer (bytes as the model produced them), NUL-terminated,
                               without its thought */
    size_t text_len;
    char *reasoning;        /* the thought (between <|channel>thought\n and <channel|>), or NULL */
    size_t reasoning_len;
    int n_prompt_pos;       /* positions of the prompt: the whole conversation so far, rendered */
    int n_prompt_text;      /* of which text tokens */
    int n_prompt_rows;      /* of which image rows */
    int n_generated;        /* tokens sampled (the end-of-turn token included) */
    int n_past;             /* positions in the context after the turn */
    int n_cached;           /* of them, positions the context held already (earlier turns, as
                               far as the new rendering equals them): not decoded again */
    const char *stop;       /* "end_of_turn", "tool_calls" (the model ended its turn after
                               calling tools), "max_tokens" or "context_full" */
    char *tool_calls;       /* the tool calls as the model wrote them (<|tool_call>call:...
                               <tool_call|> each, special tokens as text; chat_tool_call.h
                               parses them), or NULL */
    size_t tool_calls_len;
    int n_tool_calls;       /* complete calls in it */
    int call_cut;           /* 1: after them a call begun and not finished when the answer ended
                               (max_tokens, the context): the rest of tool_calls, from its
                               <|tool_call> */
    double encode_s, prefill_s, ttft_s, generate_s;
    chat_media_stat *media; /* [n_media] */
    int n_media;
} chat_turn_result;

void chat_turn_result_free(chat_turn_result *r);

/* Which part of the answer a piece given to chat_emit_fn is. */
typedef enum chat_emit_kind {
    CHAT_EMIT_ANSWER = 0,   /* a piece of the answer's text */
    CHAT_EMIT_THOUGHT = 1,  /* a piece of its thought */
    CHAT_EMIT_TOOL_CALL = 2 /* one whole tool call, once complete: <|tool_call>...<tool_call|> */
} chat_emit_kind;
/* Streams each piece of the answer as it is sampled, with its kind. Return nonzero to stop. */
typedef int (*chat_emit_fn)(const char *piece, size_t len, chat_emit_kind kind, void *user);

/* Loads both models and checks that they belong together. CHAT_OK or a CHAT_ERR_* with a
 * message in err. */
int chat_session_open(const chat_options *o, chat_session **out, char *err, size_t errsz);
void chat_session_close(chat_session *s);

/* One user turn in two halves: encode the media (through the feature cache) and feed the
 * prompt (the logits of its last position are then in the llama context), and sample the
 * answer. A turn that fails before its prompt is fed (an unreadable image, a prompt over the
 * context) leaves the session as it was; the conversation can go on. */
int chat_session_prefill(chat_session *s, const chat_media *media, int n_media,
                         const char *text, chat_turn_result *r, char *err, size_t errsz);
int chat_session_generate(chat_session *s, chat_emit_fn emit, void *user, chat_turn_result *r,
                          char *err, size_t errsz);

/* A new conversation on the same models and context (g4v serve: one per request): forgets
 * every turn -- the context keeps what it holds for the next feed to reuse, unless the session
 * was opened with no_prompt_reuse -- and takes p, the request's parameters (budget 0: the one
 * the session was opened with, whatever earlier restarts asked for; p's strings are copied, the
 * grammar is not kept). CHAT_OK, or CHAT_ERR_USAGE for a budget that is not one of G4V_BUDGETS
 * or above the session's max_budget, or a grammar libllama does not parse. */
int chat_session_restart(chat_session *s, const chat_params *p, char *err, size_t errsz);

/* A prompt in two steps (g4v serve replays a request's conversation this way): plan its turns
 * -- a user turn (media, text), or an earlier answer of the model (an assistant message, fed
 * without sampling as if the model had said it) -- then feed the plan. Planning renders and
 * tokenizes; an image is only hashed (a video is encoded: its frames decide its text). Feeding
 * keeps what the context already holds of the plan from its start (after a restart that kept
 * the context) and decodes the rest, encoding the images in it first; the logits of the last
 * position are then in the llama context. Media stay borrowed until the feed returns. A plan
 * refused before the context changes (an image that cannot be encoded, a prompt over the
 * context) leaves the session as it was; one that fails while decoding leaves the context
 * holding what it held before the feed. CHAT_OK, CHAT_ERR_INPUT or CHAT_ERR_INTERNAL. */
int chat_session_add_user(chat_session *s, const chat_media *media, int n_media, const char *text,
                          char *err, size_t errsz);
int chat_session_add_answer(chat_session *s, const char *text, char *err, size_t errsz);
/* A user turn as its content parts in the client's order (g4v serve): a text (media NULL) or a
 * medium each. chat_session_add_user is the media followed by one text. */
typedef struct chat_part {
    const char *text;
    const chat_media *media;
} chat_part;
int chat_session_add_user_parts(chat_session *s, const chat_part *parts, int n_parts, char *err,
                                size_t errsz);
/* An earlier answer with its thought (reasoning_content; the template decides whether it is
 * rendered: Gemma 4's only after the last user turn). */
int chat_session_add_answer_thought(chat_session *s, const char *text, const char *reasoning,
                                    char *err, size_t errsz);

/* An earlier answer that called tools (tool_calls: a JSON array of OpenAI tool_calls whose
 * function.arguments are objects), and a tool's result (the next message of the conversation
 * after such an answer; tool_call_id may be NULL). They render only through the model's own
 * template. */
int chat_session_add_tool_calls(chat_session *s, const char *text, const char *reasoning,
                                const char *tool_calls, char *err, size_t errsz);
int chat_session_add_tool_result(chat_session *s, const char *tool_call_id, const char *content,
                                 char *err, size_t errsz);
/* A system (or developer) message in the conversation's order (not the first one: that is
 * chat_params.system), rendered where it stands by the template. */
int chat_session_add_system(chat_session *s, const char *text, char *err, size_t errsz);
/* Renders the conversation planned so far (the template only: nothing tokenized or decoded),
 * to tell whether the template takes it. CHAT_OK, or CHAT_ERR_INPUT with the template's
 * message. */
int chat_session_check_render(chat_session *s, char *err, size_t errsz);

typedef struct chat_feed_stats {
    int reused_pos;  /* positions of the plan the context held: not decoded */
    int decoded_pos; /* positions decoded */
    int text_tokens, image_rows; /* the whole plan's */
    int images_reused, images_encoded, images_cached; /* images (video frames: per video) */
    double encode_s, prefill_s;
} chat_feed_stats;
int chat_session_feed(chat_session *s, chat_feed_stats *st, char *err, size_t errsz);

/* What the context holds as items (chat_items.h), and what it would hold once the plan is fed
 * (malloc'ed; images whose rows are not known yet carry 0 rows). 0, or -1 out of memory. */
const uint64_t *chat_session_items(const chat_session *s, int *n);
int chat_session_plan_items(chat_session *s, uint64_t **items, int *n);

/* What the context holds, as the prompt text (special tokens written out, each image row as
 * <|image|>) and token ids (an image row as the image token's id): after a feed, the prompt the
 * model was given (g4v chat --print-prompt). Both malloc'd. 0, or -1 out of memory. */
int chat_session_prompt(const chat_session *s, char **text, int32_t **ids, int *n_ids);

/* The context's state (sequence 0: llama_state_seq_get_data) and its items, for the prompt
 * cache: saved into a malloc'ed buffer, and loaded in place of what the context holds (after a
 * restart, before the plan is fed). 0, or -1 with a message (a state that does not load leaves
 * the context empty). */
int chat_session_state_save(chat_session *s, void **state, size_t *size, char *err, size_t errsz);
int chat_session_state_load(chat_session *s, const uint64_t *items, int n_items,
                            const void *state, size_t size, char *err, size_t errsz);

/* What a saved state of this session's context depends on besides its items, as text for the
 * prompt cache's key (chat_identity.c): both models' fingerprints, the math mode, libllama's
 * CPU features, the context settings. 0, or -1 with a message. */
int chat_session_identity(chat_session *s, char *out, size_t cap, char *err, size_t errsz);

/* For tests: the libllama objects and the position count. */
struct llama_context *chat_session_llama_context(chat_session *s);
const struct llama_model *chat_session_llama_model(const chat_session *s);
int chat_session_n_past(const chat_session *s);

/* Back to where the last chat_session_generate began: the answer leaves the context and the
 * conversation, the prompt's last logits are restored, and the sampling chain is made again with
 * seed; the next generate draws another answer to the same prompt, which is not decoded again
 * (g4v serve's "n"). CHAT_OK, or CHAT_ERR_INTERNAL. */
int chat_session_rewind(chat_session *s, uint32_t seed, char *err, size_t errsz);

/* One answer token's log-probability and the likeliest tokens at its position (chat_params
 * logprobs, top_logprobs). */
typedef struct chat_logprob {
    int32_t token;
    float logprob;
    int n_top;
    int32_t top[CHAT_MAX_TOP_LOGPROBS];
    float top_logprob[CHAT_MAX_TOP_LOGPROBS];
} chat_logprob;
/* The answer's tokens so far with their log-probabilities (with params.logprobs; the tokens of
 * the answer's text only: not its thought, tool calls or end-of-turn token). Valid until the
 * next generate or restart; may be read by the emit callback. */
const chat_logprob *chat_session_logprobs(const chat_session *s, int *n);

typedef struct chat_session_info {
    char arch[32];
    int n_embd, n_ctx, n_layer, n_vocab, threads, n_batch;
    int non_causal;        /* image rows attend to each other in the sliding-window layers */
    int builtin_template;  /* 1: Gemma 4's format written by us */
    char template_origin[600]; /* where the chat template came from */
    char vision_kind[16];  /* "tower" or "unified" */
    char vision_variant[32];
    int budget, video_budget, video_frames;
    uint64_t cache_hits, cache_misses;
    char cache_dir[512];
    int cache_private;
} chat_session_info;

void chat_session_get_info(const chat_session *s, chat_session_info *info);

#endif
