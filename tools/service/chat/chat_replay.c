/* chat_replay.c - a chat request's conversation replayed on a slot's session (the API is
 * stateless: every request carries all its turns): each turn planned, an image by URL fetched
 * first, the plan fed (the prompt cache consulted before), and what refuses it answered before
 * any byte of the answer: the message a template cannot render, a session failure mapped to
 * the API's error. */
#ifdef G4V_HAVE_LLAMA

#include "chat_slots_impl.h"

#include <stdlib.h>
#include <string.h>

/* Maps a chat_session failure to the answer. */
void chat_fail_session(chat_fail *f, int rc, const char *err) {
    if (rc == CHAT_ERR_INPUT && strstr(err, "does not fit in the context"))
        chat_fail_set(f, 400, "invalid_request_error", "context_length_exceeded", "%s", err);
    else if (rc == CHAT_ERR_INPUT && strstr(err, "the chat template")) /* it raised an error */
        chat_fail_set(f, 400, "invalid_request_error", "invalid_messages", "%s", err);
    else if (rc == CHAT_ERR_INPUT)
        chat_fail_set(f, 400, "invalid_request_error", "invalid_image", "%s", err);
    else if (rc == CHAT_ERR_USAGE)
        chat_fail_set(f, 400, "invalid_request_error", "invalid_parameter", "%s", err);
    else
        chat_fail_set(f, 500, "server_error", "internal_error", "%s", err);
}

/* Adds turn t of the job to the session's conversation. */
static int add_turn(chat_session *cs, chat_job *j, int t, char *err, size_t errsz, chat_fail *f);

/* The template refused the conversation: which message it refuses, found by rendering the
 * turns up to each in turn (only on this error), named in the 400 with the template's reason. */
static void template_refusal(chat_session *cs, chat_job *j, const char *why, chat_fail *f) {
    char err[1024] = "";
    int at = -1;
    for (int n = 1; at < 0 && n <= j->n_turns; n++) {
        if (chat_session_restart(cs, &j->params, err, sizeof err)) break;
        int rc = 0;
        for (int t = 0; !rc && t < n; t++)
            rc = add_turn(cs, j, t, err, sizeof err, f);
        if (!rc && chat_session_check_render(cs, err, sizeof err) == CHAT_ERR_INPUT)
            at = j->turns[n - 1].msg;
    }
    if (at >= 0)
        chat_fail_set(f, 400, "invalid_request_error", "invalid_messages",
                      "messages[%d]: the model's chat template cannot render the conversation "
                      "up to this message: %s", at, why);
    else
        chat_fail_set(f, 400, "invalid_request_error", "invalid_messages",
                      "the model's chat template cannot render this conversation: %s", why);
    char e2[64];
    chat_session_restart(cs, &j->params, e2, sizeof e2); /* nothing of it stays planned */
}

/* Plans every turn of the conversation and feeds the plan: the slot's sequence keeps what it
 * already holds of it (prompt reuse) and decodes the rest; the last turn (a user turn) is left
 * to generate. */
int chat_replay(chat_wing *cw, chat_session *cs, chat_job *j, chat_usage *u, chat_fail *f) {
    char err[1024] = "";
    /* as parsed (chat_request.c), with the grammar chat_slots_precheck made before it waited */
    int rc = chat_session_restart(cs, &j->params, err, sizeof err);
    for (int t = 0; !rc && t < j->n_turns; t++)
        rc = add_turn(cs, j, t, err, sizeof err, f);
    if (rc < 0) return -1; /* out of memory, f filled */
    chat_feed_stats st;
    if (!rc) chat_cache_use_consult(cw, cs);
    if (!rc) rc = chat_session_feed(cs, &st, err, sizeof err);
    if (rc == CHAT_ERR_INPUT && strstr(err, "the chat template")) {
        template_refusal(cs, j, err, f);
        return -1;
    }
    if (rc) {
        chat_fail_session(f, rc, err);
        return -1;
    }
    u->image_tokens = st.image_rows;
    u->prefill_s = st.prefill_s + st.encode_s;
    u->images_cached = st.images_cached;
    u->images_encoded = st.images_encoded;
    u->images_reused = st.images_reused;
    u->cached_tokens = st.reused_pos;
    u->prompt_tokens = chat_session_n_past(cs);
    if (j->debug_prompt &&
        chat_session_prompt(cs, &u->prompt_text, &u->prompt_ids, &u->n_prompt_ids)) {
        chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
        return -1;
    }
    return 0;
}

static int add_turn(chat_session *cs, chat_job *j, int t, char *err, size_t errsz, chat_fail *f) {
    chat_turn_in *ti = &j->turns[t];
    int rc;
    if (ti->role == CHAT_ROLE_SYSTEM)
        return chat_session_add_system(cs, ti->text, err, errsz);
    if (ti->role == CHAT_ROLE_ASSISTANT && ti->tool_calls)
        return chat_session_add_tool_calls(cs, ti->text, ti->reasoning, ti->tool_calls, err,
                                           errsz);
    if (ti->role == CHAT_ROLE_ASSISTANT)
        return chat_session_add_answer_thought(cs, ti->text, ti->reasoning, err, errsz);
    if (ti->role == CHAT_ROLE_TOOL)
        return chat_session_add_tool_result(cs, ti->tool_call_id, ti->text, err, errsz);
    chat_part *p = calloc((size_t)(ti->n_parts ? ti->n_parts : 1), sizeof *p);
    if (!p) {
        chat_fail_set(f, 500, "server_error", "out_of_memory", "out of memory");
        return -1;
    }
    for (int i = 0; i < ti->n_media; i++) { /* an image by URL: fetched now, once */
        chat_media *im = &ti->media[i];
        unsigned char *data = NULL;
        char why[400];
        if (im->url && !im->data &&
            chat_fetch_url(&j->s->a, im->url, &data, &im->size, why, sizeof why)) {
            chat_fail_set(f, 400, "invalid_request_error", "invalid_image_url",
                          "%s (%.200s): %s", im->path, im->url, why);
            free(p);
            return -1;
        }
        if (data) im->data = data;
    }
    for (int k = 0; k < ti->n_parts; k++) { /* the client's order, as the template renders */
        p[k].text = ti->parts[k].media < 0 ? ti->parts[k].text : NULL;
        p[k].media = ti->parts[k].media >= 0 ? &ti->media[ti->parts[k].media] : NULL;
    }
    rc = chat_session_add_user_parts(cs, p, ti->n_parts, err, errsz);
    free(p);
    return rc;
}

#endif
