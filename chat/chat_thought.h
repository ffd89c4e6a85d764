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

/* the longest channel name held back as one ("thought" is the one Gemma 4 writes) */
enum { CHAT_THOUGHT_NAME_MAX = 32 };

typedef struct chat_thought {
    int mode;       /* 0 the answer, 1 the channel's name, 2 the thought */
    int held_nl;    /* the thought's last "\n", not yet given out */
    char name[CHAT_THOUGHT_NAME_MAX]; /* mode 1: what came so far of the name */
    size_t name_n;
    chat_text answer, thought;
    chat_emit_fn emit;
    void *user;
} chat_thought;

enum { CHAT_PIECE_TEXT, CHAT_PIECE_OPEN, CHAT_PIECE_CLOSE };

void chat_thought_init(chat_thought *t, chat_emit_fn emit, void *user);
/* One sampled token: its kind and (for text) its piece. 0, 1 when emit asked to stop, or -1
 * out of memory. After <|channel> a name is expected (letters, digits, '_' or '-', up to a line
 * end); text that cannot be one (a space, a long run, any other character) is the thought
 * itself, so nothing the model writes is dropped for want of a name line. */
int chat_thought_add(chat_thought *t, int kind, const char *piece, size_t n);
/* The end of the answer: a name still waiting for its line end is given out as thought (the
 * model wrote it; a bare "thought" with nothing after it is a name and stays out). 0, 1 when
 * emit asked to stop, or -1 out of memory. */
int chat_thought_finish(chat_thought *t);
void chat_thought_free(chat_thought *t);

#endif
