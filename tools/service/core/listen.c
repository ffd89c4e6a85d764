/* listen.c - the sockets: the listening socket on --host/--port (and whether other
 * machines can reach it, for the rule of auth.c), libmicrohttpd started on it (its own
 * polling thread and --http-threads accepting and parsing; epoll) with the HTTP limits
 * (--max-header-bytes, --max-connections, --timeout), or started with no listening socket for
 * an embedder that hands it connections (poll, so a half-close is seen at once). */
#include "core/core.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int is_loopback(const struct sockaddr *sa) {
    if (sa->sa_family == AF_INET6)
        return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return sa->sa_family == AF_INET &&
           (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
}

int svc_host_is_loopback(const char *host) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    if (getaddrinfo(host, "0", &hints, &res)) return 1; /* svc_listen reports it */
    int all = 1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next)
        all &= is_loopback(ai->ai_addr);
    freeaddrinfo(res);
    return all;
}

int svc_listen(const char *host, int port, char *where, size_t cap, int *loopback) {
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int e = getaddrinfo(host, ps, &hints, &res);
    if (e) {
        fprintf(stderr, "g4v serve: --host %s: %s\n", host, gai_strerror(e));
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
#ifdef SOCK_CLOEXEC
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
#else /* macOS: no SOCK_CLOEXEC flag, the same in two steps */
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) continue;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
#endif
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
            e = errno;
            close(fd);
            fd = -1;
            errno = e;
        }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "g4v serve: cannot listen on %s port %d: %s\n", host, port,
                strerror(errno));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char addr[INET6_ADDRSTRLEN] = "?";
    int bound = port;
    *loopback = 0; /* unknown counts as reachable */
    if (!getsockname(fd, (struct sockaddr *)&ss, &sl)) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a6->sin6_addr, addr, sizeof addr);
            bound = ntohs(a6->sin6_port);
            snprintf(where, cap, "http://[%s]:%d", addr, bound);
        } else {
            struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a4->sin_addr, addr, sizeof addr);
            bound = ntohs(a4->sin_port);
            snprintf(where, cap, "http://%s:%d", addr, bound);
        }
        *loopback = is_loopback((struct sockaddr *)&ss);
    }
    return fd;
}

int svc_daemon_start(server *s, int fd, const char *where) {
    if (fd >= 0) {
#ifdef __linux__
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
#else /* epoll is Linux's; libmicrohttpd picks kqueue/poll/select itself elsewhere */
        unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_ALLOW_SUSPEND_RESUME;
#endif
        s->daemon = MHD_start_daemon(
            flags, 0, NULL, NULL, svc_handle, s, MHD_OPTION_LISTEN_SOCKET, fd,
            MHD_OPTION_THREAD_POOL_SIZE, (unsigned)s->a.http_threads,
            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->a.timeout_s, MHD_OPTION_CONNECTION_LIMIT,
            (unsigned)s->a.max_connections, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
            (size_t)s->a.max_header_bytes, MHD_OPTION_NOTIFY_COMPLETED, svc_completed, s,
            MHD_OPTION_END);
        if (!s->daemon) {
            fprintf(stderr, "g4v serve: libmicrohttpd could not start on %s\n", where);
            close(fd);
            return -1;
        }
        return 0;
    }
    /* poll(), not epoll: epoll is edge-triggered in libmicrohttpd, so a client's half-close that
     * arrives together with its last bytes goes unseen until the connection timeout. With poll
     * the daemon reads the end of input at once and closes (fuzz/fuzz_serve.c: 4,500 inputs/s
     * instead of 26). The request handling is the same code either way. */
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_ALLOW_SUSPEND_RESUME |
                     MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC;
    s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, svc_handle, s,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)s->a.timeout_s,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)s->a.max_header_bytes,
                                 MHD_OPTION_NOTIFY_COMPLETED, svc_completed, s, MHD_OPTION_END);
    if (!s->daemon) {
        fprintf(stderr, "g4v serve: libmicrohttpd could not start without a listening socket\n");
        return -1;
    }
    return 0;
}

int g4v_service_add_connection(g4v_service *s, int fd) {
    struct sockaddr_in peer;
    memset(&peer, 0, sizeof peer);
    peer.sin_family = AF_INET;
    peer.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return MHD_add_connection(s->daemon, fd, (struct sockaddr *)&peer, sizeof peer) == MHD_YES
               ? 0
               : -1;
}
