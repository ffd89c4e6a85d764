/* bench_load.c - what a process pays to start: model load time, peak RSS against the mapped
 * weights, a one-shot `g4v encode` against a warm encode, and what two processes on one
 * checkpoint share (PSS). The measurements of issue 37's "weights used in place" targets.
 *
 * usage: bench_load MODEL_DIR G4V_CLI [--threads T] [--reps R] [--budget B]
 *
 * All in one run, on a 768 x 768 image (256 soft tokens at budget 280), warm page cache:
 *  - load: g4v_model_load + g4v_model_free, median of R (after one unmeasured load);
 *  - warm encode: median of R encodes in one process (after a warm-up);
 *  - peak RSS of a child that loads and encodes once (getrusage), against the checkpoint's
 *    vision weight bytes (what the model maps and touches);
 *  - one-shot: `G4V_CLI encode --model DIR image.npy -o out.npy`, median wall of R processes;
 *  - PSS: two children that each load and encode, then hold; their Rss and Pss from
 *    /proc/PID/smaps_rollup (pages shared by both count half in each Pss).
 * Each target is printed with the measured value and "ok" or "MISSED". Not a test (times depend
 * on the machine): `make bench-load` runs it.
 */
#include "bench_util.h"

#include "g4v.h"
#include "io/model_source.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

enum { SIDE = 768, MAX_REPS = 64 };

static const char *dir, *cli;
static int threads = 2, reps = 5, budget = 280;

static uint8_t *image(void) {
    uint8_t *rgb = malloc((size_t)SIDE * SIDE * 3);
    unsigned s = 12345;
    for (size_t i = 0; rgb && i < (size_t)SIDE * SIDE * 3; i++)
        rgb[i] = (uint8_t)((s = s * 1103515245u + 12345u) >> 24);
    return rgb;
}

static g4v_model *load(void) {
    char msg[512];
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    g4v_model *m = NULL;
    if (g4v_model_load(dir, &mo, &m, msg, sizeof msg)) {
        fprintf(stderr, "bench_load: %s\n", msg);
        exit(1);
    }
    return m;
}

/* One encode of the test image on ctx; exits on error. */
static void encode(g4v_ctx *ctx, const uint8_t *rgb) {
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.budget = budget;
    g4v_result r;
    if (g4v_encode_rgb(ctx, rgb, SIDE, SIDE, (size_t)SIDE * 3, &eo, &r)) {
        fprintf(stderr, "bench_load: %s\n", g4v_ctx_error(ctx));
        exit(1);
    }
}

static g4v_ctx *context(const g4v_model *m) {
    char msg[512];
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = threads;
    g4v_ctx *ctx = NULL;
    if (g4v_ctx_create(m, &co, &ctx, msg, sizeof msg)) {
        fprintf(stderr, "bench_load: %s\n", msg);
        exit(1);
    }
    return ctx;
}

/* "Rss:" or "Pss:" of /proc/PID/smaps_rollup in KiB, -1 if unreadable. */
static long rollup_kib(pid_t pid, const char *key) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, strlen(key))) v = strtol(line + strlen(key), NULL, 10);
    if (f) fclose(f);
    return v;
}

/* A child that loads, encodes once and then writes its peak RSS (KiB) to `out`, then waits for
 * a byte on `hold` (or, hold < 0, exits). */
static pid_t spawn_child(int out, int hold) {
    pid_t pid = fork();
    if (pid) return pid;
    uint8_t *rgb = image();
    g4v_model *m = load();
    g4v_ctx *ctx = context(m);
    encode(ctx, rgb);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    long kib = ru.ru_maxrss;
    if (write(out, &kib, sizeof kib) != sizeof kib) _exit(1);
    char c;
    if (hold >= 0 && read(hold, &c, 1) < 0) _exit(1);
    g4v_ctx_free(ctx);
    g4v_model_free(m);
    free(rgb);
    _exit(0);
}

static int write_npy(const char *path) {
    uint8_t *rgb = image();
    FILE *f = fopen(path, "wb");
    if (!f || !rgb) return -1;
    char hdr[128];
    int n = snprintf(hdr, sizeof hdr,
                     "{'descr': '|u1', 'fortran_order': False, 'shape': (%d, %d, 3), }", SIDE,
                     SIDE);
    int total = 10 + n + 1, pad = (64 - total % 64) % 64;
    unsigned short len = (unsigned short)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&len, 2, 1, f);
    fwrite(hdr, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    fwrite(rgb, 1, (size_t)SIDE * SIDE * 3, f);
    free(rgb);
    return fclose(f);
}

static void verdict(const char *what, double value, double limit, const char *unit) {
    printf("  %-52s %9.3f %-3s (target <= %.3f %s) %s\n", what, value, unit, limit, unit,
           value <= limit ? "ok" : "MISSED");
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr,
                "usage: bench_load MODEL_DIR G4V_CLI [--threads T] [--reps R] [--budget B]\n");
        return 2;
    }
    dir = argv[1];
    cli = argv[2];
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        if (!strcmp(argv[i], "--budget")) budget = atoi(argv[i + 1]);
    }
    if (threads < 1 || reps < 1 || reps > MAX_REPS) return 2;
    /* the vision weights the model maps */
    g4v_err err;
    g4v_checkpoint *ck = NULL;
    if (g4v_checkpoint_open(dir, NULL, &ck, &err)) {
        fprintf(stderr, "bench_load: %s\n", err.msg);
        return 1;
    }
    double weights_mb = ck->weight_bytes / 1048576.0;
    g4v_checkpoint_close(ck);

    /* load time, warm */
    double tl[MAX_REPS], te[MAX_REPS], to[MAX_REPS];
    g4v_model_free(load());
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now();
        g4v_model *m = load();
        tl[i] = bench_now() - t0;
        g4v_model_free(m);
    }
    /* warm encode; the kernel path says which GEMM kernels the model uses */
    uint8_t *rgb = image();
    g4v_model *m = load();
    g4v_ctx *ctx = context(m);
    encode(ctx, rgb);
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now();
        encode(ctx, rgb);
        te[i] = bench_now() - t0;
    }
    g4v_model_info info;
    g4v_model_get_info(m, &info, NULL, 0);
    g4v_ctx_free(ctx);
    g4v_model_free(m);
    free(rgb);

    /* peak RSS of one load + encode */
    int p[2];
    if (pipe(p)) return 1;
    pid_t c = spawn_child(p[1], -1);
    long peak_kib = 0;
    if (read(p[0], &peak_kib, sizeof peak_kib) != sizeof peak_kib) return 1;
    waitpid(c, NULL, 0);

    /* one-shot processes */
    char npy[] = "/tmp/bench_load_XXXXXX";
    int fd = mkstemp(npy);
    if (fd < 0) return 1;
    close(fd);
    char img[64], out[80], cmd[2048];
    snprintf(img, sizeof img, "%s.npy", npy);
    snprintf(out, sizeof out, "%s-out.npy", npy);
    if (write_npy(img)) return 1;
    snprintf(cmd, sizeof cmd,
             "'%s' encode --model '%s' '%s' -o '%s' --threads %d --tokens %d > /dev/null 2>&1",
             cli, dir, img, out, threads, budget);
    if (system(cmd)) {
        fprintf(stderr, "bench_load: failed: %s\n", cmd);
        return 1;
    }
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now();
        if (system(cmd)) return 1;
        to[i] = bench_now() - t0;
    }
    remove(img);
    remove(out);
    remove(npy);

    /* two processes on one checkpoint */
    int rd[2], hold[2];
    if (pipe(rd) || pipe(hold)) return 1;
    pid_t kids[2];
    long kid_peak[2];
    for (int i = 0; i < 2; i++) {
        kids[i] = spawn_child(rd[1], hold[0]);
        if (read(rd[0], &kid_peak[i], sizeof kid_peak[i]) != sizeof kid_peak[i]) return 1;
    }
    long rss[2], pss[2];
    for (int i = 0; i < 2; i++) {
        rss[i] = rollup_kib(kids[i], "Rss:");
        pss[i] = rollup_kib(kids[i], "Pss:");
    }
    if (write(hold[1], "xx", 2) != 2) return 1;
    for (int i = 0; i < 2; i++)
        waitpid(kids[i], NULL, 0);

    double load_ms = 1e3 * bench_median(tl, reps), enc = bench_median(te, reps);
    double one = bench_median(to, reps), peak_mb = peak_kib / 1024.0;
    printf("model %s (%s), %d threads, budget %d, %d reps, kernels: %s\n", dir, info.variant,
           threads, budget, reps, info.kernels);
    printf("vision weights mapped: %.1f MB\n", weights_mb);
    printf("load (warm page cache): median %.2f ms (min %.2f)\n", load_ms, 1e3 * tl[0]);
    printf("warm encode: median %.3f s; one-shot `g4v encode` process: median %.3f s\n", enc, one);
    printf("peak RSS, load + encode: %.1f MB = weights + %.1f MB\n", peak_mb,
           peak_mb - weights_mb);
    for (int i = 0; i < 2; i++)
        printf("process %d of 2 on one checkpoint: Rss %.1f MB, Pss %.1f MB (shared pages "
               "count half)\n",
               i + 1, rss[i] / 1024.0, pss[i] / 1024.0);
    printf("targets (issue 37):\n");
    verdict("peak RSS - mapped weights", peak_mb - weights_mb, 80, "MB");
    verdict("model load, warm", load_ms, 20, "ms");
    verdict("one-shot encode - warm encode", one - enc, 0.05, "s");
    /* sharing: each Pss carries about half of the weights the two map together */
    double shared = (rss[0] + rss[1] - pss[0] - pss[1]) / 1024.0;
    printf("  %-52s %9.1f MB  (target: about the weights, %.1f MB) %s\n",
           "Rss - Pss, summed over the two processes", shared, weights_mb,
           shared >= 0.8 * weights_mb ? "ok" : "MISSED");
    return 0;
}
