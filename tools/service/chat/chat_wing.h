/* chat_wing.h - what the files of the chat wing share (docs/CHAT_API.md): one chat job (an
 * OpenAI chat.completions request as parsed, and its life while it waits, runs on a
 * language-model slot and streams), the wing's state, and the functions of each file:
 *   chat_request.c  the request's JSON -> a chat_job (messages, images, sampling, limits)
 *   chat_routes.c   the wing's descriptor: POST /v1/chat/completions and GET /v1/models, added
 *                   to the core's route table with --lm only
 *   chat_sse.c      the answer as JSON or as server-sent events, the streaming response, and the
 *                   OpenAI-style error body
 *   chat_precheck.c what is checked of a job before it waits: its grammar, the vocabulary,
 *                   the context
 *   chat_slots.c    the job kind "chat": the slots (one chat_session each) run by the workers
 *                   of the core's queue (core/queue.c); with chat_replay.c, chat_generate.c and
 *                   chat_cache_use.c (chat_slots_impl.h: the conversation onto a slot, the
 *                   answer, the prompt cache's use)
 *   chat_affinity.c which free slot a request goes to: the one whose conversation it continues
 *   chat_metrics.c  the chat lines of GET /metrics
 *   chat_responses.c POST /v1/responses: its body into a chat request, the answer as a response
 *                   object or response.* events
 *   chat_fetch.c    an image URL fetched under --allow-image-urls (libcurl)
 *   chat_vision.c   each slot's encoder of images and videos: the encode wing's contexts
 * Only the slots' files and chat_precheck.c touch libllama (through chat/); without it
 * `--lm` is refused by chat_slots.c. The files call one another in one direction only:
 * routes -> slots -> affinity, routes -> precheck -> request, slots -> responses -> sse ->
 * request, slots -> fetch, slots -> vision, routes -> vision (the slots: chat_slots.c and the
 * files of chat_slots_impl.h).
 *
 * Who holds a job: the request (until libmicrohttpd completes it), the queue and then a slot's
 * worker, and a streaming response (until libmicrohttpd frees it); job->refs counts them, and
 * job->mu guards what they share (the stream's bytes, gone, suspended). */
#ifndef G4V_SERVICE_CHAT_WING_H
#define G4V_SERVICE_CHAT_WING_H

#include "chat_params.h"  /* chat/: what a request asks of a session */
#include "chat_session.h" /* chat/: chat_media, one image or video of a user turn */
#include "core/core.h"

#include <stdint.h>

/* The limits of one chat request (docs/CHAT_API.md, "Limits"), each answered with its own
 * error code. */
#define CHAT_MAX_STOP 4       /* stop strings (as OpenAI) */
#define CHAT_MAX_STOP_LEN 64  /* bytes per stop string */
#define CHAT_MAX_BIAS 1024    /* logit_bias entries */
#define CHAT_MAX_N 8          /* "n": choices of one request */
#define CHAT_MAX_KEYS 256     /* keys of a conversation that slot affinity looks at (two per
                                 user turn, one per answer) */

/* SYSTEM: a system or developer message after the first user, assistant or tool message (the
 * ones before it are chat_job.system) */
enum { CHAT_ROLE_USER, CHAT_ROLE_ASSISTANT, CHAT_ROLE_TOOL, CHAT_ROLE_SYSTEM };

/* tool_choice (docs/CHAT_API.md "Tools") */
enum { CHAT_TOOLS_AUTO, CHAT_TOOLS_NONE, CHAT_TOOLS_REQUIRED, CHAT_TOOLS_NAMED };
#define CHAT_MAX_TOOLS 128 /* functions in one request's "tools" */

/* A turn of the replayed conversation: consecutive user messages are merged into one. */
/* A user turn's content part, in the client's order: an image or video of media[], or a text. */
typedef struct chat_part_in {
    int media;  /* >= 0: media[media]; -1: text */
    char *text; /* the text part's (owned) */
} chat_part_in;

typedef struct chat_turn_in {
    int role;
    int msg;          /* the index in "messages" of its first message (for errors) */
    char *text;       /* the text parts, one per line (affinity keys, assistant answers) */
    chat_part_in *parts;
    int n_parts;
    char *reasoning; /* an assistant message's reasoning_content, or NULL */
    char *tool_calls; /* an assistant message's tool_calls, arguments parsed into objects (the
                         form templates take), as JSON text; or NULL */
    char *tool_call_id; /* a tool message's, or NULL */
    /* a user turn's images and videos (an image_url part's image, a video_url part's video) as
     * the session takes them, each owned (path, data, url malloc'ed): the bytes of a data: URI
     * (path: "image N" or "video N", for messages), a file under --allow-files (path: the
     * resolved file), or an http(s) URL under --allow-image-urls (path: the name), fetched by
     * the slot into data; budget: the part's "g4v": {"tokens": N} (per frame for a video), or 0 */
    chat_media *media;
    int n_media;
} chat_turn_in;

/* What a refused request is answered: {"error": {"message", "type", "param", "code"}}. */
typedef struct chat_fail {
    int http;
    const char *type; /* "invalid_request_error", "server_error", ... */
    const char *param; /* the request field at fault, or NULL (null); chat_fail_set clears it */
    const char *code; /* e.g. "too_many_images"; documented in docs/SERVICE.md */
    char msg[600];
} chat_fail;

typedef struct chat_job chat_job;
struct chat_job {
    /* the request */
    char *system;
    char *prefill;    /* a final assistant message's text: the answer continues it (as
                         llama-server's prefill), or NULL; not one of turns */
    chat_turn_in *turns;
    int n_turns, n_images;
    int stream, include_usage;
    int n_choices;    /* "n": answers to the prompt, 1 .. CHAT_MAX_N */
    int choice;       /* the one being generated (its chunks' index) */
    /* what the session is asked, parsed here once and passed as it is: the sampling
     * parameters, max_tokens, the budget ("g4v": {"tokens": N}), think (reasoning_effort,
     * chat_template_kwargs.enable_thinking or "g4v": {"think": true}); system, tools and the
     * grammar point at the job's own strings below (the grammar once chat_precheck made it) */
    chat_params params;
    int debug_prompt; /* "g4v": {"debug_prompt": true}: the answer carries the prompt */
    char *schema;     /* response_format's JSON schema as JSON text (json_object: any object),
                         or NULL: the answer is free text */
    char *tools;      /* "tools" as JSON text, or NULL */
    int tool_choice;  /* CHAT_TOOLS_*; NONE when there are no tools */
    char tool_name[72]; /* CHAT_TOOLS_NAMED: the function */
    int parallel_tool_calls; /* 0: at most one call per answer */
    char *stop[CHAT_MAX_STOP];
    int n_stop;
    int32_t *bias_ids; /* logit_bias (params.bias_ids, bias point here) */
    float *bias;
    char id[48];
    long created;
    uint64_t keys[CHAT_MAX_KEYS]; /* chat_affinity.c: the conversation up to each turn */
    int n_keys, keys_complete;    /* complete: every turn has its keys */
    /* what chat_precheck found before the job waited (checked: it ran) */
    int checked;
    char *gbnf;       /* the grammar the answer is sampled under (params.grammar), or NULL */

    /* POST /v1/responses (chat_responses.c): answered as a response object or response.* events */
    int responses;
    char *r_echo;     /* what the response object repeats of the request (JSON text) */
    int r_seq, r_items, r_msg_open, r_msg_index; /* the event stream's state */
    char *r_text;     /* the message's text streamed so far */
    size_t r_text_len;

    /* its life */
    pthread_mutex_t mu;
    int refs;
    server *s;
    request *q; /* valid while the queue holds the connection suspended */
    struct MHD_Connection *conn;
    int fd;          /* the client's socket, polled for a hang-up while generating */
    double t0;       /* arrival */
    int gone;        /* libmicrohttpd completed the request (the client hung up, or done) */
    int suspended;   /* the stream reader waits for bytes with the connection suspended */
    char *out;       /* the stream's bytes: out_sent of out_len handed to libmicrohttpd */
    size_t out_len, out_cap, out_sent;
    int out_done, out_error;
};

/* A language-model slot: a chat session, whether a request runs on it, and the keys of the
 * conversation its context holds (chat_affinity.c). Under the server's mutex. */
typedef struct chat_slot {
    struct chat_session *cs;
    int busy;
    uint64_t keys[CHAT_MAX_KEYS + 1];
    int n_keys;
    uint64_t last_used; /* a counter: the larger, the later */
} chat_slot;

/* The wing's state: the slots' pool, the feature cache they share, what /metrics reports (under
 * the server's mutex). */
typedef struct chat_wing {
    server *s;
    svc_pool *pool;
    int threads;      /* of the text model's context, shared by the slots (--lm-threads) */
    struct chat_engine *engine; /* the text model and its one context: a sequence per slot, every
                                   answering slot's next token in one decode (chat_engine.h) */
    chat_slot *slots; /* --lm-slots of them; a worker takes the one chat_affinity_pick names */
    struct chat_pcache *pc; /* the prompt cache beyond the slots, or NULL */
    int n_slots;
    uint64_t use_clock;
    g4v_cache *cache; /* shared by the slots: --cache, or a private one */
    struct chat_slot_vision *vision; /* each slot's encoder: the encode wing's contexts */
    char cache_dir[512];
    int cache_private;
    uint64_t requests, cancelled, timeouts, failed; /* 429s: pool->rejected */
    uint64_t prompt_tokens, gen_tokens, images_encoded, images_cached;
    uint64_t cached_tokens, images_reused; /* prompt reuse: positions and images not decoded */
    double prefill_s, gen_s;
    svc_hist ttft;
    /* what a request is checked against before it waits (chat_precheck): the slots'
     * shared text model, its context and chat template */
    const void *lm; /* const struct llama_model * */
    int n_ctx, builtin_template;
    char template_origin[600];
} chat_wing;

/* chat_precheck.c: what can be checked of a parsed job before it waits for a slot, so that a
 * request no slot could serve is answered at once, even with every slot busy and the queue
 * full (docs/CHAT_API.md §3): its grammar (response_format's schema, the tools, and whether the
 * template renders tools), and whether its text alone already overflows the context. 0, or -1
 * with the 400 in f. */
int chat_precheck(chat_wing *cw, chat_job *j, chat_fail *f);

/* chat_request.c: parses body into a new job (refs 1), or fills f and returns NULL. */
chat_job *chat_request_parse(server *s, const char *body, size_t len, chat_fail *f);
void chat_job_unref(chat_job *j);
const char *chat_model_id(const server *s); /* the name /v1/models and answers give */

void chat_fail_set(chat_fail *f, int http, const char *type, const char *code, const char *fmt,
                   ...) __attribute__((format(printf, 5, 6)));

/* chat_sse.c: the error body {"error": {"message", "type", "param", "code"}}, and that answer
 * queued now */
struct MHD_Response *chat_error_response(const chat_fail *f);
enum MHD_Result chat_answer_error(request *q, const chat_fail *f);

/* A tool call of the answer as the API gives it. */
typedef struct chat_call_out {
    char id[64];
    char *name;
    char *arguments; /* a JSON object's text */
} chat_call_out;

/* Another choice of the answer ("n" > 1): what choice 0 keeps in the text and chat_usage. */
typedef struct chat_choice_out {
    char *text;
    size_t len;
    char *reasoning;
    size_t reasoning_len;
    chat_call_out *calls;
    int n_calls;
    const char *finish_reason;
    char *logprobs;
} chat_choice_out;

/* chat_sse.c: the answer */
typedef struct chat_usage {
    int prompt_tokens, completion_tokens, image_tokens, images_encoded, images_cached;
    int cached_tokens, images_reused; /* prompt positions and images the slot held already */
    const char *finish_reason; /* "stop", "length" or "tool_calls" */
    const char *stop;          /* ours: "end_of_turn", "stop_string", "max_tokens", ... */
    double ttft_s, prefill_s, generate_s;
    const char *reasoning;     /* the thought (message.reasoning_content), or NULL */
    size_t reasoning_len;
    char *prompt_text;         /* "g4v": {"debug_prompt": true}: the prompt, or NULL */
    int32_t *prompt_ids;
    int n_prompt_ids;
    const struct chat_call_out *calls; /* the answer's tool calls (message.tool_calls) */
    int n_calls;
    char *logprobs;            /* with "logprobs": true, choices[].logprobs.content as JSON
                                  text (an array), else NULL (logprobs: null) */
    const chat_choice_out *more; /* "n" > 1: choices 1 .. n_more */
    int n_more;
} chat_usage;

/* The non-streamed answer's JSON (malloc'ed), text sanitized to UTF-8. */
char *chat_completion_json(const chat_job *j, const char *text, size_t n, const chat_usage *u,
                           size_t *len);
/* Streaming: the response whose bytes come from job->out (takes a reference on j). */
struct MHD_Response *chat_stream_response(chat_job *j);
/* Appends one chunk: role only (first), a piece of content, or the end (finish + usage +
 * [DONE]); wakes the connection. 0, or -1 when the client is gone. */
int chat_stream_role(chat_job *j);
int chat_stream_text(chat_job *j, const char *text, size_t n);
/* A piece of content with the logprobs of its tokens (lp: a JSON array's text, or NULL) */
int chat_stream_text_lp(chat_job *j, const char *text, size_t n, const char *lp);
int chat_stream_reasoning(chat_job *j, const char *text, size_t n); /* delta.reasoning_content */
int chat_stream_tool_call(chat_job *j, int index, const chat_call_out *c); /* delta.tool_calls */
int chat_stream_end(chat_job *j, const chat_usage *u);
int chat_stream_finish(chat_job *j, const char *finish_reason); /* "n": a choice's last chunk */
void chat_stream_abort(chat_job *j); /* closes the stream without [DONE] */
/* Bytes of text[0..n) that can be sent: not the start of an incomplete UTF-8 sequence. */
size_t chat_utf8_safe_len(const char *text, size_t n);

/* chat_fetch.c: an image URL's bytes (malloc'ed) under --allow-image-urls' limits: 0, or -1
 * with the reason in why. */
int chat_fetch_url(const g4v_service_options *a, const char *url, unsigned char **data,
                   size_t *size, char *why, size_t whysz);

/* chat_responses.c: a Responses API body into a chat.completions body (malloc'ed JSON text) and
 * what the response repeats of the request (*echo), or NULL with f filled; the answer as a
 * response object; the stream's events (start after the role, text pieces, each tool call, the
 * end). 0, or -1 when the client is gone. */
char *chat_responses_translate(const char *body, size_t len, char **echo, chat_fail *f);
char *chat_response_json(const chat_job *j, const char *text, size_t n, const chat_usage *u,
                         size_t *len);
int chat_responses_start(chat_job *j);
int chat_responses_text(chat_job *j, const char *text, size_t n);
int chat_responses_call(chat_job *j, const chat_call_out *c);
int chat_responses_end(chat_job *j, const chat_usage *u);
/* chat_sse.c: appends "event: TYPE\ndata: JSON\n\n" (a Responses API event), 0 or -1; and
 * ends a stream (no more bytes come). */
int chat_stream_push_event(chat_job *j, const char *type, const char *json);
void chat_stream_close(chat_job *j);

/* chat_affinity.c: the job's keys (after parsing), a slot's key for the answer it gave after
 * the key prev, and the free slot a job goes to (-1: none free). */
void chat_job_keys(chat_job *j);
uint64_t chat_answer_key(uint64_t prev, const char *text, size_t n);
int chat_affinity_pick(const chat_slot *slots, int n, const chat_job *j);

/* chat_slots.c: opens the shared feature cache and the slots' pool into cw (0, or a
 * G4V_SERVICE_ERR_* printed; without libllama: --lm refused); closes the private cache. */
int chat_slots_open(chat_wing *cw);
void chat_slots_close(chat_wing *cw);

/* chat_vision.c: each slot's encoder of images and videos (chat_vision, chat/chat_session.h):
 * the encode wing's contexts. Open after the cache (0, or a G4V_SERVICE_ERR_* printed); a
 * slot's, for its session's options; close after the slots are. */
int chat_vision_open(chat_wing *cw);
const struct chat_vision *chat_vision_of(chat_wing *cw, int slot);
void chat_vision_close(chat_wing *cw);

/* chat_routes.c */
extern const svc_wing svc_chat_wing;

/* chat_metrics.c: appends the chat metrics at b (cap bytes); returns the length it needed. */
size_t chat_metrics_text(server *s, chat_wing *cw, char *b, size_t cap);

#endif
