/* chat_grammar_thought.c - a grammar opened to a leading Gemma 4 thought (chat_grammar.h
 * chat_grammar_allow_thought). A new start rule next to "root", rather than a rewritten root:
 * the converter's grammar stays as it produced it, and the caller picks the start by name. */
#include "chat_grammar.h"
#include "chat_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THOUGHT_RULE "g4v-thought"

static const char RULES[] = CHAT_GRAMMAR_THOUGHT_ROOT " ::= " THOUGHT_RULE "? root\n"
                            THOUGHT_RULE " ::= <|channel> ( !<channel|> )* <channel|>\n";

/* Whether the grammar defines the rule `name` (at the start of a line). */
static int defines(const char *g, const char *name) {
    size_t n = strlen(name);
    for (const char *p = g; p; p = strchr(p, '\n')) {
        p += *p == '\n';
        if (!strncmp(p, name, n) && (p[n] == ' ' || p[n] == ':')) return 1;
    }
    return 0;
}

int chat_grammar_allow_thought(char **gbnf, char *err, size_t errsz) {
    if (!gbnf || !*gbnf) {
        seterr(err, errsz, "no grammar");
        return -1;
    }
    if (defines(*gbnf, CHAT_GRAMMAR_THOUGHT_ROOT) || defines(*gbnf, THOUGHT_RULE)) {
        seterr(err, errsz, "the grammar already has a rule named " THOUGHT_RULE " or "
                           CHAT_GRAMMAR_THOUGHT_ROOT);
        return -1;
    }
    size_t n = strlen(*gbnf);
    int nl = n && (*gbnf)[n - 1] != '\n';
    char *g = realloc(*gbnf, n + (size_t)nl + sizeof RULES);
    if (!g) {
        seterr(err, errsz, "out of memory");
        return -1;
    }
    if (nl) g[n++] = '\n';
    memcpy(g + n, RULES, sizeof RULES);
    *gbnf = g;
    return 0;
}
