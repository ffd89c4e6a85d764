/* test_chat_thought.c - an answer split from its thought as it is sampled (chat_thought.h):
 * the channel's name and line end, and the template's "\n" before <channel|>, belong to neither;
 * streamed pieces add up to the kept texts; emit's stop is passed on. */
#include "chat_thought.h"
#include "test_util.h"

#include <stdio.h>
#include <string.h>

typedef struct seen {
    char answer[512], thought[512];
    int stop_after; /* stop when this many pieces were given (0: never) */
    int pieces;
} seen;

static int emit(const char *p, size_t n, chat_emit_kind kind, void *user) {
    seen *s = user;
    char *d = kind == CHAT_EMIT_THOUGHT ? s->thought : s->answer;
    strncat(d, p, n);
    s->pieces++;
    return s->stop_after && s->pieces >= s->stop_after;
}

/* Feeds "O" (open), "C" (close) or text pieces. Returns the last chat_thought_add's result. */
static int feed(chat_thought *t, const char *const *pieces, int n) {
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (!strcmp(pieces[i], "\x01O"))
            rc = chat_thought_add(t, CHAT_PIECE_OPEN, NULL, 0);
        else if (!strcmp(pieces[i], "\x01" "C"))
            rc = chat_thought_add(t, CHAT_PIECE_CLOSE, NULL, 0);
        else
            rc = chat_thought_add(t, CHAT_PIECE_TEXT, pieces[i], strlen(pieces[i]));
    }
    return rc;
}

#define OPEN "\x01O"
#define CLOSE "\x01" "C"

static void expect(const char *what, const char *const *pieces, int n, const char *answer,
                   const char *thought) {
    seen s = {0};
    chat_thought t;
    chat_thought_init(&t, emit, &s);
    CHECK_MSG(feed(&t, pieces, n) == 0, "%s: no stop", what);
    const char *a = t.answer.s ? t.answer.s : "", *th = t.thought.s ? t.thought.s : "";
    CHECK_MSG(!strcmp(a, answer), "%s: answer '%s' (expected '%s')", what, a, answer);
    CHECK_MSG(!strcmp(th, thought), "%s: thought '%s' (expected '%s')", what, th, thought);
    CHECK_MSG(!strcmp(s.answer, a) && !strcmp(s.thought, th), "%s: streamed = kept", what);
    chat_thought_free(&t);
}

/* as expect, with the end of the answer (chat_thought_finish) after the pieces */
static void expect_finished(const char *what, const char *const *pieces, int n,
                            const char *answer, const char *thought) {
    seen s = {0};
    chat_thought t;
    chat_thought_init(&t, emit, &s);
    CHECK_MSG(feed(&t, pieces, n) == 0 && chat_thought_finish(&t) == 0, "%s: no stop", what);
    const char *a = t.answer.s ? t.answer.s : "", *th = t.thought.s ? t.thought.s : "";
    CHECK_MSG(!strcmp(a, answer), "%s: answer '%s' (expected '%s')", what, a, answer);
    CHECK_MSG(!strcmp(th, thought), "%s: thought '%s' (expected '%s')", what, th, thought);
    CHECK_MSG(!strcmp(s.answer, a) && !strcmp(s.thought, th), "%s: streamed = kept", what);
    chat_thought_free(&t);
}

int main(void) {
    const char *plain[] = {"Hello", " world"};
    expect("no thought", plain, 2, "Hello world", "");
    const char *one[] = {OPEN, "thought", "\n", "Let me", " see.\n", "Two lines.", "\n", CLOSE,
                         "The answer."};
    expect("a thought", one, 9, "The answer.", "Let me see.\nTwo lines.");
    /* a thought without the name line (a model that writes straight after <|channel>): the
     * text is the thought, never dropped; a name alone stays out */
    const char *no_name[] = {OPEN, "Let", " me think"};
    expect_finished("no name line, a space", no_name, 3, "", "Let me think");
    const char *word[] = {OPEN, "Hmm"};
    expect_finished("no name line, one word at the end", word, 2, "", "Hmm");
    const char *closed[] = {OPEN, "Hmm", CLOSE, "Yes"};
    expect("no name line, closed", closed, 4, "Yes", "Hmm");
    const char *long_run[] = {OPEN, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"};
    expect("a run longer than a name", long_run, 2, "",
           "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    const char *bare[] = {OPEN, "thought"};
    expect_finished("only the name", bare, 2, "", "");
    const char *named[] = {OPEN, "though", "t\nok"};
    expect_finished("a name in two pieces", named, 3, "", "ok");
    const char *glued[] = {OPEN, "thought\nFirst", "\n", CLOSE, "Done"};
    expect("the name and the thought in one piece", glued, 5, "Done", "First");
    const char *empty[] = {OPEN, "thought", "\n", CLOSE, "Direct."};
    expect("an empty thought block", empty, 5, "Direct.", "");
    const char *cut[] = {OPEN, "thought\n", "Still thinking"};
    expect("a thought cut off (max_tokens)", cut, 3, "", "Still thinking");
    const char *nl[] = {OPEN, "thought\n", "a\n", "\n", "b", CLOSE, "x"};
    expect("newlines inside the thought kept", nl, 7, "x", "a\n\nb");

    seen s = {.stop_after = 2};
    chat_thought t;
    chat_thought_init(&t, emit, &s);
    const char *many[] = {OPEN, "thought\n", "one", "two", "three"};
    CHECK_MSG(feed(&t, many, 5) == 1 && s.pieces == 2, "emit's stop is passed on (%d pieces)",
              s.pieces);
    chat_thought_free(&t);
    return test_summary("test_chat_thought");
}
