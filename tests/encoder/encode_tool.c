/* encode_tool.c - test driver: checkpoint + image at target size (raw uint8 [H, W, 3] .npy) ->
 * soft tokens [N, T] float32 .npy, through g4v_encoder directly (no decode, no resize), or through
 * g4v_embedder for a unified (12B) checkpoint.
 *
 * usage: encode_tool CHECKPOINT_DIR IMAGE.npy OUT.npy [--precise] [--threads N] [--repeat R]
 *                    [--chunk ROWS]
 * --repeat runs the encoder R times on the same workspace and prints the time of each run
 * (stderr), which is how the baseline timings are taken, with its CPU seconds (user + sys), sys
 * seconds and page faults (the first run's first touch of the workspace shows there). The .npy reader accepts only what
 * numpy.save writes for a C-ordered uint8 array. */
#include "base/alloc.h"
#include "base/pool.h"
#include "encoder/embedder.h"
#include "encoder/encoder.h"
#include "io/model_source.h"
#include "kernels/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = len > 0 ? malloc((size_t)len) : NULL;
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = buf ? (size_t)len : 0;
    return buf;
}

/* Parses a version 1/2 .npy holding C-ordered uint8 [H, W, 3]; returns a pointer to the data. */
static const unsigned char *parse_npy_u8(const unsigned char *b, size_t n, int *h, int *w) {
    if (n < 10 || memcmp(b, "\x93NUMPY", 6)) return NULL;
    size_t hl, off;
    if (b[6] == 1) {
        hl = b[8] | (size_t)b[9] << 8;
        off = 10;
    } else {
        if (n < 12) return NULL;
        hl = b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        off = 12;
    }
    if (off + hl > n || hl > 4096) return NULL;
    char hdr[4097];
    memcpy(hdr, b + off, hl);
    hdr[hl] = 0;
    if (!strstr(hdr, "'descr': '|u1'") || !strstr(hdr, "'fortran_order': False")) return NULL;
    const char *s = strstr(hdr, "'shape': (");
    int c = 0;
    if (!s || sscanf(s, "'shape': (%d, %d, %d)", h, w, &c) != 3 || c != 3 || *h <= 0 || *w <= 0)
        return NULL;
    if ((size_t)*h * (size_t)*w * 3 > n - off - hl) return NULL;
    return b + off + hl;
}

static int write_npy_f32(const char *path, const float *x, int rows, int cols) {
    char hdr[128];
    int len = snprintf(hdr, sizeof hdr,
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }", rows, cols);
    int total = 10 + len + 1, pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0, 0};
    int hl = len + pad + 1;
    pre[8] = (unsigned char)(hl & 0xff);
    pre[9] = (unsigned char)(hl >> 8);
    fwrite(pre, 1, 10, f);
    fwrite(hdr, 1, (size_t)len, f);
    for (int i = 0; i < pad; i++)
        fputc(' ', f);
    fputc('\n', f);
    size_t cnt = (size_t)rows * cols;
    int ok = fwrite(x, sizeof(float), cnt, f) == cnt;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr,
                "usage: %s CHECKPOINT_DIR IMAGE.npy OUT.npy [--precise] [--threads N] "
                "[--repeat R] [--chunk ROWS] [--int8[=blocks] [--int8-fast q,k,v,o,gate,up,down|none]]\n",
                argv[0]);
        return 1;
    }
    g4v_encoder_opts opts = {.mode = G4V_MATH_FAST};
    int threads = 1, repeat = 1;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--precise"))
            opts.mode = G4V_MATH_PRECISE;
        else if (!strcmp(argv[i], "--int8"))
            opts.mode = G4V_MATH_INT8;
        else if (!strcmp(argv[i], "--int8=blocks")) /* per-32-block scales */
            opts.mode = G4V_MATH_INT8_BLOCKS;
        else if (!strcmp(argv[i], "--int8-fast") && i + 1 < argc) { /* linears kept FAST */
            static const char *const names[G4V_LIN_COUNT] = {"q", "k", "v", "o",
                                                             "gate", "up", "down"};
            opts.int8_fast_linears = G4V_INT8_NONE_FAST;
            for (char *t = strtok(argv[++i], ","); t; t = strtok(NULL, ","))
                for (int j = 0; j < G4V_LIN_COUNT; j++)
                    if (!strcmp(t, names[j])) opts.int8_fast_linears |= 1u << j;
        }
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--chunk") && i + 1 < argc)
            opts.chunk_rows = atoi(argv[++i]);
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 1;
        }
    }
    size_t n;
    unsigned char *file = read_file(argv[2], &n);
    int h = 0, w = 0;
    const unsigned char *rgb = file ? parse_npy_u8(file, n, &h, &w) : NULL;
    if (!rgb) {
        fprintf(stderr, "%s: not a uint8 [H, W, 3] .npy\n", argv[2]);
        return 2;
    }
    g4v_err err;
    g4v_err_clear(&err);
    g4v_checkpoint *ck = NULL;
    g4v_encoder *enc = NULL;
    g4v_embedder *emb = NULL;
    g4v_pool *pool = NULL;
    g4v_workspace *ws = g4v_workspace_create();
    double t0 = now();
    if (g4v_pool_create(threads, &pool, &err) || g4v_checkpoint_open(argv[1], NULL, &ck, &err) ||
        (opts.pool = pool, ck->cfg.kind == G4V_KIND_UNIFIED
                               ? g4v_embedder_create(ck, &opts, &emb, &err)
                               : g4v_encoder_create(ck, &opts, &enc, &err))) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 3;
    }
    fprintf(stderr, "load + prepare: %.3f s\n", now() - t0);
    /* which attention runs: the FAST error depends on it (test_encoder_ref.py reads this line) */
    const g4v_kernels *kt = g4v_kernels_current();
    fprintf(stderr, "attention kernel: %s\n",
            (opts.mode != G4V_MATH_PRECISE ? kt->isa_fast : kt->isa)[G4V_KF_ATTENTION]);
    const g4v_vision_config *c = &ck->cfg;
    int side = c->patch_size * c->pooling_kernel_size;
    int N = (h / side) * (w / side);
    float *out = malloc((size_t)(N > 0 ? N : 1) * c->text_hidden_size * sizeof(float));
    for (int r = 0; r < repeat; r++) {
        /* CPU seconds and page faults too: the first run's extra cost (first touch of the
         * workspace) shows in them even on a machine too busy for wall times to tell */
        struct rusage ru0, ru1;
        getrusage(RUSAGE_SELF, &ru0);
        t0 = now();
        int st = emb ? g4v_embedder_run(emb, ws, pool, rgb, w, h, (size_t)w * 3, out, &err)
                     : g4v_encoder_run(enc, ws, pool, rgb, w, h, (size_t)w * 3, out, &err);
        if (st) {
            fprintf(stderr, "error: %s\n", err.msg);
            return 2;
        }
        double wall = now() - t0;
        getrusage(RUSAGE_SELF, &ru1);
        double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                     (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                     1e-6 * (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec +
                                     ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec);
        fprintf(stderr, "encode %dx%d (%d threads, %s): %.3f s (cpu %.3f s, sys %.3f s, %ld page "
                        "faults)\n",
                w, h, threads, opts.mode == G4V_MATH_PRECISE ? "precise"
                : opts.mode == G4V_MATH_INT8  ? "int8"
                : opts.mode == G4V_MATH_INT8_BLOCKS ? "int8-blocks"
                                                    : "fast",
                wall, cpu,
                (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                    1e-6 * (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec),
                ru1.ru_minflt - ru0.ru_minflt);
    }
    if (write_npy_f32(argv[3], out, N, c->text_hidden_size)) {
        fprintf(stderr, "%s: cannot write\n", argv[3]);
        return 4;
    }
    free(out);
    free(file);
    g4v_workspace_free(ws);
    g4v_pool_destroy(pool);
    g4v_encoder_free(enc);
    g4v_embedder_free(emb);
    g4v_checkpoint_close(ck);
    return 0;
}
