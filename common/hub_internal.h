/* hub_internal.h - what the Hub client's files share (hub.h): the HTTP layer over libcurl
 * (hub_http.c: one connection, requests with manual redirects so the token stays on the
 * endpoint's host, Range fetches that retry and resume), the file helpers (hub_fs.c), the
 * parsers of the listing and of safetensors headers (hub_parse.h), and the vision-only pull
 * (hub_vision.c), which hub_pull.c calls. */
#ifndef G4V_HUB_INTERNAL_H
#define G4V_HUB_INTERNAL_H

#include "hub.h"
#include "hub_parse.h"

#include <stddef.h>
#include <stdint.h>

/* docs/LIMITS.md "Hub answers" (the listing's and headers' limits: hub_parse.h) */
#define HUB_MAX_REDIRECTS 5
#define HUB_MAX_TRIES 6                /* tries of one request without progress */
#define HUB_MAX_RETRY_AFTER 60         /* seconds; a longer Retry-After is cut to this */

typedef struct hub_conn {
    void *curl;                   /* CURL * */
    char endpoint[1024];          /* without a trailing '/' */
    char origin[1100];            /* scheme://host:port of the endpoint, lower case */
    char auth[8192];              /* "Authorization: Bearer ..." or "" */
    int has_token;
    const hub_opts *o;
    hub_progress p;               /* the running totals for o->progress */
    double last_report;
} hub_conn;

/* What a request's answers said (the first is the endpoint's, the last the one with the body). */
typedef struct hub_meta {
    long status;                  /* of the last answer */
    char repo_commit[64];         /* X-Repo-Commit (first answer) */
    char linked_etag[160];        /* X-Linked-Etag (first answer), quotes removed */
    int64_t linked_size;          /* X-Linked-Size (first answer), -1 if absent */
    char etag[160];               /* ETag of the last answer, quotes and W/ removed */
    int64_t range_start, range_end, range_total; /* Content-Range of the last, -1 if absent */
    int64_t length;               /* Content-Length of the last, -1 if absent */
    int retry_after;              /* seconds, -1 if absent */
} hub_meta;

/* Where fetched bytes go: write(user, offset in the file, bytes, n) returns 0, or -1 (with the
 * reason in the sink's own state) to stop. */
typedef struct hub_sink {
    int (*write)(void *user, uint64_t off, const void *p, size_t n);
    void *user;
} hub_sink;

int hub_conn_open(hub_conn *h, const hub_opts *o, char *err, size_t ecap);
void hub_conn_close(hub_conn *h);

/* GET url into a malloc'ed, NUL-terminated buffer (at most max bytes); HUB_OK only for a 200.
 * Other statuses: the HUB_ERR_* for them, with what. names the thing asked for in err. */
int hub_get_small(hub_conn *h, const char *url, size_t max, char **out, size_t *n, hub_meta *m,
                  const char *what, char *err, size_t ecap);

/* Bytes [lo, hi) of the file at url (size bytes in all, as the listing says) into sink, with
 * retries (429, 5xx, drops: backoff, Retry-After) and resumption from the last byte received.
 * etag: "" to accept any, else every answer's ETag must be it; the first answer's meta goes to
 * *m. Counts the bytes in h->p. */
int hub_fetch(hub_conn *h, const char *url, uint64_t lo, uint64_t hi, uint64_t size,
              const char *etag, hub_sink *sink, hub_meta *m, char *err, size_t ecap);

/* The status of a refused answer as a HUB_ERR_* and its message. */
int hub_status_error(hub_conn *h, long status, const char *what, char *err, size_t ecap);

/* The progress callback, rate-limited unless force. */
void hub_report(hub_conn *h, int force);

/* s percent-escaped whole ('/' too) into out. 0 or -1. */
int hub_escape(hub_conn *h, const char *s, char *out, size_t cap);
/* url-escaped repo path (each segment escaped, '/' kept) appended: "%s/%s/resolve/%s/%s". */
int hub_file_url(hub_conn *h, const char *repo, const char *commit, const char *path, char *out,
                 size_t cap);

/* ---- files (hub_fs.c) ---------------------------------------------------------------------- */

/* snprintf that reports truncation: 0, or -1. */
int hub_fmt(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* mkdir -p (0755). 0 or -1 (errno). */
int hub_mkdirs(const char *path);
/* rm -rf of a folder this client made (it holds no symlinked folders). */
void hub_rmtree(const char *path);
/* A file's whole text written as path.tmp.PID, then renamed to path. 0 or -1. */
int hub_write_atomic(const char *path, const void *data, size_t n);
/* The message for a failed write of path (errno): disk full says so. HUB_ERR_DISK. */
int hub_disk_error(const char *path, const char *what, char *err, size_t ecap);
/* A repo path from a listing is safe to join under a folder: relative, no "." or ".." or empty
 * component, no backslash or control character, at most 1024 bytes. */
int hub_path_safe(const char *p);
/* g4v's hub cache ($G4V_HUB_CACHE, else $XDG_CACHE_HOME/g4v/hub, else ~/.cache/g4v/hub). */
int hub_g4v_cache(char *out, size_t cap);
/* The Hugging Face cache as store_hf.c and huggingface_hub name it. */
int hub_hf_cache(char *out, size_t cap);
/* 1 for a 40-hex commit. */
int hub_is_commit(const char *s);

/* ---- vision only (hub_vision.c) ------------------------------------------------------------- */

/* The vision-only checkpoint of the listed files at commit into g4v's cache: r->path. */
int hub_pull_vision(hub_conn *h, const char *repo, const char *revision, const char *commit,
                    const hub_file *files, int n, hub_result *r, char *err, size_t ecap);

#endif
