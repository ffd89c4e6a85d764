/* bench_gemm.c - our GEMM on the encoder's shapes against measured peaks and oneDNN, one run.
 *
 *   bench_gemm [--m M] [--reps R] [--mode fast|precise|int8]
 *
 * Measures, in the same process: FMA and vdpbf16ps throughput peaks for 1 and 2 threads (the
 * shared table, bench_peaks.h: best of 5 per thread count, taken before any oneDNN thread
 * exists); then for each shape (M x K -> N with M = L = 2304 patches, i.e. 256 soft tokens) and
 * 1 and 2 threads, our g4v_gemm (BF16 weights, f32 X; the kernel g4v_wmat_create picks) and
 * oneDNN's matmul (weights prepacked; bf16 where oneDNN has a native kernel, and f32). The
 * machine is shared, so each repetition runs ours, oneDNN bf16 and oneDNN f32 back to back, and
 * the table reports the median of each: ratios come from the same conditions. "% peak" divides
 * by the peak, at the row's thread count, of the instruction our kernel is built on (vdpbf16ps
 * for avx512-bf16dp, else FMA at the widest width), the same number for the oneDNN columns. Our time includes clamping and
 * rounding X to bf16 while packing; oneDNN's src is already bf16 (its best configuration).
 * Where the kernel reads the weights in place (…-inplace, gemm_inplace.c), its packed twin (the
 * next kernel of the table, same arithmetic, weights packed at load) runs in the same
 * repetitions: "inplace/packed" is their speed ratio (above 1: in place is faster).
 */
#include "bench_gemm.h"
#include "bench_peaks.h"
#include "bench_util.h"

#include "base/cpu.h"
#include "base/dtype.h"
#include "kernels/dispatch.h"
#include "kernels/gemm.h"
#include "kernels/gemm_kernel.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint32_t rng = 12345;
static float frand(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

static double time_ours(g4v_pool *pool, const float *x, int m, int k, const g4v_wmat *w, float *y,
                        int n) {
    double t0 = bench_now();
    g4v_gemm(pool, x, (size_t)k, w, y, (size_t)n, (size_t)m, NULL);
    return bench_now() - t0;
}

enum { MAX_REPS = 64 };

int main(int argc, char **argv) {
    int m = 2304, reps = 5;
    g4v_math_mode mode = G4V_MATH_FAST;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--m"))
            m = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mode"))
            mode = !strcmp(argv[i + 1], "precise") ? G4V_MATH_PRECISE
                   : !strcmp(argv[i + 1], "int8")  ? G4V_MATH_INT8 /* "% peak": of FMA f32 */
                   : !strcmp(argv[i + 1], "int8b") ? G4V_MATH_INT8_BLOCKS
                                                   : G4V_MATH_FAST;
    }
    if (m < 1 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "usage: bench_gemm [--m M] [--reps R (1..%d)] [--mode fast|precise|int8|int8b]\n",
                MAX_REPS);
        return 2;
    }
    static const int shapes[][2] = {{768, 2304}, {768, 3072}, {3072, 768}, {768, 768}}; /* K, N */
    g4v_pool *pools[3] = {NULL, NULL, NULL};
    for (int t = 1; t <= 2; t++)
        if (g4v_pool_create(t, &pools[t], NULL) != G4V_OK) return 1;
    bench_require_isa("bench_gemm");
    int width = 0;
    bench_peak_fma(pools[1], 1, &width); /* warm up clocks; learn the vector width */
    bench_peaks pk;
    if (bench_peaks_measure(&pk, (const int[]){1, 2}, 2, 5)) return 1;
    printf("cpu: %s, FMA %d-bit, mode %s, M = %d, medians of %d interleaved runs\n",
           g4v_cpu_isa_name(), width, mode == G4V_MATH_FAST   ? "FAST"
           : mode == G4V_MATH_INT8 ? "INT8"
           : mode == G4V_MATH_INT8_BLOCKS ? "INT8_BLOCKS"
                                          : "PRECISE",
           m, reps);
    bench_peaks_print(&pk, stdout);
    printf("peak = the instruction our kernel uses (vdpbf16ps for avx512-bf16dp, else FMA) at "
           "the row's thread count (T)\n\n");
    printf("%-16s %2s %-22s %8s %8s %6s | %9s %6s | %9s %6s | %6s | %8s %6s %6s\n",
           "shape MxK->N", "T", "ours", "peak", "GFLOP/s", "%peak", "dnnl-bf16", "%peak",
           "dnnl-f32", "%peak", "/dnnl", "packed", "%peak", "ip/pk");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int k = shapes[s][0], n = shapes[s][1];
        float *x = malloc(sizeof(float) * (size_t)m * k),
              *y = malloc(sizeof(float) * (size_t)m * n);
        uint16_t *w = malloc(sizeof(uint16_t) * (size_t)n * k);
        if (!x || !y || !w) return 1;
        for (size_t i = 0; i < (size_t)m * k; i++)
            x[i] = frand();
        for (size_t i = 0; i < (size_t)n * k; i++)
            w[i] = g4v_f32_to_bf16(frand() * 0.05f);
        g4v_wmat *W = NULL;
        g4v_err err;
        if (g4v_wmat_create(g4v_kernels_current(), w, G4V_DT_BF16, n, k, mode, &W, &err) !=
            G4V_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        int dp = !strncmp(g4v_wmat_kernel_name(W), "avx512-bf16dp", 13);
        /* the packed twin of an in-place kernel: the next one of the table that fits */
        g4v_wmat *Wp = NULL;
        const g4v_kernels *kt = g4v_kernels_current();
        for (int i = 0; g4v_wmat_in_place(W) && i < kt->ngemm && !Wp; i++)
            if (kt->gemm[i] != g4v_wmat_kernel(W) && !kt->gemm[i]->inner &&
                g4v_gemm_kernel_fits(kt->gemm[i], G4V_DT_BF16, mode) &&
                g4v_wmat_create_with(kt, kt->gemm[i], w, G4V_DT_BF16, n, k, mode, &Wp, &err))
                return 1;
        double flops = 2.0 * m * (double)n * k;
        for (int t = 1; t <= 2; t++) {
            const char *ib, *iff;
            bench_dnnl *db = bench_dnnl_create(m, n, k, 1, t, &ib);
            bench_dnnl *df = bench_dnnl_create(m, n, k, 0, t, &iff);
            double to[MAX_REPS], tb[MAX_REPS], tf[MAX_REPS], tp[MAX_REPS];
            time_ours(pools[t], x, m, k, W, y, n); /* warm-up: scratch, first touch of Y */
            if (Wp) time_ours(pools[t], x, m, k, Wp, y, n);
            for (int r = 0; r < reps; r++) {
                /* oneDNN's OpenMP threads spin for a while after each call and would take a core
                 * from ours: let them go to sleep */
                nanosleep(&(struct timespec){0, 300 * 1000 * 1000}, NULL);
                to[r] = time_ours(pools[t], x, m, k, W, y, n);
                tp[r] = Wp ? time_ours(pools[t], x, m, k, Wp, y, n) : 0;
                tb[r] = db ? bench_dnnl_run(db) : 0;
                tf[r] = df ? bench_dnnl_run(df) : 0;
            }
            double peak = bench_peaks_get(&pk, t,
                                          dp            ? BENCH_DPBF16
                                          : width == 512 ? BENCH_FMA_ZMM
                                                         : BENCH_FMA_YMM);
            double ours = flops / bench_median(to, reps) * 1e-9;
            double gb = db ? flops / bench_median(tb, reps) * 1e-9 : 0;
            double gf = df ? flops / bench_median(tf, reps) * 1e-9 : 0;
            char shape[32];
            snprintf(shape, sizeof shape, "%dx%d->%d", m, k, n);
            double packed = Wp ? flops / bench_median(tp, reps) * 1e-9 : 0;
            printf("%-16s %2d %-22s %8.1f %8.1f %5.1f%% | %9.1f %5.1f%% | %9.1f %5.1f%% | %6.2f | "
                   "%8.1f %5.1f%% %6.3f\n",
                   shape, t, g4v_wmat_kernel_name(W), peak, ours, 100 * ours / peak, gb,
                   100 * gb / peak, gf, 100 * gf / peak,
                   gb > 0 || gf > 0 ? ours / (gb > gf ? gb : gf) : 0.0, packed,
                   100 * packed / peak, packed > 0 ? ours / packed : 0.0);
            if (s == 0 && t == 1) printf("  (oneDNN: bf16 %s; f32 %s)\n", ib, iff);
            bench_dnnl_free(db);
            bench_dnnl_free(df);
        }
        g4v_wmat_free(W);
        g4v_wmat_free(Wp);
        free(x);
        free(y);
        free(w);
    }
    for (int t = 1; t <= 2; t++)
        g4v_pool_destroy(pools[t]);
    return 0;
}
