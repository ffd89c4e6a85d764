/* chat_jinja_render.c - test driver for chat/chat_jinja.h (test_chat_jinja.py):
 *     chat_jinja_render TEMPLATE.jinja CONTEXT.json [THREADS]
 * prints the template rendered with the context (its bytes exactly, nothing added) and exits 0,
 * or prints the error to stderr and exits 1. With THREADS > 1 the same compiled template is
 * also rendered by that many threads at once, each several times, and every rendering must
 * equal the first (exit 2 if one differs): concurrent renders are part of the API's promise. */
#include "chat_jinja.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

typedef struct render_job {
    const chat_jinja *tmpl;
    const char *context;
    const char *expected;
    int mismatches;
} render_job;

enum { RENDERS_PER_THREAD = 20 };

static void *render_many(void *arg) {
    render_job *job = arg;
    for (int i = 0; i < RENDERS_PER_THREAD; i++) {
        char err[512];
        char *out = chat_jinja_render(job->tmpl, job->context, err, sizeof err);
        if (!out || strcmp(out, job->expected) != 0)
            job->mismatches++;
        free(out);
    }
    return NULL;
}

/* Renders from n threads at once; the number of renderings that differ from expected. */
static int render_concurrently(const chat_jinja *tmpl, const char *context, const char *expected,
                               int n) {
    pthread_t tid[64];
    render_job jobs[64];
    if (n > 64)
        n = 64;
    int started = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        jobs[i] = (render_job){tmpl, context, expected, 0};
        if (pthread_create(&tid[i], NULL, render_many, &jobs[i]) != 0)
            break;
        started++;
    }
    for (int i = 0; i < started; i++) {
        pthread_join(tid[i], NULL);
        bad += jobs[i].mismatches;
    }
    return started == n ? bad : bad + 1;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s TEMPLATE.jinja CONTEXT.json [THREADS]\n", argv[0]);
        return 1;
    }
    char *source = slurp(argv[1]);
    char *context = slurp(argv[2]);
    if (!source || !context) {
        fprintf(stderr, "cannot read %s\n", source ? argv[2] : argv[1]);
        return 1;
    }
    char err[1024];
    chat_jinja *tmpl = chat_jinja_compile(source, err, sizeof err);
    if (!tmpl) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    char *out = chat_jinja_render(tmpl, context, err, sizeof err);
    if (!out) {
        fprintf(stderr, "%s\n", err);
        chat_jinja_free(tmpl);
        return 1;
    }
    fwrite(out, 1, strlen(out), stdout);
    int rc = 0;
    int threads = argc == 4 ? atoi(argv[3]) : 1;
    if (threads > 1) {
        int bad = render_concurrently(tmpl, context, out, threads);
        if (bad) {
            fprintf(stderr, "%d concurrent renderings differ from the first\n", bad);
            rc = 2;
        }
    }
    free(out);
    chat_jinja_free(tmpl);
    free(source);
    free(context);
    return rc;
}
