/* bench_batch.c - many small images (video frames) through the tower: one batched call
 * (g4v_encode_rgb_batch: every GEMM over all frames' rows, attention per frame) against the loop
 * of one g4v_encode_rgb per frame, interleaved in the same process, median of --reps.
 *
 * usage: bench_batch --model DIR [--frames 32] [--budget 70] [--size 640x360] [--threads N]
 *                    [--reps 5]
 * The frames are random RGB at --size (each resized to the budget's target size in both
 * variants, as video frames are). Both variants must give the same bits; the program checks it.
 */
#include "bench_util.h"

#include "g4v.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *dir = NULL;
    int frames = 32, budget = 70, w = 640, h = 360, threads = 0, reps = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) goto usage;
        if (!strcmp(a, "--model")) dir = v;
        else if (!strcmp(a, "--frames")) frames = atoi(v);
        else if (!strcmp(a, "--budget")) budget = atoi(v);
        else if (!strcmp(a, "--size")) { if (sscanf(v, "%dx%d", &w, &h) != 2) goto usage; }
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else goto usage;
        i++;
    }
    if (!dir || frames < 1 || w < 1 || h < 1 || reps < 1 || reps > 99) goto usage;

    char msg[512];
    g4v_model_options mo;
    g4v_model_options_init(&mo);
    g4v_model *m = NULL;
    g4v_ctx *ctx = NULL;
    g4v_ctx_options co;
    g4v_ctx_options_init(&co);
    co.threads = threads;
    if (g4v_model_load(dir, &mo, &m, msg, sizeof msg) ||
        g4v_ctx_create(m, &co, &ctx, msg, sizeof msg)) {
        fprintf(stderr, "bench_batch: %s\n", msg);
        return 1;
    }
    g4v_rgb_image *im = calloc((size_t)frames, sizeof *im);
    g4v_result *out = calloc((size_t)frames, sizeof *out);
    uint64_t s = 88172645463325252ull;
    for (int f = 0; f < frames; f++) {
        uint8_t *px = malloc((size_t)w * h * 3);
        for (size_t k = 0; k < (size_t)w * h * 3; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            px[k] = (uint8_t)s;
        }
        im[f] = (g4v_rgb_image){px, w, h, (size_t)w * 3};
    }
    g4v_encode_options eo;
    g4v_encode_options_init(&eo);
    eo.budget = budget;
    /* one of each first (workspace and output buffers grown), and the bit check */
    if (g4v_encode_rgb_batch(ctx, im, frames, &eo, out)) goto fail;
    size_t per = (size_t)out[0].n_tokens * out[0].dim, total = per * frames;
    float *batched = malloc(total * sizeof(float));
    memcpy(batched, out[0].features, total * sizeof(float));
    int same = 1;
    for (int f = 0; f < frames; f++) {
        g4v_result r;
        if (g4v_encode_rgb(ctx, im[f].rgb, w, h, im[f].stride, &eo, &r)) goto fail;
        same &= !memcmp(r.features, batched + f * per, per * sizeof(float));
    }
    double tb[99], tl[99];
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        for (int f = 0; f < frames; f++) {
            g4v_result one;
            if (g4v_encode_rgb(ctx, im[f].rgb, w, h, im[f].stride, &eo, &one)) goto fail;
        }
        tl[r] = bench_now() - t0;
        t0 = bench_now();
        if (g4v_encode_rgb_batch(ctx, im, frames, &eo, out)) goto fail;
        tb[r] = bench_now() - t0;
    }
    double ml = bench_median(tl, reps), mb = bench_median(tb, reps);
    printf("bench_batch frames=%d size=%dx%d budget=%d tokens/frame=%d threads=%d reps=%d\n", frames,
           w, h, budget, out[0].n_tokens, threads, reps);
    printf("per-frame loop: %.3f s  %.2f frames/s\n", ml, frames / ml);
    printf("batched:        %.3f s  %.2f frames/s  (%.2fx)\n", mb, frames / mb, ml / mb);
    printf("bit-identical: %s\n", same ? "yes" : "NO");
    return same ? 0 : 1;
fail:
    fprintf(stderr, "bench_batch: %s\n", g4v_ctx_error(ctx));
    return 1;
usage:
    fprintf(stderr, "usage: bench_batch --model DIR [--frames 32] [--budget 70] [--size WxH] "
                    "[--threads N] [--reps 5]\n");
    return 1;
}
