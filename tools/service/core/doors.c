/* doors.c - which web pages may use the service (docs/SERVICE.md, "Security", "Browsers"): the
 * checks a request meets before the API key, so that a page on another site, which the user's
 * browser opens while the server runs, can neither use the server nor read it.
 *
 *  - Host: the name a request was sent to must be the bound address, localhost, 127.0.0.1, [::1]
 *    or an --allowed-host; otherwise 421. A DNS-rebinding page reaches 127.0.0.1 under its own
 *    name (evil.example), which the browser then treats as the page's own origin: only the Host
 *    header tells. With a wildcard --host (0.0.0.0, ::) any IP literal is allowed too: a page
 *    cannot rebind a literal, and the server answers on every address of the machine.
 *  - Origin: a request a browser sends for a page of another origin carries that origin, and is
 *    refused (403) unless --allowed-origin names it (or is `*`). The server's own origin is
 *    http(s)://HOST with the request's own Host (already checked above). A request without an
 *    Origin (curl, the SDKs, a top-level navigation) is not a cross-site one and is unaffected.
 *    An allowed origin gets the CORS headers (Access-Control-Allow-Origin, and a 204 to its
 *    preflight OPTIONS), so that its page can read the answers.
 *  - Content-Type: a POST must carry one of its route's types (svc_route.types); in particular a
 *    type a browser sends cross-site without a preflight (text/plain,
 *    application/x-www-form-urlencoded, multipart/form-data, or none) is refused 415 by every
 *    route, so that a form or a no-cors fetch cannot make the server work even where the Origin
 *    check is opted out of or an old browser sends no Origin.
 */
#include "core/core.h"
#include "frontend.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The types a browser may send without a preflight (the Fetch standard's CORS-safelisted
 * request Content-Types); no route may accept one. */
static const char *const simple_types[] = {"text/plain", "application/x-www-form-urlencoded",
                                           "multipart/form-data", NULL};

/* The media type of a Content-Type value (before ';', spaces trimmed) into b, lower-case; 0, or
 * -1 when it is too long to be one we accept. */
static int media_type(const char *v, char *b, size_t cap) {
    while (*v == ' ' || *v == '\t')
        v++;
    size_t n = strcspn(v, ";");
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (n >= cap) return -1;
    for (size_t i = 0; i < n; i++)
        b[i] = (char)(v[i] >= 'A' && v[i] <= 'Z' ? v[i] + 32 : v[i]);
    b[n] = 0;
    return 0;
}

/* 1 if media type t is in list ("image/png, application/json"; an item "X/ *", without the
 * space, matches any subtype of X). */
static int type_listed(const char *list, const char *t) {
    for (const char *p = list; *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ", ");
        if (!n) break;
        if (n >= 2 && p[n - 1] == '*' && p[n - 2] == '/') {
            if (!strncmp(t, p, n - 1) && t[n - 1] && !strchr(t + n - 1, '/')) return 1;
        } else if (strlen(t) == n && !strncmp(t, p, n)) {
            return 1;
        }
        p += n;
    }
    return 0;
}

int svc_door_type_ok(const char *accepted, const char *content_type) {
    char t[128];
    if (!content_type || media_type(content_type, t, sizeof t) || !t[0]) return 0;
    for (int i = 0; simple_types[i]; i++)
        if (!strcmp(t, simple_types[i])) return 0;
    return accepted && type_listed(accepted, t);
}

/* The host part of a Host header or of an origin's authority ("[::1]:8080" -> "[::1]",
 * "Localhost.:80" -> "localhost") into b, lower-case, a final dot dropped; its port (after the
 * name, with its ':') into *port, "" when none. -1 when malformed or too long. */
static int split_authority(const char *a, size_t len, char *b, size_t cap, const char **port) {
    size_t n;
    if (len && a[0] == '[') {
        const char *close = memchr(a, ']', len);
        if (!close) return -1;
        n = (size_t)(close - a) + 1;
    } else {
        const char *colon = memchr(a, ':', len);
        n = colon ? (size_t)(colon - a) : len;
    }
    if (n == 0 || n >= cap) return -1;
    if (n < len && a[n] != ':') return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)a[i];
        if (ch <= ' ' || ch >= 0x7f || ch == '/' || ch == '@' || ch == '\\') return -1;
        b[i] = (char)(ch >= 'A' && ch <= 'Z' ? ch + 32 : ch);
    }
    *port = a + n;
    if (n > 1 && b[n - 1] == '.') n--; /* "localhost." is localhost */
    b[n] = 0;
    return 0;
}

/* 1 if name ("127.0.0.1", "[::1]") is an IP address literal. */
static int ip_literal(const char *name) {
    unsigned char buf[16];
    if (name[0] == '[') {
        char v6[INET6_ADDRSTRLEN];
        size_t n = strlen(name);
        if (n < 3 || n - 2 >= sizeof v6 || name[n - 1] != ']') return 0;
        memcpy(v6, name + 1, n - 2);
        v6[n - 2] = 0;
        return inet_pton(AF_INET6, v6, buf) == 1;
    }
    return inet_pton(AF_INET, name, buf) == 1;
}

/* --host as a Host header names it ("::1" -> "[::1]"), lower-case, into b; "" for a wildcard
 * (0.0.0.0, ::, empty), whose server answers on every address. */
static void bound_name(const char *host, char *b, size_t cap) {
    b[0] = 0;
    if (!host || !*host || !strcmp(host, "0.0.0.0") || !strcmp(host, "::") ||
        !strcmp(host, "[::]"))
        return;
    unsigned char buf[16];
    if (strchr(host, ':') && host[0] != '[' && inet_pton(AF_INET6, host, buf) == 1)
        snprintf(b, cap, "[%s]", host);
    else
        snprintf(b, cap, "%s", host);
    for (char *c = b; *c; c++)
        if (*c >= 'A' && *c <= 'Z') *c += 32;
}

static int list_has(const fe_opt_list *l, const char *v) {
    for (int i = 0; i < l->count; i++)
        if (!strcasecmp(l->items[i], v)) return 1;
    return 0;
}

int svc_doors_setup(const g4v_service_options *a) {
    for (int i = 0; i < a->allowed_origins.count; i++) {
        const char *o = a->allowed_origins.items[i];
        if (!strcmp(o, "*")) {
            fprintf(stderr,
                    "g4v serve: warning: --allowed-origin '*': a page of any web site the user "
                    "opens may use this server%s (docs/SERVICE.md, \"Security\")\n",
                    a->api_key || a->api_key_file || getenv(SVC_API_KEY_ENV)
                        ? " if it knows the key"
                        : " and read its answers");
            continue;
        }
        const char *rest = !strncasecmp(o, "http://", 7)    ? o + 7
                           : !strncasecmp(o, "https://", 8) ? o + 8
                                                            : NULL;
        char name[256];
        const char *port;
        if (!rest || split_authority(rest, strlen(rest), name, sizeof name, &port) ||
            (*port && (port[0] != ':' || strspn(port + 1, "0123456789") != strlen(port + 1) ||
                       !port[1]))) {
            fprintf(stderr,
                    "g4v serve: --allowed-origin %s: an origin is http://HOST[:PORT] or "
                    "https://HOST[:PORT] (no path, no trailing slash), or '*'\n",
                    o);
            return G4V_SERVICE_ERR_USAGE;
        }
    }
    for (int i = 0; i < a->allowed_hosts.count; i++) {
        const char *h = a->allowed_hosts.items[i];
        if (!strcmp(h, "*")) {
            fprintf(stderr,
                    "g4v serve: warning: --allowed-host '*': requests for any host name are "
                    "answered, so a DNS-rebinding page can reach this server (docs/SERVICE.md, "
                    "\"Security\")\n");
            continue;
        }
        char name[256];
        const char *port;
        if (split_authority(h, strlen(h), name, sizeof name, &port) || *port) {
            fprintf(stderr,
                    "g4v serve: --allowed-host %s: a host name or IP address, without a port "
                    "(\"g4v.example.com\", \"192.168.1.5\", \"[fd00::5]\"), or '*'\n",
                    h);
            return G4V_SERVICE_ERR_USAGE;
        }
    }
    return G4V_SERVICE_OK;
}

int svc_door_host_ok(const g4v_service_options *a, const char *host) {
    if (!host) return 1; /* HTTP/1.0 without Host: no browser sends that */
    if (list_has(&a->allowed_hosts, "*")) return 1;
    char name[256], bound[256];
    const char *port;
    if (split_authority(host, strlen(host), name, sizeof name, &port)) return 0;
    if (*port && (port[0] != ':' || strspn(port + 1, "0123456789") != strlen(port + 1)))
        return 0;
    if (!strcmp(name, "localhost") || !strcmp(name, "127.0.0.1") || !strcmp(name, "[::1]"))
        return 1;
    bound_name(a->host, bound, sizeof bound);
    if (bound[0] ? !strcmp(name, bound) : ip_literal(name)) return 1;
    for (int i = 0; i < a->allowed_hosts.count; i++) {
        char allowed[256];
        const char *p;
        const char *h = a->allowed_hosts.items[i];
        if (!split_authority(h, strlen(h), allowed, sizeof allowed, &p) && !strcmp(name, allowed))
            return 1;
    }
    return 0;
}

/* An authority with the scheme's default port dropped ("localhost:80" for http is "localhost"),
 * lower-case, into b; -1 when malformed. */
static int normal_authority(const char *a, size_t len, int https, char *b, size_t cap) {
    char name[256];
    const char *port;
    if (split_authority(a, len, name, sizeof name, &port)) return -1;
    size_t plen = len - (size_t)(port - a);
    if ((plen == 3 && !https && !memcmp(port, ":80", 3)) ||
        (plen == 4 && https && !memcmp(port, ":443", 4)))
        plen = 0;
    if (plen == 1) plen = 0; /* "host:" */
    int n = snprintf(b, cap, "%s%.*s", name, (int)plen, port);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

const char *svc_door_origin(const g4v_service_options *a, const char *origin, const char *host,
                            int *allowed) {
    *allowed = 1;
    if (!origin) return NULL;
    for (int i = 0; i < a->allowed_origins.count; i++) {
        const char *o = a->allowed_origins.items[i];
        if (!strcmp(o, "*")) return "*";
        if (!strcasecmp(o, origin)) return o;
    }
    /* the server's own origin: http(s):// and the request's Host */
    int https = !strncasecmp(origin, "https://", 8);
    const char *rest = https ? origin + 8 : !strncasecmp(origin, "http://", 7) ? origin + 7 : NULL;
    char mine[300], theirs[300];
    if (rest && host && !normal_authority(rest, strlen(rest), https, theirs, sizeof theirs) &&
        !normal_authority(host, strlen(host), https, mine, sizeof mine) && !strcmp(mine, theirs))
        return NULL;
    *allowed = 0;
    return NULL;
}

const char *svc_model_name(const server *s, const char *path) {
    if (!path || s->api_key) return path;
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') /* "models/tiny/" is "tiny/" */
        n--;
    while (n && path[n - 1] != '/')
        n--;
    return path + n;
}
