/* bench_checkpoint.c - how long g4v_checkpoint_open takes and what it costs in memory.
 *
 * usage: bench_checkpoint MODEL_DIR [REPEATS=5]
 * Prints the median wall time of open+close (header parsing, validation, mapping; the tensor
 * data is mapped lazily, not read), RSS after one open, then the time to touch every page of
 * every vision tensor once (a first pass over the weights, from the page cache when warm) and
 * RSS after that. Not a test: a measuring tool for reports.
 */
#include "base/clock.h"
#include "io/model_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) kib = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    return kib;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct touch {
    unsigned long sum;
    size_t bytes;
} touch;

static void touch_tensor(void *user, const char *name, const g4v_tensor *t) {
    (void)name;
    touch *s = user;
    const volatile unsigned char *p = t->data;
    for (size_t i = 0; i < t->nbytes; i += 4096)
        s->sum += p[i];
    if (t->nbytes) s->sum += p[t->nbytes - 1];
    s->bytes += t->nbytes;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_checkpoint MODEL_DIR [REPEATS]\n");
        return 2;
    }
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (reps < 1 || reps > 1000) reps = 5;
    double *t = calloc((size_t)reps, sizeof *t);
    g4v_err err;
    g4v_checkpoint *ck;
    long rss0 = rss_kib();
    for (int i = 0; i < reps; i++) {
        double t0 = g4v_now_s();
        if (g4v_checkpoint_open(argv[1], NULL, &ck, &err)) {
            fprintf(stderr, "bench_checkpoint: %s\n", err.msg);
            return 1;
        }
        t[i] = g4v_now_s() - t0;
        g4v_checkpoint_close(ck);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    if (g4v_checkpoint_open(argv[1], NULL, &ck, &err)) return 1;
    long rss1 = rss_kib();
    double t0 = g4v_now_s();
    touch s = {0, 0};
    g4v_checkpoint_foreach(ck, touch_tensor, &s);
    double tt = g4v_now_s() - t0;
    long rss2 = rss_kib();
    printf("model %s: %s, %lld params, %zu bytes\n", argv[1], ck->cfg.variant,
           (long long)ck->param_count, ck->weight_bytes);
    printf("open+validate+map: median %.3f ms of %d (min %.3f, max %.3f)\n", 1e3 * t[reps / 2],
           reps, 1e3 * t[0], 1e3 * t[reps - 1]);
    printf("RSS: before %ld KiB, after open %ld KiB, after touching all %zu bytes %ld KiB\n", rss0,
           rss1, s.bytes, rss2);
    printf("first touch of every page: %.1f ms (%.2f GB/s) [checksum %lu]\n", 1e3 * tt,
           (double)s.bytes / tt / 1e9, s.sum);
    g4v_checkpoint_close(ck);
    free(t);
    return 0;
}
