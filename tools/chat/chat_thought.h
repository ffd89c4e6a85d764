/* chat_thought.h - an answer split from its thought as it is sampled (docs/CHAT.md "Thinking").
 *
 * Gemma 4 thinks in a channel: <|channel>thought\n{the thought}<channel|>{the answer}. The two
 * channel tokens come as ids; the channel's name ("thought") and its line end are not part of
 * the thought, nor is the "\n" the template writes before <channel|>. What is left goes to the
 * thought or to the answer, streamed as it comes (the thought's last "\n" held back until more
 * follows), the way llama-server and vLLM return reasoning_content apart from content. */
#ifndef G4V_CHAT_THOUGHT_H
#define G4V_CHAT_THOUGHT_H

#include "chat_session.h"

#include <stddef.h>

typedef struct chat_text {
    char *s;
    size_t n, cap;
} chat_text;
/* Appends p[0..n) to x, NUL-terminated. 0, or -1 out of memory. */
int chat_text_put(chat_text *x, const char *p, size_t n);

typedef struct chat_thought {
    int mode;       /* 0 the answer, 1 the channel's name, 2 the thought */
    int held_nl;    /* the thought's last "\n", not yet given out */
    chat_text answer, thought;
    chat_emit_fn emit;
    void *user;
} chat_thought;

enum { CHAT_PIECE_TEXT, CHAT_PIECE_OPEN, CHAT_PIECE_CLOSE };

void chat_thought_init(chat_thought *t, chat_emit_fn emit, void *user);
/* One sampled token: its kind and (for text) its piece. 0, 1 when emit asked to stop, or -1
 * out of memory. */
int chat_thought_add(chat_thought *t, int kind, const char *piece, size_t n);
void chat_thought_free(chat_thought *t);

#endif
