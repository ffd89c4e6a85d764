/* auth.c - the API key: read once at start (--api-key, --api-key-file or G4V_API_KEY),
 * checked on every request but GET /health (`Authorization: Bearer KEY`, compared in constant
 * time), answered 401 with one fixed body when missing or wrong; and the listening rule: an
 * address other machines can reach needs a key, unless the operator says --insecure-no-auth.
 * A 401 says nothing of what was wrong, so that probing learns nothing but "no". */
#include "core/auth.h"
#include "core/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

int svc_key_equal(const unsigned char key[SVC_KEY_MAX], size_t klen, const unsigned char *got,
                  size_t glen) {
    /* No early exit: the loop runs SVC_KEY_MAX times for any input; which bytes of got are read
     * depends on glen, which the client chose and knows. */
    unsigned diff = klen != glen;
    for (size_t i = 0; i < SVC_KEY_MAX; i++) {
        unsigned char g = i < glen ? got[i] : 0;
        diff |= (unsigned)(key[i] ^ g);
    }
    return (diff == 0) & (klen > 0);
}

/* A key is visible ASCII (what a header carries unchanged), 1 to SVC_KEY_MAX - 1 bytes. */
static int key_check(const char *k, size_t n, const char *from) {
    if (n == 0) {
        fprintf(stderr, "g4v serve: %s: the API key is empty\n", from);
        return -1;
    }
    if (n >= SVC_KEY_MAX) {
        fprintf(stderr, "g4v serve: %s: the API key is %zu bytes, at most %d are accepted\n", from,
                n, SVC_KEY_MAX - 1);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 0x21 || (unsigned char)k[i] > 0x7e) {
            fprintf(stderr,
                    "g4v serve: %s: the API key may only hold visible ASCII characters (no "
                    "spaces; byte %zu is 0x%02x)\n",
                    from, i, (unsigned char)k[i]);
            return -1;
        }
    if (n < 16)
        fprintf(stderr,
                "g4v serve: warning: %s: an API key of %zu characters is easy to guess; use 32 "
                "or more random ones (e.g. openssl rand -hex 32)\n",
                from, n);
    return 0;
}

/* The key file's first line (a final "\n" or "\r\n" is not part of the key). */
static int read_key_file(const char *path, unsigned char *key, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "g4v serve: --api-key-file %s: %s\n", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (!fstat(fileno(f), &st) && (st.st_mode & 077))
        fprintf(stderr,
                "g4v serve: warning: --api-key-file %s can be read by other users (chmod 600 "
                "it)\n",
                path);
    char buf[SVC_KEY_MAX + 2];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    size_t end = 0;
    while (end < n && buf[end] != '\n')
        end++;
    int more = end + 1 < n; /* anything after the first line */
    if (end && buf[end - 1] == '\r') end--;
    if (more || (end == n && n == sizeof buf)) {
        fprintf(stderr,
                "g4v serve: --api-key-file %s: the file must hold the key alone, on one line of "
                "at most %d characters\n",
                path, SVC_KEY_MAX - 1);
        return -1;
    }
    char from[64 + 32];
    snprintf(from, sizeof from, "--api-key-file %.64s", path);
    if (key_check(buf, end, from)) return -1;
    memcpy(key, buf, end);
    memset(buf, 0, sizeof buf);
    *len = end;
    return 0;
}

int svc_auth_setup(server *s) {
    const g4v_service_options *a = &s->a;
    const char *env = getenv(SVC_API_KEY_ENV);
    if (!a->api_key && !a->api_key_file && !(env && *env)) return 0;
    unsigned char *key = calloc(1, SVC_KEY_MAX);
    if (!key) return G4V_SERVICE_ERR_INTERNAL;
    size_t len = 0;
    int bad;
    if (a->api_key_file) {
        bad = read_key_file(a->api_key_file, key, &len);
    } else {
        const char *k = a->api_key ? a->api_key : env;
        len = strlen(k);
        bad = key_check(k, len, a->api_key ? "--api-key" : SVC_API_KEY_ENV);
        if (!bad) memcpy(key, k, len);
    }
    if (bad) {
        free(key);
        return G4V_SERVICE_ERR_USAGE;
    }
    s->api_key = key;
    s->api_key_len = len;
    return 0;
}

void svc_auth_free(server *s) {
    if (!s->api_key) return;
    volatile unsigned char *p = s->api_key; /* not optimised away before free */
    for (size_t i = 0; i < SVC_KEY_MAX; i++)
        p[i] = 0;
    free(s->api_key);
    s->api_key = NULL;
}

int svc_auth_may_listen(const server *s, int loopback, const char *addr) {
    if (loopback) return 0;
    if (s->api_key) {
        fprintf(stderr,
                "g4v serve: warning: listening on %s, reachable from other machines; requests "
                "need the API key, but travel unencrypted (no TLS: put a TLS proxy in front)\n",
                addr);
        return 0;
    }
    if (s->a.insecure_no_auth) {
        fprintf(stderr,
                "g4v serve: warning: listening on %s, reachable from other machines, with no "
                "API key (--insecure-no-auth) and no TLS: anyone who can reach it can use it\n",
                addr);
        return 0;
    }
    fprintf(stderr,
            "g4v serve: refusing --host %s without an API key: it is reachable from other "
            "machines. Give a key (--api-key-file FILE, or the environment variable "
            SVC_API_KEY_ENV "), or listen on 127.0.0.1, or add --insecure-no-auth to serve anyone "
            "who can reach it\n",
            s->a.host);
    return -1;
}

int svc_auth_allows(const server *s, struct MHD_Connection *c) {
    if (!s->api_key) return 1;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7)) h = ""; /* compared all the same: one code path */
    else h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n && (h[n - 1] == ' ' || h[n - 1] == '\t'))
        n--;
    return svc_key_equal(s->api_key, s->api_key_len, (const unsigned char *)h, n);
}

enum MHD_Result svc_auth_refuse(request *q) {
    struct MHD_Response *r = svc_error_response(MHD_HTTP_UNAUTHORIZED,
                                                "missing or wrong API key (Authorization: Bearer)",
                                                "SERVE_UNAUTHORIZED");
    if (r) {
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
        /* A body still coming is not read: the connection closes after the answer. */
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    return svc_answer(q, MHD_HTTP_UNAUTHORIZED, r);
}
