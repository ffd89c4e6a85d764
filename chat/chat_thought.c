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

static int name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '-';
}

/* Text into a channel, and out to emit. */
static int give(chat_thought *t, chat_emit_kind kind, const char *p, size_t n) {
    if (!n) return 0;
    if (chat_text_put(kind == CHAT_EMIT_THOUGHT ? &t->thought : &t->answer, p, n)) return -1;
    return t->emit && t->emit(p, n, kind, t->user) ? 1 : 0;
}

int chat_thought_add(chat_thought *t, int kind, const char *p, size_t n) {
    if (kind == CHAT_PIECE_OPEN) { /* a thought starts (a second one continues the first) */
        int rc = chat_thought_finish(t);
        t->mode = 1;
        return rc;
    }
    if (kind == CHAT_PIECE_CLOSE) {
        int rc = chat_thought_finish(t); /* "<|channel>text<channel|>": text is the thought */
        if (rc) return rc;
        t->mode = 0;
        t->held_nl = 0; /* the template's own "\n" before <channel|> */
        return 0;
    }
    if (t->mode == 1) { /* the channel's name up to its line end */
        size_t k = 0;
        while (k < n && p[k] != '\n' && name_char(p[k]) && t->name_n + k < sizeof t->name) k++;
        if (k == n && t->name_n + k < sizeof t->name) { /* the name goes on */
            memcpy(t->name + t->name_n, p, n);
            t->name_n += n;
            return 0;
        }
        t->mode = 2;
        if (k < n && p[k] == '\n') { /* a name: left out with its line end */
            t->name_n = 0;
            n -= k + 1;
            p += k + 1;
        } else { /* no name: what came is the thought */
            size_t held = t->name_n;
            t->name_n = 0;
            int rc = held ? give(t, CHAT_EMIT_THOUGHT, t->name, held) : 0;
            if (rc) return rc;
        }
    }
    if (t->mode == 0) return give(t, CHAT_EMIT_ANSWER, p, n);
    if (!n) return 0;
    int rc = 0;
    if (t->held_nl) {
        t->held_nl = 0;
        rc = give(t, CHAT_EMIT_THOUGHT, "\n", 1);
        if (rc) return rc;
    }
    if (p[n - 1] == '\n') {
        t->held_nl = 1;
        n--;
    }
    return give(t, CHAT_EMIT_THOUGHT, p, n);
}

int chat_thought_finish(chat_thought *t) {
    if (t->mode != 1 || !t->name_n) return 0;
    size_t held = t->name_n;
    t->name_n = 0;
    t->mode = 2;
    static const char bare[] = "thought";
    if (held == sizeof bare - 1 && !memcmp(t->name, bare, held)) return 0;
    return give(t, CHAT_EMIT_THOUGHT, t->name, held);
}
