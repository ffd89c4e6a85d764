/* chat_slots_impl.h - what the files of the job kind "chat" share (built with libllama only):
 *   chat_slots.c     the kind's life cycle: the slots opened and closed, a request run on one
 *                    in named steps, the slot taken and counted
 *   chat_replay.c    the request's conversation replayed on the slot's session, and a session
 *                    failure mapped to the answer
 *   chat_generate.c  the answer's choices generated: each piece as it comes (kept, checked
 *                    against the stop strings and tool calls, streamed), and their results
 *   chat_cache_use.c the prompt cache's use: a slot's state saved to it, or loaded from it
 * (chat_precheck.c, what is checked before a request waits, is the wing's: chat_wing.h.) They
 * call one another in one direction only: slots -> generate -> replay -> cache_use, and slots
 * -> replay, slots -> cache_use. */
#ifndef G4V_SERVICE_CHAT_SLOTS_IMPL_H
#define G4V_SERVICE_CHAT_SLOTS_IMPL_H

#include "chat/chat_wing.h"
#include "chat_session.h" /* chat/ */

#include <cjson/cJSON.h>

/* What generation keeps: the answer so far, what of it was streamed, why it stopped. */
typedef struct gen {
    chat_job *j;
    double deadline;
    char *text;
    size_t len, cap, sent, scanned, hold;
    const char *why; /* set when we stopped it: "stop_string", "timeout", "client_gone" */
    char *th;        /* the thought so far (th_sent of it streamed) */
    size_t th_len, th_cap, th_sent;
    chat_call_out *calls; /* the tool calls, parsed and checked as each completes */
    int n_calls;
    cJSON *tools;    /* the request's tools (their parameters check the calls), or NULL */
    chat_fail bad;   /* why a call was refused (why = "invalid_tool_call") */
    chat_session *cs; /* the slot's session: the answer's logprobs */
    int lp_sent;      /* of them, streamed */
} gen;

/* What the choices of one request ("n") came to: each one's generation, finish_reason and
 * logprobs (JSON text, or NULL), choices 1.. as the answer gives them, how many were generated,
 * and whether it failed (rc, with the answer in f) or the client hung up (gone). */
typedef struct chat_answers {
    gen gs[CHAT_MAX_N];
    const char *fin[CHAT_MAX_N];
    char *lps[CHAT_MAX_N];
    chat_choice_out more[CHAT_MAX_N];
    int rc, gone, done;
    chat_fail f;
} chat_answers;

/* chat_generate.c: the client hung up (libmicrohttpd completed the request, or the socket says
 * so); the first and the last piece of a stream in the request's API; the request's choices
 * generated on the fed session until the deadline, into a and u (u takes choice 0's results and
 * points into a); what a holds freed. */
int chat_client_gone(chat_job *j);
int chat_out_role(chat_job *j);
int chat_out_end(chat_job *j, const chat_usage *u);
void chat_generate(chat_job *j, chat_session *cs, double deadline, chat_answers *a,
                   chat_usage *u);
void chat_answers_free(chat_answers *a);

/* chat_replay.c: maps a chat_session failure (rc, err) to the answer; plans every turn of the
 * conversation and feeds the plan: the slot's sequence keeps what it already holds of it (prompt
 * reuse) and decodes the rest; the last turn (a user turn) is left to generate. 0, or -1 with
 * the answer in f. */
void chat_fail_session(chat_fail *f, int rc, const char *err);
int chat_replay(chat_wing *cw, chat_session *cs, chat_job *j, chat_usage *u, chat_fail *f);

/* chat_cache_use.c: the prompt cache opened into cw->pc (0, or a G4V_SERVICE_ERR_* printed);
 * before a feed, what the slot holds saved or replaced by a cached state; the slot's state
 * saved (at its close). */
int chat_cache_use_open(chat_wing *cw);
void chat_cache_use_consult(chat_wing *cw, chat_session *cs);
void chat_cache_use_save(chat_wing *cw, chat_session *cs);

#endif
