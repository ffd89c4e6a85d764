/* bench_peaks.c - the shared peak table (bench_peaks.h): best of N per thread count, round-robin
 * over the thread counts, repeated while a peak reads below one of fewer threads. */
#include "bench_peaks.h"

#include "bench_gemm.h"

#include "base/cpu.h"
#include "base/error.h"
#include "base/pool.h"

#include <stdlib.h>

static const char *const kind_names[BENCH_PEAK_KINDS] = {"FMA ymm", "FMA zmm", "vdpbf16ps"};

const char *bench_peak_kind_name(int kind) {
    return kind >= 0 && kind < BENCH_PEAK_KINDS ? kind_names[kind] : "?";
}

/* Index of a T-thread peak below the peak of a smaller thread count, or -1. */
static int first_inversion(const bench_peaks *p) {
    for (int i = 1; i < p->n; i++)
        for (int k = 0; k < BENCH_PEAK_KINDS; k++)
            if (p->gflops[i][k] < p->gflops[i - 1][k]) return i;
    return -1;
}

int bench_peaks_measure_with(bench_peaks *p, const int *threads, int n, int rounds,
                             bench_peak_fn fn, void *arg) {
    *p = (bench_peaks){0};
    if (n < 1 || rounds < 1 || !fn) return -1;
    for (int i = 0; i < n; i++) { /* insert in ascending order, dropping duplicates */
        int t = threads[i], j = p->n;
        if (t < 1) return -1;
        int dup = 0;
        for (int q = 0; q < p->n; q++)
            dup |= p->threads[q] == t;
        if (dup) continue;
        if (p->n == BENCH_PEAK_MAX_THREADS) return -1;
        while (j > 0 && p->threads[j - 1] > t) {
            p->threads[j] = p->threads[j - 1];
            j--;
        }
        p->threads[j] = t;
        p->n++;
    }
    for (int r = 0; r < 3 * rounds; r++) {
        if (r >= rounds && first_inversion(p) < 0) break;
        for (int i = 0; i < p->n; i++)
            for (int k = 0; k < BENCH_PEAK_KINDS; k++) {
                double g = fn(arg, p->threads[i], k);
                if (g > p->gflops[i][k]) p->gflops[i][k] = g;
            }
        p->rounds = r + 1;
    }
    p->suspect = first_inversion(p) >= 0;
    return 0;
}

/* The real loops: arg holds one pool per thread-count slot. */
typedef struct {
    const bench_peaks *p;
    g4v_pool *pools[BENCH_PEAK_MAX_THREADS];
} real_arg;

static double real_fn(void *arg, int threads, int kind) {
    real_arg *ra = arg;
    g4v_pool *pool = NULL;
    for (int i = 0; i < ra->p->n; i++)
        if (ra->p->threads[i] == threads) pool = ra->pools[i];
    switch (kind) {
    /* on ARM64 the 128-bit NEON FMA fills the ymm slot (the 256-bit one measures 0 there) */
    case BENCH_FMA_YMM:
        return bench_peak_fma_bits(pool, threads, 256) + bench_peak_fma_bits(pool, threads, 128);
    case BENCH_FMA_ZMM: return bench_peak_fma_bits(pool, threads, 512);
    default: return bench_peak_dpbf16(pool, threads);
    }
}

static double no_measure(void *arg, int threads, int kind) {
    (void)arg, (void)threads, (void)kind;
    return 0;
}

int bench_peaks_measure(bench_peaks *p, const int *threads, int n, int rounds) {
    /* first only the ordering (no measurement), to know which pool goes with which slot */
    if (bench_peaks_measure_with(p, threads, n, 1, no_measure, NULL)) return -1;
    real_arg ra = {.p = p};
    bench_peaks order = *p;
    ra.p = &order;
    int st = 0;
    for (int i = 0; i < order.n && !st; i++)
        st = g4v_pool_create(order.threads[i], &ra.pools[i], NULL) ? -1 : 0;
    if (!st) st = bench_peaks_measure_with(p, order.threads, order.n, rounds, real_fn, &ra);
    for (int i = 0; i < order.n; i++)
        g4v_pool_destroy(ra.pools[i]);
    return st;
}

double bench_peaks_get(const bench_peaks *p, int threads, int kind) {
    if (kind < 0 || kind >= BENCH_PEAK_KINDS) return 0;
    for (int i = 0; i < p->n; i++)
        if (p->threads[i] == threads) return p->gflops[i][kind];
    return 0;
}

void bench_peaks_print(const bench_peaks *p, FILE *f) {
    for (int i = 0; i < p->n; i++)
        fprintf(f, "peaks, %d thread(s) (best of %d): %s %.0f, %s %.0f, %s %.0f GFLOP/s (0: not on "
                   "this CPU)\n",
                p->threads[i], p->rounds, kind_names[0], p->gflops[i][0], kind_names[1],
                p->gflops[i][1], kind_names[2], p->gflops[i][2]);
    if (p->suspect)
        fprintf(f, "WARNING: a peak on more threads measured below one on fewer threads after %d "
                   "rounds: the machine is busy, the %% of peak figures are not reliable\n",
                p->rounds);
}

void bench_require_isa(const char *prog) {
    g4v_err err;
    g4v_err_clear(&err);
    if (g4v_cpu_isa_check(&err)) {
        fprintf(stderr, "%s: %s\n", prog, err.msg);
        exit(2);
    }
}
