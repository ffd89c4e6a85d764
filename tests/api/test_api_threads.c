/* test_api_threads.c - thread safety of the public API: one g4v_model shared by N threads, each
 * with its own g4v_ctx (and its own 2-thread pool), encoding different images concurrently in
 * different orders. Every result must equal the single-threaded one bit for bit. Built and run
 * under ThreadSanitizer by `make tsan`.
 *
 *   test_api_threads FIXTURES NTHREADS [quick]    the test (tests/api/make_fixtures.py output);
 *                                                 quick: 3 images, 1 round (for ThreadSanitizer)
 *   test_api_threads --bench MODEL IMAGE REPS     throughput: 1 ctx vs 2 ctx sharing the model
 *                                                 (each ctx single-threaded), images per second
 */
#include "g4v.h"
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NIMG 7
static int nimg = NIMG, rounds = 2;
static const char *names[NIMG] = {"img0.png", "img1.png", "img2.png", "img3.png",
                                  "img4.png", "img5.png", "rot6.jpg"};

typedef struct {
    float *feat;
    int n, dim;
} ref_result;

typedef struct {
    const g4v_model *model;
    char paths[NIMG][1024];
    const ref_result *ref;
    int index, pool_threads;
    int mismatches, errors; /* written by this thread only; read after join */
    char first_error[512];
    /* bench */
    const char *bench_path;
    int reps;
} job;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *worker(void *arg) {
    job *j = arg;
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = j->pool_threads;
    g4v_ctx *ctx = NULL;
    if (g4v_ctx_create(j->model, &co, &ctx, j->first_error, sizeof j->first_error)) {
        j->errors++;
        return NULL;
    }
    /* Each thread starts at a different image, so different images run at the same time. */
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < nimg; k++) {
            int i = (k + j->index + r) % nimg;
            g4v_result res;
            if (g4v_encode_file(ctx, j->paths[i], NULL, &res)) {
                if (!j->errors++) snprintf(j->first_error, sizeof j->first_error, "%s", g4v_ctx_error(ctx));
                continue;
            }
            const ref_result *ref = &j->ref[i];
            if (res.n_tokens != ref->n || res.dim != ref->dim ||
                memcmp(res.features, ref->feat, (size_t)ref->n * ref->dim * sizeof(float)))
                j->mismatches++;
        }
    }
    g4v_ctx_free(ctx);
    return NULL;
}

static void run_test(const char *dir, int nthreads) {
    char msg[512];
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny", dir);
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.budget = 70; /* ~600 patches per image: keeps the test (and TSan) fast */
    g4v_model *model = NULL;
    int st = g4v_model_load(path, &mo, &model, msg, sizeof msg);
    CHECK_MSG(st == G4V_OK, "load %s: %s", path, msg);
    if (st) return;

    /* The reference: one ctx, one thread, images in order. */
    ref_result ref[NIMG];
    memset(ref, 0, sizeof ref);
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = 1;
    g4v_ctx *ctx = NULL;
    REQUIRE(g4v_ctx_create(model, &co, &ctx, msg, sizeof msg) == G4V_OK);
    for (int i = 0; i < nimg; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        g4v_result r;
        st = g4v_encode_file(ctx, path, NULL, &r);
        CHECK_MSG(st == G4V_OK, "%s: %s", path, g4v_ctx_error(ctx));
        if (st) continue;
        ref[i].n = r.n_tokens;
        ref[i].dim = r.dim;
        ref[i].feat = malloc((size_t)r.n_tokens * r.dim * sizeof(float));
        REQUIRE(ref[i].feat);
        CHECK(g4v_result_copy(&r, ref[i].feat, (size_t)r.n_tokens * r.dim, NULL, 0) == G4V_OK);
    }
    g4v_ctx_free(ctx);

    pthread_t tid[64];
    job jobs[64];
    if (nthreads > 64) nthreads = 64;
    for (int t = 0; t < nthreads; t++) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].model = model;
        jobs[t].ref = ref;
        jobs[t].index = t;
        jobs[t].pool_threads = 2;
        for (int i = 0; i < NIMG; i++)
            snprintf(jobs[t].paths[i], sizeof jobs[t].paths[i], "%s/%s", dir, names[i]);
        REQUIRE(pthread_create(&tid[t], NULL, worker, &jobs[t]) == 0);
    }
    for (int t = 0; t < nthreads; t++) {
        pthread_join(tid[t], NULL);
        CHECK_MSG(jobs[t].errors == 0, "thread %d: %d errors, first: %s", t, jobs[t].errors,
                  jobs[t].first_error);
        CHECK_MSG(jobs[t].mismatches == 0, "thread %d: %d results differ from the 1-thread run", t,
                  jobs[t].mismatches);
    }
    printf("%d threads x %d encodes each: all bit-identical to the single-threaded run\n", nthreads,
           nimg * rounds);
    for (int i = 0; i < NIMG; i++) free(ref[i].feat);
    g4v_model_free(model);
}

static void *bench_worker(void *arg) {
    job *j = arg;
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = j->pool_threads;
    g4v_ctx *ctx = NULL;
    if (g4v_ctx_create(j->model, &co, &ctx, j->first_error, sizeof j->first_error)) {
        j->errors++;
        return NULL;
    }
    for (int r = 0; r < j->reps; r++) {
        g4v_result res;
        if (g4v_encode_file(ctx, j->bench_path, NULL, &res)) j->errors++;
    }
    g4v_ctx_free(ctx);
    return NULL;
}

/* reps images on each of nctx contexts at once; returns images per second. */
static double bench_once(const g4v_model *m, const char *img, int nctx, int reps) {
    pthread_t tid[8];
    job jobs[8];
    double t0 = now_s();
    for (int t = 0; t < nctx; t++) {
        memset(&jobs[t], 0, sizeof jobs[t]);
        jobs[t].model = m;
        jobs[t].bench_path = img;
        jobs[t].reps = reps;
        jobs[t].pool_threads = 1;
        pthread_create(&tid[t], NULL, bench_worker, &jobs[t]);
    }
    int errors = 0;
    for (int t = 0; t < nctx; t++) {
        pthread_join(tid[t], NULL);
        errors += jobs[t].errors;
    }
    double dt = now_s() - t0;
    if (errors) fprintf(stderr, "bench: %d errors (%s)\n", errors, jobs[0].first_error);
    return nctx * reps / dt;
}

static int bench(const char *model_dir, const char *img, int reps) {
    char msg[512];
    g4v_model *m = NULL;
    if (g4v_model_load(model_dir, NULL, &m, msg, sizeof msg)) {
        fprintf(stderr, "%s\n", msg);
        return 1;
    }
    bench_once(m, img, 1, 1); /* warm-up: page in the weights */
    double one = bench_once(m, img, 1, reps), two = bench_once(m, img, 2, reps);
    printf("1 ctx x 1 thread: %.2f images/s; 2 ctx x 1 thread (shared model): %.2f images/s "
           "(x%.2f)\n", one, two, two / one);
    g4v_model_free(m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 5 && !strcmp(argv[1], "--bench")) return bench(argv[2], argv[3], atoi(argv[4]));
    if (argc != 3 && !(argc == 4 && !strcmp(argv[3], "quick"))) {
        fprintf(stderr, "usage: test_api_threads FIXTURES NTHREADS [quick] | --bench MODEL IMAGE REPS\n");
        return 2;
    }
    if (argc == 4) {
        nimg = 3; /* img0, img1, img2: three sizes */
        rounds = 1;
    }
    run_test(argv[1], atoi(argv[2]));
    return test_summary("test_api_threads");
}
