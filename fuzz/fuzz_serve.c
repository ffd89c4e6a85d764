/* fuzz_serve.c - the input is what a client sends to `g4v serve`: raw HTTP bytes (request line,
 * headers, body; possibly several pipelined requests), fed to the service's real request handling
 * (tools/service, the library g4v_service that `g4v serve` runs) through libmicrohttpd, over a
 * socketpair instead of a listening socket.
 *
 * Once per process: the tiny checkpoint is loaded and the service opened as `g4v serve` starts it
 * (one context of one thread, queue 4, 1 MB body limit, 70 tokens), without a listening socket
 * (g4v_service_open). Per input: one connection handed to the service
 * (g4v_service_add_connection), the bytes written and the write side shut, the answers read until
 * the server closes (or stays quiet for 1 s: then the client hangs up, perhaps mid-request).
 * Checks: whatever the bytes, the process neither crashes nor leaks nor hangs (libFuzzer's
 * -timeout); every answer starts with an HTTP/1.x status line whose code is one the service or
 * libmicrohttpd sends; a server that closes has sent whole answers (headers and Content-Length
 * bytes each); every JSON answer is UTF-8 and parses; and no request stays in flight once its
 * connection is closed.
 */
#define _GNU_SOURCE 1 /* memmem */
#include "frontend.h"
#include "fuzz_common.h"
#include "service.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static g4v_service *srv;

static void start(void) {
    g4v_service_options o;
    g4v_service_options_init(&o);
    o.model = fz_model_dir();
    o.contexts = 1;
    o.threads = 1;
    o.queue = 4;
    o.http_threads = 1;
    o.timeout_s = 5;
    o.tokens = 70;
    o.max_body = 1u << 20;
    signal(SIGPIPE, SIG_IGN);
    /* The daemon polls with poll(), not g4v serve's epoll, so that a client's half-close is seen
     * at once and the fuzzer runs at CPU speed (service.h, tools/service/core/listen.c). */
    if (g4v_service_open(&o, &srv))
        fz_die(__FILE__, __LINE__, "setup", "cannot set up the server on %s", o.model);
}

static int known_status(int code) {
    /* the service's own codes, and those libmicrohttpd answers with by itself: malformed
     * requests, and the interim 100 Continue for "Expect: 100-continue" */
    static const int mhd[] = {100, 400, 413, 414, 417, 431, 500, 501, 505};
    if (g4v_service_answers_with(code)) return 1;
    for (size_t i = 0; i < sizeof mhd / sizeof mhd[0]; i++)
        if (mhd[i] == code) return 1;
    return 0;
}

/* Walks the answers in buf[0..n): each a status line, headers, and as many body bytes as its
 * Content-Length says (every answer of the service has one; bodies may hold any byte, .npy ones
 * NULs, error texts echoed request bytes, so the walk goes by lengths; an interim "100 Continue"
 * has no body). Every whole JSON answer must be strict UTF-8 and parse. Returns 1 when buf ends
 * exactly after a whole answer. Answers to HEAD requests have no body: callers skip the walk when
 * the input may hold one. */
static int walk_answers(const char *buf, size_t n) {
    size_t at = 0;
    while (at < n) {
        if (n - at < 12 || memcmp(buf + at, "HTTP/1.", 7)) return 0;
        const char *head = buf + at;
        const char *end = memmem(head, n - at, "\r\n\r\n", 4);
        if (!end) return 0;
        unsigned long long cl = 0;
        int have = !memcmp(head + 8, " 100 ", 5), json = 0;
        for (const char *h = head; h < end;) {
            const char *eol = memmem(h, (size_t)(end + 2 - h), "\r\n", 2);
            size_t len = (size_t)(eol - h);
            if (len > 15 && !strncasecmp(h, "Content-Length:", 15))
                have = sscanf(h + 15, "%llu", &cl) == 1;
            if (len > 13 && !strncasecmp(h, "Content-Type:", 13))
                json = memmem(h, len, "application/json", 16) != NULL;
            h = eol + 2;
        }
        size_t body = (size_t)(end + 4 - buf);
        if (!have || n - body < cl) return 0;
        if (json) {
            FZ_ASSERT(fe_utf8_valid(buf + body, (size_t)cl), "a JSON answer is not UTF-8: %.80s",
                      buf + body);
            cJSON *j = cJSON_ParseWithLength(buf + body, (size_t)cl);
            FZ_ASSERT(j != NULL, "a JSON answer does not parse: %.80s", buf + body);
            cJSON_Delete(j);
        }
        at = body + (size_t)cl;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!srv) start();
    int sv[2];
    FZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair: %s",
              strerror(errno));
    FZ_ASSERT(g4v_service_add_connection(srv, sv[1]) == 0, "MHD_add_connection failed");
    /* Write everything (the daemon reads concurrently), then half-close: end of request. */
    for (size_t off = 0; off < size;) {
        ssize_t w = send(sv[0], data + off, size - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break; /* the server closed early (e.g. a 413 or a malformed request) */
        off += (size_t)w;
    }
    shutdown(sv[0], SHUT_WR);
    /* Read the answers until the server closes the connection: with the write side shut it
     * does so once it has answered what it could parse (keep-alive ends at the end of input) or
     * found the request incomplete. A server that stays quiet for 1 s is left as a client that
     * hangs up would leave it, possibly mid-request or mid-encode: the server must cope. */
    static char resp[1 << 20];
    size_t got = 0;
    int closed = 0;
    for (;;) {
        struct pollfd p = {sv[0], POLLIN, 0};
        if (poll(&p, 1, 1000) <= 0) break;
        ssize_t r = recv(sv[0], resp + got, sizeof resp - 1 - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) closed = 1;
        if (r <= 0 || got + (size_t)r >= sizeof resp - 1) break;
        got += (size_t)r;
        resp[got] = '\0';
    }
    close(sv[0]);
    resp[got] = '\0';
    if (getenv("FZ_SERVE_RAW")) fwrite(resp, 1, got, stderr);
    if (getenv("FZ_SERVE_SHOW")) /* debugging a seed: the status lines that came back */
        for (const char *l = resp; (l = strstr(l, "HTTP/1.")); l++)
            fprintf(stderr, "fuzz_serve: %.*s\n", (int)strcspn(l, "\r\n"), l);
    if (got) {
        int code = 0;
        FZ_ASSERT(sscanf(resp, "HTTP/1.%*1[01] %3d ", &code) == 1 && known_status(code),
                  "answer does not start with a known status line: %.80s", resp);
        /* A server that closes has sent whole answers. Not checked where libmicrohttpd answered
         * by itself (its error pages are HTML, ours JSON): 0.9.75 sends the header block of its
         * 400 for a malformed Content-Length value twice (fuzz/CAMPAIGNS.md, findings). */
        int whole = memmem(data, size, "HEAD", 4) || memmem(resp, got, "<html>", 6) ||
                    walk_answers(resp, got);
        FZ_ASSERT(!closed || whole, "the connection closed inside an answer (%zu bytes read)", got);
    }
    /* The connection is closed: its request must be completed (no leak of a request). */
    long inflight = g4v_service_wait_idle(srv, 10);
    FZ_ASSERT(inflight == 0, "%ld requests still in flight 10 s after the connection closed",
              inflight);
    return 0;
}
