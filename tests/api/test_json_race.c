/* test_json_race.c - concurrent JSON parsing is race-free: threads that load a checkpoint whose
 * config.json is malformed (cJSON fails and records the error in its process-wide variable) run
 * at the same time as threads whose encodes are cache hits (each hit parses the entry's JSON
 * header). Every parse in libg4v takes one lock (src/io/json_file.c); without it ThreadSanitizer
 * reports a data race here (`make tsan`). In a plain build it checks the statuses and messages.
 *
 *   test_json_race FIXTURES ROUNDS      (tests/api/make_fixtures.py output)
 */
#include "g4v.h"
#include "test_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int rounds;
static pthread_barrier_t start; /* both kinds of thread parse at the same time */
static char bad_dir[512], cache_dir[512], image[1024];

typedef struct {
    const g4v_model *model;
    g4v_cache *cache;
    int failures; /* written by this thread only; read after join */
    char first[512];
} job;

static void note(job *j, const char *what) {
    if (!j->failures++) snprintf(j->first, sizeof j->first, "%s", what);
}

static void *failing_loads(void *arg) {
    job *j = arg;
    pthread_barrier_wait(&start);
    for (int r = 0; r < rounds; r++) {
        g4v_model *m = NULL;
        char msg[512] = "";
        int st = g4v_model_load(bad_dir, NULL, &m, msg, sizeof msg);
        if (st != G4V_ERR_MODEL || m || !strstr(msg, "malformed JSON")) note(j, msg);
        g4v_model_free(m);
    }
    return NULL;
}

static void *cache_reads(void *arg) {
    job *j = arg;
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = 1;
    g4v_ctx *ctx = NULL;
    if (g4v_ctx_create(j->model, &co, &ctx, j->first, sizeof j->first) ||
        g4v_ctx_set_cache(ctx, j->cache)) {
        j->failures++;
        g4v_ctx_free(ctx);
        pthread_barrier_wait(&start);
        return NULL;
    }
    pthread_barrier_wait(&start);
    for (int r = 0; r < rounds; r++) {
        g4v_result res;
        if (g4v_encode_file(ctx, image, NULL, &res))
            note(j, g4v_ctx_error(ctx));
        else if (!g4v_ctx_cache_hit(ctx))
            note(j, "an encode of the stored image missed the cache");
    }
    g4v_ctx_free(ctx);
    return NULL;
}

static void run(const char *fixtures, char *tmpl) {
    snprintf(bad_dir, sizeof bad_dir, "%s/bad", tmpl);
    snprintf(cache_dir, sizeof cache_dir, "%s/cache", tmpl);
    snprintf(image, sizeof image, "%s/img1.png", fixtures);
    REQUIRE(mkdir(bad_dir, 0755) == 0);
    char path[600];
    snprintf(path, sizeof path, "%s/config.json", bad_dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("{\"vision_config\": {\"hidden_size\": 64,, }", f);
    fclose(f);

    char model_dir[1024], msg[512] = "";
    snprintf(model_dir, sizeof model_dir, "%s/tiny", fixtures);
    g4v_model *model = NULL;
    g4v_cache *cache = NULL;
    REQUIRE(g4v_model_load(model_dir, NULL, &model, msg, sizeof msg) == G4V_OK);
    REQUIRE(g4v_cache_open(cache_dir, NULL, &cache, msg, sizeof msg) == G4V_OK);
    { /* store the entry the readers will hit */
        g4v_ctx *ctx = NULL;
        g4v_result res;
        REQUIRE(g4v_ctx_create(model, NULL, &ctx, msg, sizeof msg) == G4V_OK);
        REQUIRE(g4v_ctx_set_cache(ctx, cache) == G4V_OK);
        REQUIRE(g4v_encode_file(ctx, image, NULL, &res) == G4V_OK);
        g4v_ctx_free(ctx);
    }

    enum { NT = 4 };
    job jobs[NT];
    pthread_t th[NT];
    memset(jobs, 0, sizeof jobs);
    pthread_barrier_init(&start, NULL, NT);
    for (int i = 0; i < NT; i++) {
        jobs[i].model = model;
        jobs[i].cache = cache;
        REQUIRE(pthread_create(&th[i], NULL, i % 2 ? cache_reads : failing_loads, &jobs[i]) == 0);
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(th[i], NULL);
        CHECK_MSG(jobs[i].failures == 0, "%s thread %d: %d failures, first: %s",
                  i % 2 ? "cache" : "load", i, jobs[i].failures, jobs[i].first);
    }
    pthread_barrier_destroy(&start);
    g4v_cache_stats cs;
    g4v_cache_get_stats(cache, &cs, NULL, 0);
    CHECK_MSG(cs.hits == (uint64_t)(NT / 2 * rounds), "%llu hits", (unsigned long long)cs.hits);
    g4v_cache_close(cache);
    g4v_model_free(model);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_json_race FIXTURES ROUNDS\n");
        return 2;
    }
    rounds = atoi(argv[2]);
    char tmpl[] = "/tmp/g4v_json_race_XXXXXX";
    if (!mkdtemp(tmpl)) return 2;
    run(argv[1], tmpl);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpl);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", tmpl);
    return test_summary("test_json_race");
}
