/* soak.c - the library under load and over time (`make soak`; docs/ARCHITECTURE.md §7).
 *
 *   soak FIXTURES SECONDS [THREADS] [--no-rss-check]
 *
 * One model (FIXTURES/tiny, tests/api/make_fixtures.py) shared by THREADS threads (default 2),
 * each with its own single-threaded context, encoding for SECONDS a random mixed stream of jobs:
 * the fixture images as files and as memory buffers, raw RGB buffers, at budgets 70/140/280, with
 * EXIF on and off, f32 and bf16 output; and bad inputs (a truncated PNG, random bytes, an empty
 * buffer, a PNG header claiming 100,000 x 100,000 pixels, a missing file, an unsupported budget,
 * an RGB stride too small). Before the stream, every job runs once serially on one context: that
 * run is the reference. Checks, for every job of the stream:
 *  - a good job's output (tokens, grid, sizes, every float and bf16 bit) equals the serial run;
 *  - a bad job fails with the same status as in the serial run, a real error status (not OK,
 *    not INTERNAL) and a message, and leaves an empty result.
 * The main thread samples the resident set size (RSS, /proc/self/statm) about 30 times and prints
 * the curve; after the warm-up (the first 20% of the run, at least 5 s: every workspace has grown
 * to its largest job by then) RSS must stay flat: its peak after the warm-up may exceed the value
 * at the end of the warm-up by at most 4 MB + 2% (allocator noise), else the run fails as a leak.
 * --no-rss-check skips that check (ThreadSanitizer's shadow memory grows by design).
 * Exit status 0 when every check held.
 */
#include "g4v.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { SRC_FILE, SRC_MEMORY, SRC_RGB };

typedef struct {
    char name[96];
    int src;
    const char *path;           /* SRC_FILE */
    const unsigned char *bytes; /* SRC_MEMORY (may be NULL with size 0) */
    size_t size;
    const uint8_t *rgb; /* SRC_RGB */
    int w, h;
    size_t stride;
    g4v_encode_options eo;
    int bad; /* must fail */
    /* the serial reference */
    int status;
    g4v_result r;   /* sizes of the reference result (pointers unused) */
    float *feat;    /* n_tokens x dim */
    uint16_t *bf16; /* when eo.bf16 */
} job;

static job *jobs;
static int njobs, cap_jobs;
static atomic_int stop;
static atomic_long done_good, done_bad;

typedef struct {
    const g4v_model *model;
    unsigned seed;
    long mismatches, wrong_errors, runs;
    char first[600];
} worker_state;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double rss_mb(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return (double)res * (double)sysconf(_SC_PAGESIZE) / 1048576.0;
}

static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(sz > 0 ? (size_t)sz : 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *n = (size_t)sz;
    return b;
}

static unsigned char *image_bytes[7];

static job *add(const char *name, int src) {
    if (njobs == cap_jobs) {
        cap_jobs = cap_jobs ? 2 * cap_jobs : 64;
        jobs = realloc(jobs, (size_t)cap_jobs * sizeof *jobs);
        if (!jobs) exit(2);
    }
    job *j = &jobs[njobs++];
    memset(j, 0, sizeof *j);
    snprintf(j->name, sizeof j->name, "%s", name);
    j->src = src;
    g4v_encode_options_init(&j->eo);
    return j;
}

static int run(g4v_ctx *ctx, const job *j, g4v_result *r) {
    switch (j->src) {
    case SRC_FILE:
        return g4v_encode_file(ctx, j->path, &j->eo, r);
    case SRC_MEMORY:
        return g4v_encode_memory(ctx, j->bytes, j->size, &j->eo, r);
    default:
        return g4v_encode_rgb(ctx, j->rgb, j->w, j->h, j->stride, &j->eo, r);
    }
}

/* 1 when r equals the reference of j bit for bit. */
static int same(const job *j, const g4v_result *r) {
    const g4v_result *a = &j->r;
    if (r->n_tokens != a->n_tokens || r->dim != a->dim || r->grid_w != a->grid_w ||
        r->grid_h != a->grid_h || r->width != a->width || r->height != a->height ||
        r->src_width != a->src_width || r->src_height != a->src_height || r->budget != a->budget)
        return 0;
    size_t n = (size_t)a->n_tokens * (size_t)a->dim;
    if (memcmp(r->features, j->feat, n * sizeof(float))) return 0;
    if (j->eo.bf16 && (!r->features_bf16 || memcmp(r->features_bf16, j->bf16, n * 2))) return 0;
    return 1;
}

static void *worker(void *arg) {
    worker_state *w = arg;
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = 1;
    g4v_ctx *ctx = NULL;
    if (g4v_ctx_create(w->model, &co, &ctx, w->first, sizeof w->first)) {
        w->wrong_errors++;
        return NULL;
    }
    unsigned x = w->seed;
    while (!atomic_load(&stop)) {
        x = x * 1103515245u + 12345u;
        const job *j = &jobs[(x >> 8) % (unsigned)njobs];
        g4v_result r;
        int st = run(ctx, j, &r);
        w->runs++;
        if (j->status == G4V_OK) {
            if (st != G4V_OK || !same(j, &r)) {
                if (!w->mismatches++)
                    snprintf(w->first, sizeof w->first, "%s: status %s, %s", j->name,
                             g4v_status_name(st), st ? g4v_ctx_error(ctx) : "output differs");
            }
            atomic_fetch_add(&done_good, 1);
        } else {
            const char *msg = g4v_ctx_error(ctx);
            if (st != j->status || !msg[0] || r.features || r.n_tokens) {
                if (!w->wrong_errors++)
                    snprintf(w->first, sizeof w->first, "%s: status %s (serial: %s): %s", j->name,
                             g4v_status_name(st), g4v_status_name(j->status), msg);
            }
            atomic_fetch_add(&done_bad, 1);
        }
    }
    g4v_ctx_free(ctx);
    return NULL;
}

static void make_jobs(const char *fx) {
    static const char *images[] = {"img0.png", "img1.png", "img2.png", "img3.png",
                                   "img4.png", "img5.png", "rot6.jpg"};
    static const int budgets[] = {70, 140, 280};
    static char paths[7][1200];
    for (int i = 0; i < 7; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", fx, images[i]);
        size_t n = 0;
        unsigned char *bytes = image_bytes[i] = read_all(paths[i], &n);
        if (!bytes) {
            fprintf(stderr, "soak: cannot read %s (run tests/api/make_fixtures.py)\n", paths[i]);
            exit(2);
        }
        for (int b = 0; b < 3; b++)
            for (int exif = -1; exif <= 0; exif++)
                for (int bf16 = 0; bf16 <= 1; bf16++) {
                    char name[96];
                    int src = (b + exif + bf16) & 1 ? SRC_MEMORY : SRC_FILE;
                    snprintf(name, sizeof name, "%s %s t%d exif%d %s", images[i],
                             src == SRC_FILE ? "file" : "memory", budgets[b], exif,
                             bf16 ? "bf16" : "f32");
                    job *j = add(name, src);
                    j->path = paths[i];
                    j->bytes = bytes;
                    j->size = n;
                    j->eo.budget = budgets[b];
                    j->eo.apply_exif = exif;
                    j->eo.bf16 = bf16;
                }
        if (i == 0) { /* bad: the first 60% of a PNG */
            job *j = add("truncated png", SRC_MEMORY);
            j->bad = 1;
            j->bytes = bytes;
            j->size = n * 6 / 10;
        }
    }
    static uint8_t rgb[300 * 220 * 3 + 64];
    for (size_t k = 0; k < sizeof rgb; k++)
        rgb[k] = (uint8_t)((k * 7 + k / 661 * 3) & 255);
    for (int b = 0; b < 3; b++) {
        char name[64];
        snprintf(name, sizeof name, "rgb 300x220 t%d", budgets[b]);
        job *j = add(name, SRC_RGB);
        j->rgb = rgb;
        j->w = 300;
        j->h = 220;
        j->stride = 300 * 3 + 5; /* a padded stride */
        j->eo.budget = budgets[b];
    }
    static unsigned char noise[512];
    for (size_t k = 0; k < sizeof noise; k++)
        noise[k] = (unsigned char)((k * 2654435761u) >> 13);
    job *j = add("random bytes", SRC_MEMORY);
    j->bad = 1;
    j->bytes = noise;
    j->size = sizeof noise;
    j = add("empty buffer", SRC_MEMORY);
    j->bad = 1;
    j->bytes = noise;
    j->size = 0;
    /* A PNG whose IHDR claims 100,000 x 100,000 (CRC left wrong: the size check comes first or
     * the CRC check refuses it; either way an error, the same every time). */
    static unsigned char huge[] = {0x89, 'P',  'N', 'G', '\r', '\n', 0x1a, '\n', 0,    0, 0,
                                   13,   'I',  'H', 'D', 'R',  0,    1,    0x86, 0xa0, 0, 1,
                                   0x86, 0xa0, 8,   2,   0,    0,    0,    0,    0,    0, 0};
    j = add("png claiming 100000x100000", SRC_MEMORY);
    j->bad = 1;
    j->bytes = huge;
    j->size = sizeof huge;
    j = add("missing file", SRC_FILE);
    j->bad = 1;
    j->path = "/nonexistent/soak/image.png";
    j = add("budget 100", SRC_FILE);
    j->bad = 1;
    j->path = paths[1];
    j->eo.budget = 100;
    j = add("rgb stride too small", SRC_RGB);
    j->bad = 1;
    j->rgb = rgb;
    j->w = 300;
    j->h = 220;
    j->stride = 300 * 3 - 1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: soak FIXTURES SECONDS [THREADS] [--no-rss-check]\n");
        return 2;
    }
    const char *fx = argv[1];
    double seconds = atof(argv[2]);
    int nthreads = argc > 3 && argv[3][0] != '-' ? atoi(argv[3]) : 2;
    int rss_check = !(argc > 3 && !strcmp(argv[argc - 1], "--no-rss-check"));
    if (nthreads < 1 || nthreads > 64 || seconds <= 0) return 2;
    char dir[1200], msg[512] = "";
    snprintf(dir, sizeof dir, "%s/tiny", fx);
    g4v_model *model = NULL;
    if (g4v_model_load(dir, NULL, &model, msg, sizeof msg)) {
        fprintf(stderr, "soak: %s: %s\n", dir, msg);
        return 2;
    }
    make_jobs(fx);

    /* The serial reference. */
    g4v_ctx *ctx = NULL;
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = 1;
    if (g4v_ctx_create(model, &co, &ctx, msg, sizeof msg)) return 2;
    int ngood = 0, failures = 0;
    for (int i = 0; i < njobs; i++) {
        job *j = &jobs[i];
        g4v_result r;
        j->status = run(ctx, j, &r);
        if (j->bad != (j->status != G4V_OK) ||
            (j->status && (j->status >= G4V_ERR_INTERNAL || !g4v_ctx_error(ctx)[0]))) {
            fprintf(stderr, "soak: serial run: %s: %s (%s)\n", j->name, g4v_status_name(j->status),
                    g4v_ctx_error(ctx));
            failures++;
            continue;
        }
        if (j->status) continue;
        ngood++;
        j->r = r;
        size_t n = (size_t)r.n_tokens * (size_t)r.dim;
        j->feat = malloc(n * sizeof(float));
        j->bf16 = j->eo.bf16 ? malloc(n * 2) : NULL;
        if (!j->feat || (j->eo.bf16 && !j->bf16)) return 2;
        memcpy(j->feat, r.features, n * sizeof(float));
        if (j->bf16) memcpy(j->bf16, r.features_bf16, n * 2);
    }
    g4v_ctx_free(ctx);
    printf("soak: %d jobs (%d good, %d bad), %d threads x 1 context each, %.0f s\n", njobs, ngood,
           njobs - ngood, nthreads, seconds);

    worker_state ws[64];
    pthread_t tid[64];
    memset(ws, 0, sizeof ws);
    double t0 = now_s();
    for (int t = 0; t < nthreads; t++) {
        ws[t].model = model;
        ws[t].seed = 1234u + 977u * (unsigned)t;
        if (pthread_create(&tid[t], NULL, worker, &ws[t])) return 2;
    }
    enum { MAXS = 64 };
    double ts[MAXS], rs[MAXS];
    int ns = 0;
    double every = seconds / 30 > 1 ? seconds / 30 : 1;
    printf("soak: %8s %9s %12s %10s\n", "t (s)", "RSS (MB)", "good encodes", "bad inputs");
    for (;;) {
        double t = now_s() - t0;
        if (ns < MAXS) {
            ts[ns] = t;
            rs[ns] = rss_mb();
            printf("soak: %8.1f %9.1f %12ld %10ld\n", t, rs[ns], atomic_load(&done_good),
                   atomic_load(&done_bad));
            fflush(stdout);
            ns++;
        }
        if (t >= seconds) break;
        double next = (double)ns * every;
        if (next > seconds) next = seconds;
        double wait = next - (now_s() - t0);
        if (wait > 0) usleep((useconds_t)(wait * 1e6));
    }
    atomic_store(&stop, 1);
    long runs = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(tid[t], NULL);
        runs += ws[t].runs;
        if (ws[t].mismatches || ws[t].wrong_errors) {
            fprintf(stderr,
                    "soak: thread %d: %ld outputs differ from the serial run, %ld wrong "
                    "errors; first: %s\n",
                    t, ws[t].mismatches, ws[t].wrong_errors, ws[t].first);
            failures++;
        }
    }
    /* RSS: the value at the end of the warm-up against the peak after it. */
    double warm = seconds * 0.2 > 5 ? seconds * 0.2 : 5;
    int k0 = 0;
    while (k0 + 1 < ns && ts[k0 + 1] <= warm)
        k0++;
    double base = rs[k0], peak = base;
    for (int k = k0; k < ns; k++)
        if (rs[k] > peak) peak = rs[k];
    double allowed = 4 + 0.02 * base;
    printf("soak: %ld jobs in %.0f s (%.0f/s); RSS after warm-up (%.0f s) %.1f MB, peak after "
           "%.1f MB (+%.1f, allowed +%.1f)%s\n",
           runs, now_s() - t0, (double)runs / (now_s() - t0), ts[k0], base, peak, peak - base,
           allowed, rss_check ? "" : " [not checked]");
    if (rss_check && peak - base > allowed) {
        fprintf(stderr, "soak: RSS grew by %.1f MB after the warm-up: a leak?\n", peak - base);
        failures++;
    }
    for (int i = 0; i < njobs; i++) {
        free(jobs[i].feat);
        free(jobs[i].bf16);
    }
    free(jobs);
    for (int i = 0; i < 7; i++)
        free(image_bytes[i]);
    g4v_model_free(model);
    printf("soak: %s\n", failures ? "FAILED"
                                  : "passed: every good output bit-identical to the "
                                    "serial run, every bad input a clean error");
    return failures ? 1 : 0;
}
