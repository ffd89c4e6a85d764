/* chat_llama_probe.c - libllama's extra buffer types (AMX, CPU_REPACK) tried in a child process
 * before a text model uses them, the verdict cached per libllama + CPU (chat_llama_probe.h,
 * docs/CHAT.md §6). */
#define _GNU_SOURCE /* dladdr */
#include "chat_llama_probe.h"
#include "chat_backend.h"
#include "chat_error.h"

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

/* ThreadSanitizer refuses threads in a child forked from a threaded process (its
 * die_after_fork), and the child's products run on ggml's threads: a TSan build takes the extra
 * buffer types unchecked, and says so */
#if defined(__SANITIZE_THREAD__)
#define PROBE_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PROBE_UNDER_TSAN 1
#endif
#endif
#ifndef PROBE_UNDER_TSAN
#define PROBE_UNDER_TSAN 0
#endif

/* a new version of the check makes every cached verdict stale */
#define PROBE_VERSION "2"
/* the child's whole run: a few small products take milliseconds; a hang is a failure */
enum { PROBE_TIMEOUT_MS = 30000 };
/* the product tried: Y[N, M] = W[N, K] X[K, M]. M > 1 takes ggml's AMX tile path (M == 1 has
 * a VNNI path of its own); N a multiple of 32 and K of 256 suit every type and buffer */
enum { PROBE_K = 256, PROBE_N = 64, PROBE_M = 48 };
/* relative RMS difference from the plain CPU buffer's result above which a path is wrong: the
 * paths quantize X alike and differ only in the order of float sums (~1e-6); broken tiles give
 * zeros or garbage (~1) */
#define PROBE_MAX_REL_RMS 1e-2

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static chat_llama_probe g_probe;
static int g_status;
static char g_err[1400];

/* The CPU device's extra buffer types (NULL-terminated), or NULL when it offers none. */
static ggml_backend_buffer_type_t *extra_bufts(ggml_backend_dev_t dev) {
    ggml_backend_dev_get_extra_bufts_t get_extra =
        (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(
            ggml_backend_dev_backend_reg(dev), "ggml_backend_dev_get_extra_bufts");
    return get_extra ? get_extra(dev) : NULL;
}

/* ---- the child: the products ---------------------------------------------------------------- */

/* deterministic values in [-1, 1) */
static float rnd(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / (float)(1u << 23) - 1.0f;
}

/* Y = W X with W of type t in buffer type buft; y gets N*M floats. 1: the buffer type does not
 * take this product (skipped), 0: computed, -1: a ggml call failed. */
static int product(ggml_backend_t be, ggml_backend_dev_t dev, ggml_backend_buffer_type_t buft,
                   enum ggml_type t, const float *w, const float *x, float *y) {
    struct ggml_init_params ip = {ggml_tensor_overhead() * 4 + ggml_graph_overhead(), NULL, true};
    struct ggml_context *cw = ggml_init(ip), *cx = ggml_init(ip);
    ggml_backend_buffer_t bw = NULL, bx = NULL;
    int rc = -1;
    if (!cw || !cx) goto out;
    struct ggml_tensor *W = ggml_new_tensor_2d(cw, t, PROBE_K, PROBE_N);
    struct ggml_tensor *X = ggml_new_tensor_2d(cx, GGML_TYPE_F32, PROBE_K, PROBE_M);
    struct ggml_tensor *Y = ggml_mul_mat(cx, W, X);
    bw = ggml_backend_alloc_ctx_tensors_from_buft(cw, buft);
    bx = ggml_backend_alloc_ctx_tensors_from_buft(cx, ggml_backend_dev_buffer_type(dev));
    if (!bw || !bx) goto out;
    ggml_backend_buffer_set_usage(bw, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    if (!ggml_backend_dev_supports_op(dev, Y)) {
        rc = 1;
        goto out;
    }
    size_t qsize = ggml_row_size(t, PROBE_K) * PROBE_N;
    void *q = malloc(qsize);
    if (!q) goto out;
    ggml_quantize_chunk(t, w, q, 0, PROBE_N, PROBE_K, NULL);
    ggml_backend_tensor_set(W, q, 0, qsize); /* an extra buffer type repacks here */
    free(q);
    ggml_backend_tensor_set(X, x, 0, sizeof(float) * PROBE_K * PROBE_M);
    struct ggml_cgraph *g = ggml_new_graph(cx);
    ggml_build_forward_expand(g, Y);
    if (ggml_backend_graph_compute(be, g) != GGML_STATUS_SUCCESS) goto out;
    ggml_backend_tensor_get(Y, y, 0, sizeof(float) * PROBE_N * PROBE_M);
    rc = 0;
out:
    if (bw) ggml_backend_buffer_free(bw);
    if (bx) ggml_backend_buffer_free(bx);
    if (cw) ggml_free(cw);
    if (cx) ggml_free(cx);
    return rc;
}

static void say(int fd, const char *fmt, ...) {
    char line[300];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = sizeof line - 1;
    ssize_t w = write(fd, line, (size_t)n);
    (void)w;
}

/* The child's work: every (extra buffer type, type) product against the plain buffer's.
 * Reports on fd, one line each: "try AMX q4_0" before it, then "ok AMX q4_0 1.2e-07",
 * "skip ..." or "differ AMX q4_0 0.93". Exit status 0: all agree, 3: one differs, 4: setup. */
static int child(int fd) {
    const char *fault = getenv("G4V_LLAMA_PROBE_FAULT"); /* tests only (docs/TESTING.md) */
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    ggml_backend_t be = dev ? ggml_backend_dev_init(dev, NULL) : NULL;
    if (!be) {
        say(fd, "setup no CPU backend\n");
        return 4;
    }
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
    ggml_backend_set_n_threads_t set_threads =
        (ggml_backend_set_n_threads_t)ggml_backend_reg_get_proc_address(
            reg, "ggml_backend_set_n_threads");
    if (set_threads) set_threads(be, 2); /* the workers' tile setup too, not only the caller's */
    ggml_backend_buffer_type_t *extra = extra_bufts(dev);
    static float w[PROBE_N * PROBE_K], x[PROBE_K * PROBE_M], y[PROBE_N * PROBE_M],
        ref[PROBE_N * PROBE_M];
    uint32_t seed = 12345;
    for (int i = 0; i < PROBE_N * PROBE_K; i++) w[i] = rnd(&seed);
    for (int i = 0; i < PROBE_K * PROBE_M; i++) x[i] = rnd(&seed);
    static const enum ggml_type types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q8_0, GGML_TYPE_Q4_K};
    int status = 0;
    for (size_t i = 0; extra && extra[i]; i++) {
        const char *name = ggml_backend_buft_name(extra[i]);
        for (size_t j = 0; j < sizeof types / sizeof types[0]; j++) {
            const char *tn = ggml_type_name(types[j]);
            if (product(be, dev, ggml_backend_dev_buffer_type(dev), types[j], w, x, ref)) {
                say(fd, "setup the plain product of %s failed\n", tn);
                return 4;
            }
            say(fd, "try %s %s\n", name, tn);
            if (fault && !strcmp(fault, "crash")) raise(SIGILL);
            if (fault && !strcmp(fault, "hang")) pause();
            int rc = product(be, dev, extra[i], types[j], w, x, y);
            if (rc == 1) {
                say(fd, "skip %s %s\n", name, tn);
                continue;
            }
            if (rc) {
                say(fd, "differ %s %s the product failed\n", name, tn);
                status = 3;
                continue;
            }
            if (fault && !strcmp(fault, "differ")) memset(y, 0, sizeof y);
            double d2 = 0, r2 = 0;
            for (int k = 0; k < PROBE_N * PROBE_M; k++) {
                double d = (double)y[k] - ref[k];
                d2 += d * d;
                r2 += (double)ref[k] * ref[k];
            }
            double rel = r2 > 0 ? sqrt(d2 / r2) : sqrt(d2);
            if (!(rel <= PROBE_MAX_REL_RMS)) { /* NaN too */
                say(fd, "differ %s %s %.3g\n", name, tn, rel);
                status = 3;
            } else {
                say(fd, "ok %s %s %.3g\n", name, tn, rel);
            }
        }
    }
    ggml_backend_free(be);
    return status;
}

/* ---- the parent: run the child, read its verdict --------------------------------------------- */

/* The child's last "try" line's subject ("AMX q4_0"), or "" */
static void last_try(const char *log, char *out, size_t n) {
    out[0] = 0;
    for (const char *p = log; (p = strstr(p, "try ")) != NULL; p += 4)
        if (p == log || p[-1] == '\n') {
            size_t len = strcspn(p + 4, "\n");
            snprintf(out, n, "%.*s", (int)len, p + 4);
        }
}

/* Runs the child; 0 when every extra buffer type agrees, else -1 with why. */
static int run_child(char *why, size_t n) {
    int fds[2];
    if (pipe(fds)) {
        snprintf(why, n, "the probe could not start (pipe: %s)", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        snprintf(why, n, "the probe could not start (fork: %s)", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        /* a crash here is the answer, not a report: no core file, no handler of the parent's */
        signal(SIGILL, SIG_DFL);
        signal(SIGSEGV, SIG_DFL);
        signal(SIGBUS, SIG_DFL);
        signal(SIGFPE, SIG_DFL);
        _exit(child(fds[1]));
    }
    close(fds[1]);
    char log[4096];
    size_t used = 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char *tv = getenv("G4V_LLAMA_PROBE_TIMEOUT_MS"); /* tests only */
    long timeout_ms = tv && atol(tv) > 0 ? atol(tv) : PROBE_TIMEOUT_MS;
    int hung = 0;
    for (;;) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        long left = timeout_ms - ((t.tv_sec - t0.tv_sec) * 1000L +
                                        (t.tv_nsec - t0.tv_nsec) / 1000000L);
        if (left <= 0) {
            hung = 1;
            break;
        }
        struct pollfd p = {fds[0], POLLIN, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            hung = r == 0;
            break;
        }
        ssize_t k = read(fds[0], log + used, sizeof log - 1 - used);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        used += (size_t)k;
        if (used == sizeof log - 1) used = 0; /* only the latest lines matter */
    }
    log[used] = 0;
    close(fds[0]);
    if (hung) kill(pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    char what[100];
    last_try(log, what, sizeof what);
    if (hung) {
        snprintf(why, n, "llama.cpp's %s product hung for %.1f s in the start-up check",
                 what[0] ? what : "repacked", timeout_ms / 1000.0);
        return -1;
    }
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        snprintf(why, n,
                 "llama.cpp's %s product died of signal %d (%s) in the start-up check: its "
                 "kernels do not run on this machine",
                 what[0] ? what : "repacked", sig, strsignal(sig));
        return -1;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        const char *d = strstr(log, "differ ");
        const char *s = strstr(log, "setup ");
        char buft[64] = "", type[32] = "", by[100] = "";
        if (d && sscanf(d + 7, "%63s %31s %99[^\n]", buft, type, by) == 3) {
            snprintf(why, n,
                     "llama.cpp's %s %s product differs from the plain CPU buffer's (%s%s) in "
                     "the start-up check",
                     buft, type, strchr("0123456789", by[0]) ? "relative RMS difference " : "",
                     by);
        } else {
            const char *line = s ? s + 6 : "it exited with an error";
            snprintf(why, n, "the start-up check could not run: %.*s",
                     (int)strcspn(line, "\n"), line);
        }
        return -1;
    }
    if (getenv("G4V_LLAMA_PROBE_LOG")) fputs(log, stderr); /* what each product gave */
    return 0;
}

/* ---- the cache of verdicts ------------------------------------------------------------------ */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t hash_file_id(uint64_t h, const char *path) {
    struct stat st;
    h = fnv1a(h, path, strlen(path) + 1);
    if (!stat(path, &st)) {
        int64_t v[3] = {(int64_t)st.st_size, (int64_t)st.st_mtime, (int64_t)st.st_ino};
        h = fnv1a(h, v, sizeof v);
    }
    return h;
}

/* What the verdict depends on: this check's version, the libllama and CPU module files, and the
 * CPU (its model name and feature flags). */
static uint64_t probe_key(const char *module_path) {
    uint64_t h = fnv1a(1469598103934665603ull, PROBE_VERSION, sizeof PROBE_VERSION);
    Dl_info info;
    union {
        void (*fn)(void);
        void *p;
    } u = {.fn = llama_backend_init};
    if (dladdr(u.p, &info) && info.dli_fname) h = hash_file_id(h, info.dli_fname);
    h = hash_file_id(h, module_path);
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[8192];
        int seen = 0;
        while (seen < 2 && fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10) || !strncmp(line, "flags", 5) ||
                !strncmp(line, "Features", 8)) {
                h = fnv1a(h, line, strlen(line));
                seen++;
            }
        fclose(f);
    }
    return h;
}

static int cache_dir(char *dir, size_t n) {
    const char *d = getenv("G4V_LLAMA_PROBE_DIR"), *x = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    int k;
    if (d && *d)
        k = snprintf(dir, n, "%s", d);
    else if (x && *x)
        k = snprintf(dir, n, "%s/g4v/llama-probe", x);
    else if (home && *home)
        k = snprintf(dir, n, "%s/.cache/g4v/llama-probe", home);
    else
        return -1;
    return k > 0 && (size_t)k < n ? 0 : -1;
}

/* mkdir -p */
static void make_dirs(const char *dir) {
    char p[1024];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

/* 1 and the verdict from the cache (ok: 1 or 0; why when 0), or 0 when there is none */
static int cache_read(const char *file, int *ok, char *why, size_t n) {
    FILE *f = fopen(file, "r");
    if (!f) return 0;
    char line[700] = "";
    int found = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!found) return 0;
    line[strcspn(line, "\n")] = 0;
    if (!strcmp(line, "ok")) {
        *ok = 1;
        return 1;
    }
    if (!strncmp(line, "failed\t", 7)) {
        *ok = 0;
        size_t len = strlen(line + 7);
        if (len >= n) len = n - 1;
        memcpy(why, line + 7, len);
        why[len] = 0;
        return 1;
    }
    return 0;
}

/* best effort: a cache that cannot be written means the check runs again next time */
static void cache_write(const char *dir, const char *file, int ok, const char *why) {
    make_dirs(dir);
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", file, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    int bad = ok ? fprintf(f, "ok\n") < 0 : fprintf(f, "failed\t%s\n", why) < 0;
    if (fclose(f) || bad || rename(tmp, file)) unlink(tmp);
}

/* ---- the verdict ---------------------------------------------------------------------------- */

static void offered_types(char *out, size_t n) {
    out[0] = 0;
    ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!dev) return;
    ggml_backend_buffer_type_t *extra = extra_bufts(dev);
    for (size_t i = 0; extra && extra[i]; i++) {
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s%s", used ? " " : "", ggml_backend_buft_name(extra[i]));
    }
}

static void decide(void) {
    chat_llama_probe *p = &g_probe;
    chat_backend_cpu cpu;
    if (chat_backend_cpu_get(&cpu, g_err, sizeof g_err)) {
        g_status = -1;
        return;
    }
    offered_types(p->types, sizeof p->types);
    const char *env = getenv("G4V_LLAMA_EXTRA_BUFFERS");
    if (env && (!strcmp(env, "0") || !strcmp(env, "1"))) {
        p->use_extra_buffers = env[0] == '1';
        p->checked = "environment";
        if (!p->use_extra_buffers)
            snprintf(p->reason, sizeof p->reason, "turned off by G4V_LLAMA_EXTRA_BUFFERS=0");
        return;
    }
    p->use_extra_buffers = 1;
    if (!p->types[0]) {
        p->checked = "none";
        return;
    }
    if (PROBE_UNDER_TSAN) {
        p->checked = "skipped (a ThreadSanitizer build)";
        return;
    }
    char dir[1024], file[1100], why[480];
    int have_dir = cache_dir(dir, sizeof dir) == 0;
    if (have_dir)
        snprintf(file, sizeof file, "%s/%016llx", dir, (unsigned long long)probe_key(cpu.path));
    int ok = 0;
    if (have_dir && !getenv("G4V_LLAMA_PROBE_FAULT") && cache_read(file, &ok, why, sizeof why)) {
        p->checked = "cache";
    } else {
        p->checked = "probe";
        ok = run_child(why, sizeof why) == 0;
        if (have_dir && !getenv("G4V_LLAMA_PROBE_FAULT")) cache_write(dir, file, ok, why);
    }
    if (!ok) {
        p->use_extra_buffers = 0;
        snprintf(p->reason, sizeof p->reason,
                 "%s; the text model runs without llama.cpp's extra buffer types (%s), slower "
                 "(G4V_LLAMA_EXTRA_BUFFERS=1 forces them; docs/CHAT.md §6)",
                 why, p->types);
    }
}

int chat_llama_probe_get(chat_llama_probe *out, char *err, size_t errsz) {
    pthread_once(&g_once, decide);
    if (g_status) {
        seterr(err, errsz, "%s", g_err);
        return -1;
    }
    *out = g_probe;
    return 0;
}

cJSON *chat_llama_probe_json(void) {
    chat_llama_probe p;
    char err[1400];
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    if (chat_llama_probe_get(&p, err, sizeof err)) {
        if (!cJSON_AddStringToObject(o, "error", err)) goto oom;
        return o;
    }
    cJSON *types = cJSON_AddArrayToObject(o, "types");
    if (!types || !cJSON_AddBoolToObject(o, "used", p.use_extra_buffers) ||
        !cJSON_AddStringToObject(o, "checked", p.checked) ||
        !(p.reason[0] ? cJSON_AddStringToObject(o, "reason", p.reason)
                      : cJSON_AddNullToObject(o, "reason")))
        goto oom;
    char *save = NULL;
    for (char *t = strtok_r(p.types, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
        cJSON *v = cJSON_CreateString(t);
        if (!v) goto oom;
        cJSON_AddItemToArray(types, v);
    }
    return o;
oom:
    cJSON_Delete(o);
    return NULL;
}
