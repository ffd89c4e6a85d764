/* test_weights_file.c - what libg4v promises when a checkpoint file changes (docs/LIMITS.md,
 * "Checkpoint files that change"):
 *  - a file shorter than its header says is refused at load (G4V_ERR_MODEL), in both modes;
 *  - read_weights = 1: nothing refers to the files after g4v_model_load; truncating the file
 *    afterwards changes no output bit and no fingerprint (computed after the truncation);
 *  - the default (mapped) mode: replacing the file by rename is safe (the old inode stays
 *    mapped: same outputs, same fingerprint); truncating it in place is the documented hazard,
 *    SIGBUS on the next read of a dropped page (checked in a child process, so the doc stays
 *    true: if this ever stops crashing, LIMITS.md must be updated).
 *
 *   test_weights_file FIXTURES      (tests/api/make_fixtures.py output: FIXTURES/tiny, img1.png)
 */
#include "g4v.h"
#include "test_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char fixtures[1024], work[64], image[1100];

/* dir := a copy of FIXTURES/tiny (config.json, model.safetensors). */
static int copy_tiny(const char *dir) {
    char cmd[3000];
    snprintf(cmd, sizeof cmd,
             "rm -rf '%s' && mkdir -p '%s' && cp '%s/tiny/config.json' "
             "'%s/tiny/model.safetensors' '%s/'",
             dir, dir, fixtures, fixtures, dir);
    return system(cmd);
}

static int load(const char *dir, int read_weights, g4v_model **m, char *msg, size_t cap) {
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    mo.read_weights = read_weights;
    return g4v_model_load(dir, &mo, m, msg, cap);
}

/* Encodes the image on a fresh 1-thread ctx into out (n floats at most); returns the count. */
static size_t encode(const g4v_model *m, float *out, size_t cap) {
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = 1;
    g4v_ctx *ctx = NULL;
    g4v_result r;
    size_t n = 0;
    if (!g4v_ctx_create(m, &co, &ctx, NULL, 0) && !g4v_encode_file(ctx, image, NULL, &r)) {
        n = (size_t)r.n_tokens * (size_t)r.dim;
        if (n > cap || g4v_result_copy(&r, out, cap, NULL, 0)) n = 0;
    }
    g4v_ctx_free(ctx);
    return n;
}

enum { CAP = 1 << 16 };
static float ref[CAP], got[CAP];
static size_t nref;
static char ref_fp[G4V_FINGERPRINT_HEX];

static void check_truncated_before_load(void) {
    char dir[200], path[300], msg[512];
    snprintf(dir, sizeof dir, "%s/short", work);
    REQUIRE(copy_tiny(dir) == 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    FILE *f = fopen(path, "rb");
    REQUIRE(f != NULL);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    REQUIRE(truncate(path, size / 2) == 0); /* cuts vision tensors (the end may be text ones) */
    for (int rw = 0; rw <= 1; rw++) {
        g4v_model *m = NULL;
        int st = load(dir, rw, &m, msg, sizeof msg);
        CHECK_MSG(st == G4V_ERR_MODEL && !m, "read_weights=%d: status %d: %s", rw, st, msg);
        CHECK_CONTAINS(msg, "lie outside the data section");
        g4v_model_free(m);
    }
}

static void check_read_weights_then_truncate(void) {
    char dir[200], path[300], msg[512] = "", fp[G4V_FINGERPRINT_HEX];
    snprintf(dir, sizeof dir, "%s/read", work);
    REQUIRE(copy_tiny(dir) == 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    g4v_model *m = NULL;
    REQUIRE(load(dir, 1, &m, msg, sizeof msg) == G4V_OK);
    REQUIRE(truncate(path, 0) == 0); /* and unlink: nothing may still need it */
    REQUIRE(unlink(path) == 0);
    CHECK(g4v_model_fingerprint(m, fp, sizeof fp, NULL, 0) == G4V_OK);
    CHECK_MSG(!strcmp(fp, ref_fp), "fingerprint %s, mapped intact %s", fp, ref_fp);
    size_t n = encode(m, got, CAP);
    CHECK_MSG(n == nref && !memcmp(got, ref, n * sizeof *got),
              "read_weights: output after truncation differs (%zu vs %zu floats)", n, nref);
    g4v_model_free(m);
}

static void check_rename_replace(void) {
    char dir[200], path[300], other[300], msg[512] = "", fp[G4V_FINGERPRINT_HEX];
    snprintf(dir, sizeof dir, "%s/renamed", work);
    REQUIRE(copy_tiny(dir) == 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    snprintf(other, sizeof other, "%s/new.safetensors", dir);
    g4v_model *m = NULL;
    REQUIRE(load(dir, 0, &m, msg, sizeof msg) == G4V_OK);
    FILE *f = fopen(other, "wb"); /* the "new version": junk of another size */
    REQUIRE(f != NULL);
    fputs("not the old weights", f);
    fclose(f);
    REQUIRE(rename(other, path) == 0);
    CHECK(g4v_model_fingerprint(m, fp, sizeof fp, NULL, 0) == G4V_OK);
    CHECK_MSG(!strcmp(fp, ref_fp), "fingerprint %s after rename, before %s", fp, ref_fp);
    size_t n = encode(m, got, CAP);
    CHECK_MSG(n == nref && !memcmp(got, ref, n * sizeof *got),
              "mapped: output after a rename-replace differs");
    g4v_model_free(m);
}

static void check_mapped_truncate_is_sigbus(void) {
    char dir[200], path[300];
    snprintf(dir, sizeof dir, "%s/mapped", work);
    REQUIRE(copy_tiny(dir) == 0);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    fflush(NULL);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        g4v_model *m = NULL;
        char fp[G4V_FINGERPRINT_HEX];
        if (load(dir, 0, &m, NULL, 0)) _exit(3);
        if (truncate(path, 0)) _exit(4);
        g4v_model_fingerprint(m, fp, sizeof fp, NULL, 0); /* reads every tensor again */
        _exit(0);
    }
    int ws = 0;
    REQUIRE(waitpid(pid, &ws, 0) == pid);
    /* SIGBUS, or under ASan (which catches SIGBUS and reports it) a failing exit. */
    int bus =
        (WIFSIGNALED(ws) && WTERMSIG(ws) == SIGBUS) ||
        (WIFEXITED(ws) && WEXITSTATUS(ws) != 0 && WEXITSTATUS(ws) != 3 && WEXITSTATUS(ws) != 4);
    CHECK_MSG(bus,
              "mapped mode, file truncated after load: child status %#x, expected SIGBUS "
              "(if this no longer crashes, update docs/LIMITS.md)",
              ws);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_weights_file FIXTURES\n");
        return 2;
    }
    snprintf(fixtures, sizeof fixtures, "%s", argv[1]);
    snprintf(image, sizeof image, "%s/img1.png", fixtures);
    snprintf(work, sizeof work, "/tmp/g4v_weights_file_XXXXXX");
    if (!mkdtemp(work)) return 2;
    { /* the reference: mapped mode on the intact fixture */
        char dir[1100], msg[512] = "";
        snprintf(dir, sizeof dir, "%s/tiny", fixtures);
        g4v_model *m = NULL;
        if (load(dir, 0, &m, msg, sizeof msg) || g4v_model_fingerprint(m, ref_fp, sizeof ref_fp, NULL, 0) ||
            !(nref = encode(m, ref, CAP))) {
            fprintf(stderr, "reference encode failed: %s\n", msg);
            return 1;
        }
        g4v_model_free(m);
    }
    check_truncated_before_load();
    check_read_weights_then_truncate();
    check_rename_replace();
    check_mapped_truncate_is_sigbus();
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    if (system(cmd)) fprintf(stderr, "could not remove %s\n", work);
    return test_summary("test_weights_file");
}
