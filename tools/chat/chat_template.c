/* chat_template.c - Gemma 4's turn format, or the model's template via libllama (chat_template.h) */
#include "chat_template.h"
#include "chat_error.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int chat_template_init(chat_template *t, const struct llama_model *model, char *err,
                       size_t errsz) {
    memset(t, 0, sizeof *t);
    const char *tmpl = llama_model_chat_template(model, NULL);
    /* Gemma 4's own template, or none: our rendering of Gemma 4's format */
    if (!tmpl || !*tmpl || strstr(tmpl, "<|turn>")) {
        t->builtin = 1;
        return 0;
    }
    /* another template: libllama must know it */
    struct llama_chat_message m = {"user", "x"};
    char buf[256];
    if (llama_chat_apply_template(tmpl, &m, 1, true, buf, (int32_t)sizeof buf) < 0) {
        seterr(err, errsz, "the model's chat template is neither Gemma 4's nor one libllama "
                           "knows");
        return -1;
    }
    t->tmpl = xstrdup(tmpl);
    if (!t->tmpl) {
        seterr(err, errsz, "out of memory");
        return -1;
    }
    return 0;
}

void chat_template_free(chat_template *t) {
    if (!t) return;
    for (int i = 0; i < t->n_msgs; i++) {
        free((char *)t->msgs[i].role);
        free((char *)t->msgs[i].content);
    }
    free(t->msgs);
    free(t->tmpl);
    memset(t, 0, sizeof *t);
}

/* Jinja's |trim: leading and trailing whitespace off. Returns a malloc'd copy. */
static char *trimmed(const char *s) {
    while (*s && isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) n--;
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static char *cat(const char *const *parts, int n) {
    size_t len = 1;
    for (int i = 0; i < n; i++) len += strlen(parts[i]);
    char *s = malloc(len), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < n; i++) {
        size_t k = strlen(parts[i]);
        memcpy(p, parts[i], k);
        p += k;
    }
    *p = 0;
    return s;
}

static int push_msg(chat_template *t, const char *role, const char *content) {
    if (t->n_msgs == t->cap_msgs) {
        int cap = t->cap_msgs ? 2 * t->cap_msgs : 8;
        struct llama_chat_message *v = realloc(t->msgs, (size_t)cap * sizeof *v);
        if (!v) return -1;
        t->msgs = v;
        t->cap_msgs = cap;
    }
    char *r = xstrdup(role), *c = xstrdup(content);
    if (!r || !c) {
        free(r);
        free(c);
        return -1;
    }
    t->msgs[t->n_msgs].role = r;
    t->msgs[t->n_msgs].content = c;
    t->n_msgs++;
    return 0;
}

static char *apply(const chat_template *t, int n, int add_ass) {
    int cap = 4096;
    for (int i = 0; i < n; i++) cap += 2 * (int)strlen(t->msgs[i].content);
    char *buf = malloc((size_t)cap);
    if (!buf) return NULL;
    int k = llama_chat_apply_template(t->tmpl, t->msgs, (size_t)n, add_ass, buf, cap);
    if (k >= cap) {
        char *b2 = realloc(buf, (size_t)k + 1);
        if (!b2) {
            free(buf);
            return NULL;
        }
        buf = b2;
        k = llama_chat_apply_template(t->tmpl, t->msgs, (size_t)n, add_ass, buf, k + 1);
    }
    if (k < 0) {
        free(buf);
        return NULL;
    }
    buf[k] = 0;
    return buf;
}

char *chat_template_user_turn(chat_template *t, const char *system, const char *content,
                              int first, char *err, size_t errsz) {
    char *text = NULL;
    if (t->builtin) {
        char *c = trimmed(content), *s = system && first ? trimmed(system) : NULL;
        if (!c || (system && first && !s)) goto oom_b;
        const char *parts[] = {
            first ? "" : "<turn|>\n", /* closes the model's previous answer */
            s ? "<|turn>system\n" : "", s ? s : "", s ? "<turn|>\n" : "",
            "<|turn>user\n", c, "<turn|>\n<|turn>model\n<|channel>thought\n<channel|>"};
        text = cat(parts, (int)(sizeof parts / sizeof parts[0]));
    oom_b:
        free(c);
        free(s);
        if (!text) seterr(err, errsz, "out of memory");
        return text;
    }
    /* generic: what the template adds for the new message, after what it rendered before
     * (llama.cpp's common_chat_format_single does the same) */
    int n_prev = t->n_msgs;
    if (first && system && *system && push_msg(t, "system", system)) goto oom;
    int n_before = t->n_msgs;
    char *prev = n_before > 0 && !first ? apply(t, n_before, 0) : NULL;
    if (!first && n_before > 0 && !prev) goto bad;
    if (push_msg(t, "user", content)) {
        free(prev);
        goto oom;
    }
    char *full = apply(t, t->n_msgs, 1);
    if (!full) {
        free(prev);
        goto bad;
    }
    size_t skip = prev && !strncmp(full, prev, strlen(prev)) ? strlen(prev) : 0;
    text = xstrdup(full + skip);
    free(full);
    free(prev);
    if (!text) goto oom;
    return text;
bad:
    seterr(err, errsz, "llama_chat_apply_template failed");
    goto undo;
oom:
    seterr(err, errsz, "out of memory");
undo:
    while (t->n_msgs > n_prev) {
        t->n_msgs--;
        free((char *)t->msgs[t->n_msgs].role);
        free((char *)t->msgs[t->n_msgs].content);
    }
    return NULL;
}

int chat_template_answer(chat_template *t, const char *answer) {
    if (t->builtin) return 0;
    return push_msg(t, "assistant", answer);
}

void chat_template_reset(chat_template *t) {
    for (int i = 0; i < t->n_msgs; i++) {
        free((char *)t->msgs[i].role);
        free((char *)t->msgs[i].content);
    }
    t->n_msgs = 0;
}

void chat_template_undo_user(chat_template *t) {
    if (t->builtin || t->n_msgs == 0) return;
    if (strcmp(t->msgs[t->n_msgs - 1].role, "user")) return;
    t->n_msgs--;
    free((char *)t->msgs[t->n_msgs].role);
    free((char *)t->msgs[t->n_msgs].content);
    if (t->n_msgs == 1 && !strcmp(t->msgs[0].role, "system")) { /* a refused first turn */
        t->n_msgs--;
        free((char *)t->msgs[0].role);
        free((char *)t->msgs[0].content);
    }
}
