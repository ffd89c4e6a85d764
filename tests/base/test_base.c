/* test_base.c - error formatting, overflow-checked allocation, CPU feature masking. */
#include "base/alloc.h"
#include "base/cpu.h"
#include "base/error.h"
#include "base/pool.h"
#include "test_util.h"

#include <stdint.h>
#include <stdlib.h>

static void test_errors(void) {
    g4v_err e;
    g4v_err_clear(&e);
    CHECK(e.status == G4V_OK && e.msg[0] == '\0');
    int s = g4v_fail(&e, G4V_ERR_MODEL, "tensor %s: expected [%d], found [%d]", "x", 3, 4);
    CHECK(s == G4V_ERR_MODEL && e.status == G4V_ERR_MODEL);
    CHECK_CONTAINS(e.msg, "tensor x: expected [3], found [4]");
    g4v_err_prefix(&e, "loading %s", "dir");
    CHECK_CONTAINS(e.msg, "loading dir: tensor x");
    CHECK(g4v_fail(NULL, G4V_ERR_IO, "ignored") == G4V_ERR_IO);
    CHECK(!strcmp(g4v_status_name(G4V_ERR_LIMIT), "G4V_ERR_LIMIT"));
    CHECK(!strcmp(g4v_status_name(12345), "G4V_ERR_UNKNOWN"));
}

static void test_alloc(void) {
    CHECK(g4v_malloc_array(SIZE_MAX / 2, 3) == NULL);
    CHECK(g4v_calloc(SIZE_MAX / 2, 3) == NULL);
    void *p = g4v_malloc_large(3u << 20);
    CHECK(p != NULL && ((uintptr_t)p & 63) == 0);
    g4v_free_large(p);
}

static void test_cpu(void) {
    setenv("G4V_ISA", "portable", 1);
    CHECK(g4v_cpu_features() == 0);
    CHECK(!strcmp(g4v_cpu_isa_name(), "portable"));
    setenv("G4V_ISA", "avx2", 1);
    CHECK((g4v_cpu_features() & ~(unsigned)G4V_CPU_AVX2) == 0);
    unsetenv("G4V_ISA");
    printf("cpu: %s\n", g4v_cpu_isa_name());
}

typedef struct {
    int out[1000];
} pool_job;

static void square_task(void *arg, int task, int worker) {
    (void)worker;
    ((pool_job *)arg)->out[task] = task * task;
}

static void test_pool(void) {
    for (int threads = 1; threads <= 4; threads++) {
        g4v_pool *pool = NULL;
        REQUIRE(g4v_pool_create(threads, &pool, NULL) == G4V_OK);
        CHECK(g4v_pool_size(pool) == threads);
        for (int rep = 0; rep < 50; rep++) {
            pool_job job;
            memset(&job, 0xff, sizeof job);
            int n = 1 + rep * 19 % 1000;
            g4v_pool_run(pool, n, square_task, &job);
            int ok = 1;
            for (int i = 0; i < n; i++) ok &= job.out[i] == i * i;
            CHECK_MSG(ok, "threads=%d n=%d", threads, n);
        }
        g4v_pool_destroy(pool);
    }
    pool_job job;
    g4v_pool_run(NULL, 10, square_task, &job);
    CHECK(job.out[9] == 81);
}

int main(void) {
    test_pool();
    test_errors();
    test_alloc();
    test_cpu();
    return test_summary("test_base");
}
