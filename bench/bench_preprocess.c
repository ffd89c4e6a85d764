/* bench_preprocess.c - times our decode + resize on one image file, in process.
 *
 *   bench_preprocess FILE [TOKENS] [REPEATS] [load]
 * Prints one line per variant with the median and minimum wall time in milliseconds, and a
 * line "times load: t1 t2 ..." with every repetition of the first (with "load": only that):
 *   load     g4v_image_load: decode + EXIF + target size + resize (streamed where possible)
 *   decode   g4v_image_decode alone
 *   d+r      g4v_image_decode then g4v_image_resize (the whole image held in memory)
 *   resize   g4v_image_resize alone on the decoded image
 * bench/bench_preprocess.py runs this next to Pillow and reports the ratio.
 */
#include "bench_util.h"

#include "base/alloc.h"
#include "image/image_internal.h"
#include "kernels/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>



static void report(const char *name, double *t, int n) {
    printf("times %s:", name);
    for (int i = 0; i < n; i++) printf(" %.3f", t[i]);
    printf("\n");
    double med = bench_median(t, n);
    printf("%-7s median %8.2f ms  min %8.2f ms\n", name, med, t[0]);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_preprocess FILE [TOKENS] [REPEATS]\n");
        return 1;
    }
    int tokens = argc > 2 ? atoi(argv[2]) : 280, reps = argc > 3 ? atoi(argv[3]) : 5;
    if (reps < 1 || reps > 1000) reps = 5;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return perror(argv[1]), 1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    if (!b || fread(b, 1, (size_t)n, f) != (size_t)n) return fprintf(stderr, "read error\n"), 1;
    fclose(f);
    double *t = malloc(sizeof(double) * reps);
    g4v_err err;
    g4v_image img, full;
    g4v_image_info info;
    printf("kernels: %s\n", g4v_kernels_current()->isa[G4V_KF_RESIZE]);
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now() * 1e3;
        if (g4v_image_load(b, (size_t)n, tokens, NULL, &img, &info, &err))
            return fprintf(stderr, "%s\n", err.msg), 2;
        t[i] = bench_now() * 1e3 - t0;
        if (i == 0)
            printf("%s %dx%d -> %dx%d (%s)\n", info.format, info.width, info.height, img.width,
                   img.height, info.streamed ? "streamed" : "whole image");
        g4v_image_free(&img);
    }
    report("load", t, reps);
    if (argc > 4 && !strcmp(argv[4], "load")) return 0;
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now() * 1e3;
        if (g4v_image_decode(b, (size_t)n, NULL, &full, &err))
            return fprintf(stderr, "%s\n", err.msg), 2;
        t[i] = bench_now() * 1e3 - t0;
        g4v_image_free(&full);
    }
    report("decode", t, reps);
    int th, tw;
    double *tr = malloc(sizeof(double) * reps);
    for (int i = 0; i < reps; i++) {
        double t0 = bench_now() * 1e3;
        g4v_image_decode(b, (size_t)n, NULL, &full, &err);
        g4v_target_size(full.height, full.width, tokens, &th, &tw, &err);
        double t1 = bench_now() * 1e3;
        g4v_image_resize(full.rgb, full.width, full.height, (size_t)full.width * 3, tw, th,
                         G4V_RESIZE_PILLOW_9, &img, &err);
        t[i] = bench_now() * 1e3 - t0;
        tr[i] = bench_now() * 1e3 - t1;
        g4v_image_free(&img);
        g4v_image_free(&full);
    }
    report("d+r", t, reps);
    report("resize", tr, reps);
    free(t);
    free(tr);
    free(b);
    return 0;
}
