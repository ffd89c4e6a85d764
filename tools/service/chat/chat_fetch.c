/* chat_fetch.c - an image_url's http(s) URL fetched, only under --allow-image-urls (docs/CHAT_API.md
 * §1 "Images by URL"): libcurl, http and https only, no proxy, at most --image-url-max-bytes and
 * --image-url-timeout seconds for the whole fetch, redirects followed here (at most 5), each hop's
 * host checked against --image-url-host when given, and every address libcurl is about to connect
 * to (after resolving, on every hop) refused when it is loopback, private, link-local, unspecified,
 * multicast or otherwise not a public unicast address: a request cannot make the server reach
 * its own machine or network. Runs on a slot's worker, never on the connection thread. */
#include "chat/chat_wing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef G4V_HAVE_CURL

int chat_fetch_url(const g4v_service_options *a, const char *url, unsigned char **data,
                   size_t *size, char *why, size_t whysz) {
    (void)a;
    (void)url;
    *data = NULL;
    *size = 0;
    snprintf(why, whysz, "this g4v was built without libcurl: it cannot fetch URLs");
    return -1;
}

#else

#include <arpa/inet.h>
#include <curl/curl.h>
#include <pthread.h>
#include <time.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>

enum { MAX_REDIRECTS = 5 };

typedef struct fetch {
    unsigned char *buf;
    size_t n, cap, limit;
    int too_big;
    int refused; /* an address was refused */
    char refused_addr[64];
    int allow_loopback; /* tests only: G4V_IMAGE_URL_ALLOW_LOOPBACK=1 */
} fetch;

/* 1 when the address is a public unicast one (IPv4, or IPv6 that is not a special range; an
 * IPv4-mapped IPv6 address is judged as its IPv4 address). */
static int v4_public(const unsigned char *b, int allow_loopback) {
    if (b[0] == 127) return allow_loopback;
    if (b[0] == 0 || b[0] == 10 || b[0] >= 224) return 0;        /* this, private, multicast+ */
    if (b[0] == 100 && (b[1] & 0xc0) == 64) return 0;            /* 100.64/10 shared */
    if (b[0] == 169 && b[1] == 254) return 0;                    /* link-local */
    if (b[0] == 172 && (b[1] & 0xf0) == 16) return 0;            /* 172.16/12 */
    if (b[0] == 192 && b[1] == 168) return 0;                    /* 192.168/16 */
    if (b[0] == 192 && b[1] == 0 && (b[2] == 0 || b[2] == 2)) return 0; /* IETF, TEST-NET-1 */
    if (b[0] == 198 && (b[1] & 0xfe) == 18) return 0;            /* 198.18/15 benchmarking */
    if (b[0] == 198 && b[1] == 51 && b[2] == 100) return 0;      /* TEST-NET-2 */
    if (b[0] == 203 && b[1] == 0 && b[2] == 113) return 0;       /* TEST-NET-3 */
    return 1;
}

static int addr_public(const struct sockaddr *sa, int allow_loopback) {
    if (sa->sa_family == AF_INET)
        return v4_public((const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr,
                         allow_loopback);
    if (sa->sa_family != AF_INET6) return 0;
    const unsigned char *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const unsigned char zero[15] = {0};
    if (!memcmp(b, mapped, 12)) return v4_public(b + 12, allow_loopback);
    if (!memcmp(b, zero, 15)) return b[15] == 1 ? allow_loopback : 0; /* ::1, :: */
    if (b[0] == 0xff) return 0;                      /* multicast */
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return 0; /* fe80::/10 link-local */
    if ((b[0] & 0xfe) == 0xfc) return 0;             /* fc00::/7 unique local */
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return 0; /* docs */
    if (b[0] == 0x00 || b[0] == 0x01) return 0;      /* ::/8 others, 100::/8 discard */
    if (b[0] == 0x20 && b[1] == 0x02) return 0;      /* 6to4: may wrap a private v4 */
    if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b) return 0; /* NAT64 */
    return 1;
}

static curl_socket_t open_socket(void *user, curlsocktype purpose, struct curl_sockaddr *a) {
    fetch *f = user;
    if (purpose != CURLSOCKTYPE_IPCXN || !addr_public(&a->addr, f->allow_loopback)) {
        f->refused = 1;
        char host[INET6_ADDRSTRLEN] = "?";
        if (a->family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&a->addr)->sin_addr, host, sizeof host);
        else if (a->family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&a->addr)->sin6_addr, host, sizeof host);
        snprintf(f->refused_addr, sizeof f->refused_addr, "%s", host);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype, a->protocol);
}

static size_t on_data(char *p, size_t size, size_t n, void *user) {
    fetch *f = user;
    size_t k = size * n;
    if (f->n + k > f->limit) {
        f->too_big = 1;
        return 0; /* libcurl stops with CURLE_WRITE_ERROR */
    }
    if (f->n + k > f->cap) {
        size_t cap = f->cap ? f->cap : 65536;
        while (cap < f->n + k) cap *= 2;
        if (cap > f->limit) cap = f->limit;
        unsigned char *b = realloc(f->buf, cap);
        if (!b) return 0;
        f->buf = b;
        f->cap = cap;
    }
    memcpy(f->buf + f->n, p, k);
    f->n += k;
    return k;
}

/* The URL's scheme is http or https and its host is allowed: 0, or -1 with why. */
static int url_ok(const g4v_service_options *a, const char *url, char *why, size_t whysz) {
    CURLU *u = curl_url();
    char *scheme = NULL, *host = NULL;
    int ok = u && !curl_url_set(u, CURLUPART_URL, url, 0) &&
             !curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) &&
             !curl_url_get(u, CURLUPART_HOST, &host, 0);
    if (!ok) {
        snprintf(why, whysz, "not a URL this server can fetch");
    } else if (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")) {
        snprintf(why, whysz, "only http and https URLs are fetched, not %.16s", scheme);
        ok = 0;
    } else if (a->image_url_hosts.count) {
        int found = 0;
        for (int i = 0; i < a->image_url_hosts.count && !found; i++)
            found = !strcasecmp(host, a->image_url_hosts.items[i]);
        if (!found) {
            snprintf(why, whysz, "the host %.100s is not one this server fetches from "
                     "(--image-url-host)", host);
            ok = 0;
        }
    }
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return ok ? 0 : -1;
}

static void curl_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

int chat_fetch_url(const g4v_service_options *a, const char *url, unsigned char **data,
                   size_t *size, char *why, size_t whysz) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, curl_init);
    *data = NULL;
    *size = 0;
    char *cur = strdup(url);
    if (!cur) {
        snprintf(why, whysz, "out of memory");
        return -1;
    }
    const char *lb = getenv("G4V_IMAGE_URL_ALLOW_LOOPBACK");
    fetch f = {.limit = (size_t)a->image_url_max_bytes, .allow_loopback = lb && !strcmp(lb, "1")};
    long deadline_ms = (long)a->image_url_timeout_s * 1000;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = -1;
    for (int hop = 0; hop <= MAX_REDIRECTS; hop++) {
        if (url_ok(a, cur, why, whysz)) break;
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long left = deadline_ms - ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0) {
            snprintf(why, whysz, "not fetched within %d s (--image-url-timeout)",
                     a->image_url_timeout_s);
            break;
        }
        CURL *c = curl_easy_init();
        if (!c) {
            snprintf(why, whysz, "cannot start a fetch");
            break;
        }
        f.n = 0;
        curl_easy_setopt(c, CURLOPT_URL, cur);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L); /* each hop is checked here */
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_NOPROXY, "*"); /* the checked address is the one reached */
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left);
        curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)f.limit);
        curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, &f);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "g4v-serve");
        CURLcode e = curl_easy_perform(c);
        long status = 0;
        char *next = NULL;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        if (!e && status >= 300 && status < 400) {
            char *loc = NULL;
            curl_easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc);
            if (loc) next = strdup(loc);
        }
        curl_easy_cleanup(c);
        if (f.refused) {
            snprintf(why, whysz, "the address %s is not a public one (loopback, private, "
                     "link-local or reserved addresses are never fetched)", f.refused_addr);
            break;
        }
        if (f.too_big || e == CURLE_FILESIZE_EXCEEDED) {
            snprintf(why, whysz, "larger than %llu bytes (--image-url-max-bytes)",
                     (unsigned long long)f.limit);
            break;
        }
        if (e == CURLE_OPERATION_TIMEDOUT) {
            snprintf(why, whysz, "not fetched within %d s (--image-url-timeout)",
                     a->image_url_timeout_s);
            break;
        }
        if (e) {
            snprintf(why, whysz, "the fetch failed: %s", curl_easy_strerror(e));
            break;
        }
        if (next) {
            free(cur);
            cur = next;
            if (hop == MAX_REDIRECTS) snprintf(why, whysz, "more than %d redirects", MAX_REDIRECTS);
            continue;
        }
        if (status != 200) {
            snprintf(why, whysz, "the server answered HTTP %ld", status);
            break;
        }
        if (!f.n) {
            snprintf(why, whysz, "the server answered an empty body");
            break;
        }
        *data = f.buf;
        *size = f.n;
        f.buf = NULL;
        rc = 0;
        break;
    }
    free(f.buf);
    free(cur);
    return rc;
}

#endif
