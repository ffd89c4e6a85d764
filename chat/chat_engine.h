/* chat_engine.h - one Gemma 4 text model in libllama and one context, shared by the
 * conversations that run on it, one sequence each (docs/CHAT_API.md §3).
 *
 * Generation reads every weight once per decode call, whatever the number of tokens in it, so
 * the engine batches: each conversation's thread asks for its next step (its next token, or a
 * piece of its prompt) and blocks; the engine's own thread decodes the steps of all of them in
 * one llama_decode (generation tokens first, then prompt tokens up to a per-step budget, so
 * that a long prompt does not stall the others' streams) and hands each its logits. A lone
 * conversation decodes at once, with every thread; `g4v chat` runs one on an engine of its own.
 *
 * What cannot share a decode call runs between steps: an image's rows (embeddings) as calls on
 * the engine thread (chat_engine_call), edits of a sequence's memory and saving or loading its
 * state with the context held (chat_engine_lock). Sequences live in streams of their own
 * (kv_unified off: no conversation sees, or overwrites, another's cells). */
#ifndef G4V_CHAT_ENGINE_H
#define G4V_CHAT_ENGINE_H

#include "llama.h"

#include <stddef.h>
#include <stdint.h>

typedef struct chat_engine_options {
    const char *lm_path;  /* Gemma 4 text model, GGUF */
    int n_seq;            /* conversations at once: sequences 0 .. n_seq-1 (0: 1) */
    int n_ctx_seq;        /* context positions of each sequence (0: 8192) */
    int n_batch;          /* the largest decode call: a whole image's rows must fit (0: 512) */
    int step_tokens;      /* prompt tokens per step, all sequences together, while a sequence
                           * is answering (0: n_batch; with none answering: n_batch) */
    int one_per_step;     /* 1: one sequence's tokens per step, in arrival order: each answer
                           * is what it is alone, bit for bit (llama-server's -nocb) */
    int threads;          /* 0: one per online CPU */
    int verbose;          /* 1: llama.cpp logs to stderr */
    struct fe_cpu_gate *gate; /* common/cpu_gate.h: every decode call and call on the engine
                               * thread enters it with `threads` (g4v serve's CPU budget, shared
                               * with the image encodes), or NULL */
} chat_engine_options;

typedef struct chat_engine chat_engine;

/* Loads llama.cpp's CPU backend and the text model (its extra buffer types only where
 * chat_llama_probe ran them), and creates the context. 0, or -1 with a message (a file that is
 * not a Gemma 4 text model says so). */
int chat_engine_open(const chat_engine_options *o, chat_engine **out, char *err, size_t errsz);
void chat_engine_close(chat_engine *e);

struct llama_model *chat_engine_model(const chat_engine *e);
struct llama_context *chat_engine_context(const chat_engine *e);
const char *chat_engine_arch(const chat_engine *e);
int chat_engine_n_seq(const chat_engine *e);
int chat_engine_n_ctx_seq(const chat_engine *e);
int chat_engine_n_batch(const chat_engine *e);
int chat_engine_threads(const chat_engine *e);

/* Decodes n tokens of sequence seq at positions pos0 .. pos0+n-1, in steps shared with the
 * other sequences; when logits is not NULL, the logits of the last token are copied into it
 * (n_vocab floats). Blocks until all n are decoded. 0, or -1 with a message (1 from llama_decode:
 * the context is full). Not while holding the engine. */
int chat_engine_decode(chat_engine *e, llama_seq_id seq, const llama_token *tokens, int n,
                       llama_pos pos0, float *logits, char *err, size_t errsz);

/* The sequence is answering: the step being gathered waits for its next token (at most a few
 * milliseconds) rather than leaving without it. on = 0 when its answer ends. */
void chat_engine_answering(chat_engine *e, llama_seq_id seq, int on);

/* The context alone, between two steps: for llama calls that do not compute (a sequence's
 * memory, its state); the caller's thread makes them. */
void chat_engine_lock(chat_engine *e);
void chat_engine_unlock(chat_engine *e);

/* Runs fn(arg) on the engine thread between two steps and returns its value: llama calls that
 * compute (an image's rows) but cannot share a step. Calls and steps take turns when both wait,
 * so a long image decoded in several calls leaves room for the others' steps. Not while
 * holding the engine; fn must not call the engine. */
int chat_engine_call(chat_engine *e, int (*fn)(void *arg), void *arg);

/* A conversation's own computing between steps (sampling its next token: a pass over the
 * vocabulary) as a team of one in the engine's gate (chat_engine_options.gate), so that several
 * answering conversations never add threads to cores the decode calls and encodes keep busy.
 * Returns what to give back; no gate: nothing waits. */
int chat_engine_gate_enter(chat_engine *e);
void chat_engine_gate_leave(chat_engine *e, int taken);

/* How many prompt tokens (or image rows) one step takes now: step_tokens while any sequence
 * is answering (its stream waits for the step), else n_batch. */
int chat_engine_piece(chat_engine *e);

/* llama.cpp's last error lines (": text", or "" when none), kept from its log since the last
 * chat_engine_clear_log; process-wide. */
const char *chat_engine_last_log(void);
void chat_engine_clear_log(void);

typedef struct chat_engine_stats {
    uint64_t steps;        /* decode calls made for chat_engine_decode */
    uint64_t step_tokens;  /* tokens in them */
    uint64_t step_seqs;    /* sequences in them, summed over the calls */
    uint64_t shared_steps; /* calls with two or more sequences in them */
} chat_engine_stats;
void chat_engine_get_stats(chat_engine *e, chat_engine_stats *st);

#endif
