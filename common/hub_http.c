/* hub_http.c - the Hub client's HTTP layer (hub_internal.h) over libcurl: one easy handle per
 * pull (connections kept alive), redirects followed here rather than by curl so that the token
 * is attached only to requests whose scheme, host and port are the endpoint's, and Range
 * fetches that retry 429 and 5xx answers and dropped connections (backoff, Retry-After) and
 * resume from the last byte received. Answers are checked against what was asked: a 206 must
 * start where asked and name the listed size as its total, a body may not run past what it
 * announced or past the file, an ETag may not change between pieces (docs/LIMITS.md "Hub
 * answers"). Proxies come from the environment as curl reads them. */
#define _GNU_SOURCE
#include "hub_internal.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "frontend.h"

static int origin_of(const char *url, char *out, size_t cap) {
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    int rc = -1;
    if (u && !curl_url_set(u, CURLUPART_URL, url, 0) &&
        !curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) &&
        !curl_url_get(u, CURLUPART_HOST, &host, 0) &&
        !curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
        rc = hub_fmt(out, cap, "%s://%s:%s", scheme, host, port);
        for (char *c = out; *c; c++) *c = (char)tolower((unsigned char)*c);
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return rc;
}

/* The token: HF_TOKEN, else the file HF_TOKEN_PATH, else $HF_HOME/token (default
 * $XDG_CACHE_HOME/huggingface/token, ~/.cache/huggingface/token), as huggingface_hub. */
static void read_token(char *tok, size_t cap) {
    const char *e = getenv("HF_TOKEN");
    tok[0] = 0;
    if (e && *e) {
        snprintf(tok, cap, "%s", e);
    } else {
        char path[HUB_PATH_MAX];
        const char *p = getenv("HF_TOKEN_PATH"), *home = getenv("HF_HOME"),
                   *xdg = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
        int bad = 0;
        if (p && *p) bad = hub_fmt(path, sizeof path, "%s", p);
        else if (home && *home) bad = hub_fmt(path, sizeof path, "%s/token", home);
        else if (xdg && *xdg) bad = hub_fmt(path, sizeof path, "%s/huggingface/token", xdg);
        else if (h && *h) bad = hub_fmt(path, sizeof path, "%s/.cache/huggingface/token", h);
        else bad = 1;
        FILE *f = bad ? NULL : fopen(path, "rb");
        if (f) {
            size_t n = fread(tok, 1, cap - 1, f);
            tok[n] = 0;
            fclose(f);
        }
    }
    /* trimmed; a token with a control character or space inside is no token (no header
     * injection) */
    size_t a = 0, n = strlen(tok);
    while (a < n && isspace((unsigned char)tok[a])) a++;
    while (n > a && isspace((unsigned char)tok[n - 1])) n--;
    memmove(tok, tok + a, n - a);
    tok[n - a] = 0;
    for (char *c = tok; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == 0x7f) {
            tok[0] = 0;
            break;
        }
}

int hub_conn_open(hub_conn *h, const hub_opts *o, char *err, size_t ecap) {
    memset(h, 0, sizeof *h);
    h->o = o;
    const char *ep = getenv("HF_ENDPOINT");
    if (!ep || !*ep) ep = "https://huggingface.co";
    if (hub_fmt(h->endpoint, sizeof h->endpoint, "%s", ep)) {
        snprintf(err, ecap, "HF_ENDPOINT is too long");
        return HUB_ERR_USAGE;
    }
    size_t n = strlen(h->endpoint);
    while (n && h->endpoint[n - 1] == '/') h->endpoint[--n] = 0;
    if ((strncasecmp(h->endpoint, "https://", 8) && strncasecmp(h->endpoint, "http://", 7)) ||
        origin_of(h->endpoint, h->origin, sizeof h->origin)) {
        snprintf(err, ecap, "HF_ENDPOINT %s is no http:// or https:// URL", h->endpoint);
        return HUB_ERR_USAGE;
    }
    char tok[4096];
    read_token(tok, sizeof tok);
    if (tok[0]) {
        hub_fmt(h->auth, sizeof h->auth, "Authorization: Bearer %s", tok);
        h->has_token = 1;
    }
    memset(tok, 0, sizeof tok);
    static int inited;
    if (!inited) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        inited = 1;
    }
    h->curl = curl_easy_init();
    if (!h->curl) {
        snprintf(err, ecap, "cannot start libcurl");
        return HUB_ERR_NOMEM;
    }
    h->p.event = 0;
    return HUB_OK;
}

void hub_conn_close(hub_conn *h) {
    if (h->curl) curl_easy_cleanup(h->curl);
    h->curl = NULL;
    memset(h->auth, 0, sizeof h->auth);
}

void hub_report(hub_conn *h, int force) {
    if (!h->o || !h->o->progress) return;
    double t = fe_now_s();
    if (!force && t - h->last_report < 0.1) return;
    h->last_report = t;
    h->o->progress(h->o->user, &h->p);
}

/* ---- one request ----------------------------------------------------------------------------- */

typedef struct xfer {
    hub_conn *h;
    hub_meta *m;
    int first;          /* the first answer of the request (the endpoint's) */
    /* the body */
    hub_sink *sink;
    uint64_t body_off;  /* file offset of the next body byte */
    uint64_t want_lo, want_hi; /* deliver [want_lo, want_hi) only */
    uint64_t body_max;  /* at most this many body bytes (what was announced), else too_much */
    uint64_t body_n;
    int deliver;        /* 2xx: the body is the file's */
    int too_much, sink_failed, reached;
    long cur_status;    /* of the answer being read */
    /* hub_fetch: the file's listed size and the Range asked (lo < 0: none) */
    int fetch;
    uint64_t size;
    int64_t lo;
    char bad[512];      /* an answer refused before its body (hub_fetch's checks) */
    char location[4096];
} xfer;

/* At the end of an answer's headers: is its body the file's, from which offset, how long. */
static void headers_done(xfer *x) {
    hub_meta *m = x->m;
    x->deliver = x->cur_status >= 200 && x->cur_status < 300;
    if (!x->deliver) return;
    if (!x->fetch) {
        x->body_off = 0;
        return;
    }
    if (x->cur_status == 206) {
        if (m->range_start < 0) {
            snprintf(x->bad, sizeof x->bad, "a 206 answer without a Content-Range");
        } else if ((uint64_t)m->range_total != x->size) {
            snprintf(x->bad, sizeof x->bad, "the file is %lld bytes by its Content-Range, but "
                     "the listing says %llu", (long long)m->range_total,
                     (unsigned long long)x->size);
        } else if (x->lo < 0 || m->range_start > x->lo) {
            snprintf(x->bad, sizeof x->bad, "the answer starts at byte %lld, after the %lld asked",
                     (long long)m->range_start, (long long)x->lo);
        } else if (m->length >= 0 && m->length != m->range_end - m->range_start) {
            snprintf(x->bad, sizeof x->bad, "Content-Length %lld disagrees with its Content-Range",
                     (long long)m->length);
        }
        x->body_off = (uint64_t)m->range_start;
        x->body_max = (uint64_t)(m->range_end - m->range_start);
    } else if (x->cur_status == 200) {
        if (m->length >= 0 && (uint64_t)m->length != x->size)
            snprintf(x->bad, sizeof x->bad, "the file is %lld bytes by its Content-Length, but the "
                     "listing says %llu", (long long)m->length, (unsigned long long)x->size);
        x->body_off = 0;
        x->body_max = x->size;
    } else {
        snprintf(x->bad, sizeof x->bad, "an answer %ld where 200 or 206 was expected",
                 x->cur_status);
    }
    if (x->bad[0]) x->deliver = 0;
}

static void trim_quotes(const char *v, char *out, size_t cap) {
    if (!strncmp(v, "W/", 2)) v += 2;
    size_t n = strlen(v);
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"') v++, n -= 2;
    if (n >= cap) n = cap - 1;
    memcpy(out, v, n);
    out[n] = 0;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *user) {
    xfer *x = user;
    size_t n = size * nitems;
    char line[4096];
    size_t k = n < sizeof line - 1 ? n : sizeof line - 1;
    memcpy(line, buf, k);
    line[k] = 0;
    while (k && (line[k - 1] == '\r' || line[k - 1] == '\n')) line[--k] = 0;
    if (!k) {
        headers_done(x);
        return n;
    }
    if (!strncmp(line, "HTTP/", 5)) { /* a new answer: its own headers only */
        hub_meta *m = x->m;
        const char *sp = strchr(line, ' ');
        x->cur_status = sp ? strtol(sp + 1, NULL, 10) : 0;
        x->deliver = 0;
        m->etag[0] = 0;
        m->range_start = m->range_end = m->range_total = m->length = -1;
        m->retry_after = -1;
        x->location[0] = 0;
        return n;
    }
    char *colon = strchr(line, ':');
    if (!colon) return n;
    *colon = 0;
    char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    hub_meta *m = x->m;
    if (!strcasecmp(line, "location")) {
        snprintf(x->location, sizeof x->location, "%s", v);
    } else if (!strcasecmp(line, "etag")) {
        trim_quotes(v, m->etag, sizeof m->etag);
    } else if (!strcasecmp(line, "content-length")) {
        long long L;
        m->length = fe_parse_int(v, 0, INT64_MAX, &L) ? -1 : L;
    } else if (!strcasecmp(line, "content-range")) {
        unsigned long long a, b, t;
        if (sscanf(v, "bytes %llu-%llu/%llu", &a, &b, &t) == 3 && a <= b && b < t)
            m->range_start = (int64_t)a, m->range_end = (int64_t)b + 1, m->range_total = (int64_t)t;
    } else if (!strcasecmp(line, "retry-after")) {
        long long s;
        m->retry_after = fe_parse_int(v, 0, 1000000, &s) ? -1 : (int)s;
    } else if (x->first && !strcasecmp(line, "x-repo-commit")) {
        snprintf(m->repo_commit, sizeof m->repo_commit, "%s", v);
    } else if (x->first && !strcasecmp(line, "x-linked-etag")) {
        trim_quotes(v, m->linked_etag, sizeof m->linked_etag);
    } else if (x->first && !strcasecmp(line, "x-linked-size")) {
        long long L;
        m->linked_size = fe_parse_int(v, 0, INT64_MAX, &L) ? -1 : L;
    }
    return n;
}

/* The body: bytes of [want_lo, want_hi) go to the sink; a body longer than it said stops. */
static size_t on_body(char *buf, size_t size, size_t nitems, void *user) {
    xfer *x = user;
    size_t n = size * nitems;
    if (x->bad[0]) return 0;
    if (!x->deliver) return n; /* a redirect's or an error's body */
    if (x->body_n + n > x->body_max) {
        x->too_much = 1;
        return 0;
    }
    x->body_n += n;
    uint64_t a = x->body_off, b = a + n;
    x->body_off = b;
    uint64_t lo = a > x->want_lo ? a : x->want_lo, hi = b < x->want_hi ? b : x->want_hi;
    if (lo < hi) {
        if (x->sink->write(x->sink->user, lo, buf + (lo - a), (size_t)(hi - lo))) {
            x->sink_failed = 1;
            return 0;
        }
        if (x->fetch) {
            x->h->p.file_done += hi - lo;
            x->h->p.done += hi - lo;
            hub_report(x->h, 0);
        }
        x->want_lo = hi;
    }
    if (b >= x->want_hi) { /* all wanted (a 200 that sends the whole file: stop there) */
        x->reached = 1;
        return x->body_n == x->body_max ? n : 0;
    }
    return n;
}

typedef struct req {
    const char *url;
    int64_t lo, hi; /* Range bytes=lo-(hi-1); lo < 0: no Range */
} req;

/* One request, redirects followed here. Returns the curl code; the meta of the answers in *m,
 * the status in m->status. A body of a 2xx answer is checked and delivered by x. */
static CURLcode perform(hub_conn *h, const req *q, xfer *x, char *final_url, size_t fcap) {
    CURL *c = h->curl;
    char url[4096];
    snprintf(url, sizeof url, "%s", q->url);
    x->first = 1;
    for (int hop = 0;; hop++) {
        char org[1100];
        struct curl_slist *hd = NULL;
        int same = !origin_of(url, org, sizeof org) && !strcmp(org, h->origin);
        if (same && h->has_token) hd = curl_slist_append(hd, h->auth);
        hd = curl_slist_append(hd, "User-Agent: g4v; hf_hub-compatible");
        char range[80];
        if (q->lo >= 0) {
            snprintf(range, sizeof range, "Range: bytes=%lld-%lld", (long long)q->lo,
                     (long long)q->hi - 1);
            hd = curl_slist_append(hd, range);
        }
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hd);
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
        x->deliver = 0;
        x->location[0] = 0;
        x->m->status = 0;
        CURLcode rc = curl_easy_perform(c);
        curl_slist_free_all(hd);
        long st = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
        x->m->status = st;
        if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && x->reached)) return rc;
        if (x->bad[0]) return CURLE_OK;
        if (st >= 300 && st < 400 && x->location[0]) {
            if (hop >= HUB_MAX_REDIRECTS) return CURLE_TOO_MANY_REDIRECTS;
            CURLU *u = curl_url();
            char *next = NULL;
            int bad = !u || curl_url_set(u, CURLUPART_URL, url, 0) ||
                      curl_url_set(u, CURLUPART_URL, x->location, 0) ||
                      curl_url_get(u, CURLUPART_URL, &next, 0);
            if (!bad) bad = strncasecmp(next, "http://", 7) && strncasecmp(next, "https://", 8);
            if (!bad) snprintf(url, sizeof url, "%s", next);
            curl_free(next);
            curl_url_cleanup(u);
            if (bad) return CURLE_UNSUPPORTED_PROTOCOL;
            x->first = 0;
            continue;
        }
        if (final_url) snprintf(final_url, fcap, "%s", url);
        return CURLE_OK;
    }
}

int hub_status_error(hub_conn *h, long status, const char *what, char *err, size_t ecap) {
    if (status == 401 || status == 403) {
        snprintf(err, ecap,
                 "%s: the Hub answered %ld (%s). A gated or private repository: accept its "
                 "licence on the model's page (%s/<repo>) while logged in, then set HF_TOKEN to "
                 "an access token or run `hf auth login`%s",
                 what, status, status == 401 ? "not authorized" : "forbidden", h->endpoint,
                 h->has_token ? " (a token was sent: it lacks access to this repository)" : "");
        return HUB_ERR_AUTH;
    }
    if (status == 404) {
        snprintf(err, ecap, "%s: not found on %s (check the repo id and revision; a private "
                            "repository also answers so without a token)", what, h->endpoint);
        return HUB_ERR_NOT_FOUND;
    }
    snprintf(err, ecap, "%s: the Hub answered HTTP %ld", what, status);
    return HUB_ERR_NET;
}

static int retryable(long st) { return st == 429 || st == 408 || (st >= 500 && st <= 599); }

static void backoff(int tries, int retry_after) {
    double s = 0.25 * (double)(1 << (tries < 6 ? tries : 6));
    if (retry_after >= 0) s = retry_after > HUB_MAX_RETRY_AFTER ? HUB_MAX_RETRY_AFTER : retry_after;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

/* ---- the two request kinds ----------------------------------------------------------------- */

typedef struct mem_sink {
    char *buf;
    size_t n, cap;
} mem_sink;

static int mem_write(void *user, uint64_t off, const void *p, size_t n) {
    mem_sink *s = user;
    if (off != s->n || s->n + n > s->cap) return -1;
    memcpy(s->buf + s->n, p, n);
    s->n += n;
    return 0;
}

int hub_get_small(hub_conn *h, const char *url, size_t max, char **out, size_t *n, hub_meta *m,
                  const char *what, char *err, size_t ecap) {
    mem_sink ms = {malloc(max + 1), 0, max};
    if (!ms.buf) return snprintf(err, ecap, "out of memory"), HUB_ERR_NOMEM;
    hub_sink sink = {mem_write, &ms};
    for (int tries = 0;; tries++) {
        memset(m, 0, sizeof *m);
        m->linked_size = -1;
        ms.n = 0;
        xfer x = {.h = h, .m = m, .sink = &sink, .want_lo = 0, .want_hi = (uint64_t)max + 1,
                  .body_max = (uint64_t)max};
        req q = {url, -1, -1};
        CURLcode rc = perform(h, &q, &x, NULL, 0);
        if (x.too_much) {
            free(ms.buf);
            snprintf(err, ecap, "%s: the answer is larger than %zu bytes (docs/LIMITS.md)", what,
                     max);
            return HUB_ERR_INTEGRITY;
        }
        if (rc == CURLE_OK && m->status == 200) {
            ms.buf[ms.n] = 0;
            *out = ms.buf;
            *n = ms.n;
            return HUB_OK;
        }
        if ((rc != CURLE_OK || retryable(m->status)) && tries + 1 < HUB_MAX_TRIES) {
            backoff(tries, rc == CURLE_OK ? m->retry_after : -1);
            continue;
        }
        free(ms.buf);
        if (rc != CURLE_OK) {
            snprintf(err, ecap, "%s: %s (%s)", what, curl_easy_strerror(rc), h->endpoint);
            return HUB_ERR_NET;
        }
        return hub_status_error(h, m->status, what, err, ecap);
    }
}

int hub_fetch(hub_conn *h, const char *url, uint64_t lo, uint64_t hi, uint64_t size,
              const char *etag, hub_sink *sink, hub_meta *m, char *err, size_t ecap) {
    uint64_t pos = lo;
    int tries = 0, first = 1;
    char what[600];
    snprintf(what, sizeof what, "%s", url);
    while (pos < hi) {
        hub_meta mm;
        memset(&mm, 0, sizeof mm);
        mm.linked_size = -1;
        xfer x = {.h = h, .m = &mm, .sink = sink, .want_lo = pos, .want_hi = hi, .fetch = 1,
                  .size = size};
        /* the whole file from its start: no Range (as huggingface_hub); else the rest */
        req q = {url, -1, -1};
        if (pos > 0 || hi < size) q.lo = (int64_t)pos, q.hi = (int64_t)hi;
        x.lo = q.lo < 0 ? 0 : q.lo;
        CURLcode rc = perform(h, &q, &x, NULL, 0);
        if (first) {
            *m = mm;
            first = 0;
        }
        if (x.sink_failed) {
            snprintf(err, ecap, "%s: cannot write what was received", what);
            return HUB_ERR_DISK; /* the sink's owner has the errno and says more */
        }
        if (x.too_much) {
            snprintf(err, ecap, "%s: the server sent more bytes than it announced (%llu); "
                     "refused", what, (unsigned long long)x.body_max);
            return HUB_ERR_INTEGRITY;
        }
        if (x.bad[0]) {
            snprintf(err, ecap, "%s: %s; refused", what, x.bad);
            return HUB_ERR_INTEGRITY;
        }
        if (etag && *etag && mm.etag[0] && x.deliver && strcmp(mm.etag, etag)) {
            snprintf(err, ecap, "%s: the file changed while it was fetched (ETag %s, was %s)",
                     what, mm.etag, etag);
            return HUB_ERR_INTEGRITY;
        }
        uint64_t got = x.want_lo - pos;
        pos = x.want_lo;
        if (pos >= hi) break;
        if (got) tries = 0; /* progress: a drop after progress starts the count again */
        int ok_status = rc == CURLE_OK && (mm.status == 200 || mm.status == 206);
        if (rc == CURLE_OK && !ok_status && !retryable(mm.status))
            return hub_status_error(h, mm.status, what, err, ecap);
        if (++tries >= HUB_MAX_TRIES) {
            if (rc != CURLE_OK)
                snprintf(err, ecap, "%s: %s, %d tries without progress (run the command again: "
                         "it resumes)", what, curl_easy_strerror(rc), tries);
            else if (ok_status)
                snprintf(err, ecap, "%s: the answer ended at byte %llu of %llu, %d tries (run "
                         "the command again: it resumes)", what, (unsigned long long)pos,
                         (unsigned long long)hi, tries);
            else
                snprintf(err, ecap, "%s: the Hub answered HTTP %ld, %d tries (run the command "
                         "again later)", what, mm.status, tries);
            return HUB_ERR_NET;
        }
        backoff(tries - 1, rc == CURLE_OK && !ok_status ? mm.retry_after : -1);
    }
    return HUB_OK;
}

static int escape_path(CURL *c, const char *path, char *out, size_t cap) {
    size_t o = 0;
    out[0] = 0;
    while (*path) {
        const char *sl = strchr(path, '/');
        size_t n = sl ? (size_t)(sl - path) : strlen(path);
        char *e = curl_easy_escape(c, path, (int)n);
        if (!e) return -1;
        int bad = hub_fmt(out + o, cap - o, "%s%s", e, sl ? "/" : "");
        o += strlen(out + o);
        curl_free(e);
        if (bad) return -1;
        path += n + (sl ? 1 : 0);
    }
    return 0;
}

int hub_file_url(hub_conn *h, const char *repo, const char *commit, const char *path, char *out,
                 size_t cap) {
    char ep[3 * 1024 + 16];
    if (escape_path(h->curl, path, ep, sizeof ep)) return -1;
    return hub_fmt(out, cap, "%s/%s/resolve/%s/%s", h->endpoint, repo, commit, ep);
}

int hub_escape(hub_conn *h, const char *s, char *out, size_t cap) {
    char *e = curl_easy_escape(h->curl, s, 0);
    if (!e) return -1;
    int rc = hub_fmt(out, cap, "%s", e);
    curl_free(e);
    return rc;
}
