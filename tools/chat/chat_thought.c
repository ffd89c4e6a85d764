/* chat_thought.c - an answer split from its thought (chat_thought.h) */
#include "chat_thought.h"

#include <stdlib.h>
#include <string.h>

void chat_thought_init(chat_thought *t, chat_emit_fn emit, void *user) {
    memset(t, 0, sizeof *t);
    t->emit = emit;
    t->user = user;
}

void chat_thought_free(chat_thought *t) {
    free(t->answer.s);
    free(t->thought.s);
    memset(t, 0, sizeof *t);
}

int chat_text_put(chat_text *x, const char *p, size_t n) {
    if (x->n + n + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 256;
        while (x->n + n + 1 > cap) cap *= 2;
        char *v = realloc(x->s, cap);
        if (!v) return -1;
        x->s = v;
        x->cap = cap;
    }
    memcpy(x->s + x->n, p, n);
    x->n += n;
    x->s[x->n] = 0;
    return 0;
}

/* Text into a channel, and out to emit. */
static int give(chat_thought *t, int thought, const char *p, size_t n) {
    if (!n) return 0;
    if (chat_text_put(thought ? &t->thought : &t->answer, p, n)) return -1;
    return t->emit && t->emit(p, n, thought, t->user) ? 1 : 0;
}

int chat_thought_add(chat_thought *t, int kind, const char *p, size_t n) {
    if (kind == CHAT_PIECE_OPEN) { /* a thought starts (a second one continues the first) */
        t->mode = 1;
        return 0;
    }
    if (kind == CHAT_PIECE_CLOSE) {
        t->mode = 0;
        t->held_nl = 0; /* the template's own "\n" before <channel|> */
        return 0;
    }
    if (t->mode == 1) { /* the channel's name up to its line end */
        const char *nl = memchr(p, '\n', n);
        if (!nl) return 0;
        n -= (size_t)(nl + 1 - p);
        p = nl + 1;
        t->mode = 2;
    }
    if (t->mode == 0) return give(t, 0, p, n);
    if (!n) return 0;
    int rc = 0;
    if (t->held_nl) {
        t->held_nl = 0;
        rc = give(t, 1, "\n", 1);
        if (rc) return rc;
    }
    if (p[n - 1] == '\n') {
        t->held_nl = 1;
        n--;
    }
    return give(t, 1, p, n);
}
