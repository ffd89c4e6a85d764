/* bench_gemm_tune.c - GEMM blocking variants side by side, in % of the peak of the same run.
 *
 *   bench_gemm_tune [--m M] [--reps R] [--calls C] [--threads 1,2] [--shape K,N]
 *                   [--malloc] [--var kc=24/pf=1 ...]
 *
 * For tuning the driver (gemm_driver.c), not a comparison with other libraries (bench_gemm). For
 * each of the encoder's shapes (M x K -> N, BF16 weights, FAST mode; --shape: one other) and
 * thread count it times the default blocking and each override given (`--var`, fields of
 * g4v_gemm_cfg: kc = K groups per chunk, tiles = MR-row tiles per task, panels = B panels per
 * task, pf = 1 / -1: prefetch each tile's output rows or not, by default when N > K), interleaved. Every repetition runs each variant
 * C times back to back (the time per call: the pool's workers are woken once per C calls, as in
 * the encoder) and then once after a 50 ms sleep ("cold", what bench_gemm times). Reported:
 * medians of R repetitions in % of the peak measured in the same run (vdpbf16ps, or FMA for the
 * other kernels), and GFLOP per CPU second and thread (immune to time slices lost to other
 * processes, blind to waiting: pool wake-up, unequal shares) against the micro-kernel alone on
 * L1-resident operands, also in CPU time, with the best repetition of that column (the steadiest
 * figure for an A/B on a shared machine). Before the table: that ceiling, the micro-kernel fed
 * as the driver feeds it (A micro-panels from L2, B panels from L2 or L3, rows of a wide Y), and
 * the pool's wake-up time. X and Y are allocated as the encoder's workspace is
 * (g4v_malloc_large; --malloc: plain malloc, as bench_gemm). Each variant's output is compared
 * bit for bit with the default's before timing.
 */
#include "bench_gemm.h"
#include "bench_peaks.h"
#include "bench_util.h"

#include "base/alloc.h"
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

enum { MAX_REPS = 64, MAX_VARIANTS = 12, MAX_LIST = 8 };

static uint32_t rng = 12345;
static float frand(void) {
    rng = rng * 1664525u + 1013904223u;
    return (float)(rng >> 8) / 8388608.0f - 1.0f;
}

typedef struct {
    char name[40];
    g4v_gemm_cfg cfg;
    int is_default;
} variant;

/* Parses "kc=24/pf=1" into v; returns 0, or -1 on an unknown key or a bad number. */
static int parse_variant(const char *spec, variant *v) {
    memset(v, 0, sizeof *v);
    snprintf(v->name, sizeof v->name, "%s", spec);
    const char *s = spec;
    while (*s) {
        char key[16];
        int n = 0;
        while (*s && *s != '=' && n < 15)
            key[n++] = *s++;
        key[n] = 0;
        if (*s++ != '=') return -1;
        char *end;
        long val = strtol(s, &end, 10);
        if (end == s || val < -1 || val > 100000) return -1;
        s = *end == '/' ? end + 1 : end;
        if (*end && *end != '/') return -1;
        if (!strcmp(key, "kc"))
            v->cfg.kc_groups = (int)val;
        else if (!strcmp(key, "tiles"))
            v->cfg.tiles_per_block = (int)val;
        else if (!strcmp(key, "panels"))
            v->cfg.panels_per_block = (int)val;
        else if (!strcmp(key, "pf"))
            v->cfg.out_prefetch = (int)val;
        else
            return -1;
    }
    return 0;
}

/* Parses "a,b,c" into at most MAX_LIST positive ints; returns the count, -1 on a bad list. */
static int parse_list(const char *s, int *out) {
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 100000 || n == MAX_LIST) return -1;
        out[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return -1;
    }
    return n;
}

/* CPU seconds of the whole process (all threads; a pool's idle workers sleep, costing none). */
static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Wall seconds per call; *cpu: CPU seconds per call and thread. */
static double run_calls(g4v_pool *pool, int threads, const float *x, int m, int k,
                        const g4v_wmat *w, float *y, int n, const variant *v, int calls,
                        double *cpu) {
    double c0 = cpu_now(), t0 = bench_now();
    for (int c = 0; c < calls; c++)
        g4v_gemm_cfg_run(pool, x, (size_t)k, w, y, (size_t)n, (size_t)m, NULL,
                         v->is_default ? NULL : &v->cfg);
    double t = (bench_now() - t0) / calls;
    *cpu = (cpu_now() - c0) / calls / threads;
    return t;
}

static void empty_task(void *arg, int t, int worker) {
    (void)arg, (void)t, (void)worker;
}

/* Median seconds of a pool run of `threads` empty tasks: back to back, or each after `sleep_ms`
 * (the workers asleep, as a single timed call after a pause finds them). */
static double pool_wake(g4v_pool *pool, int threads, int sleep_ms) {
    double t[15];
    for (int r = 0; r < 15; r++) {
        if (sleep_ms) nanosleep(&(struct timespec){0, sleep_ms * 1000L * 1000L}, NULL);
        double t0 = bench_now();
        g4v_pool_run(pool, threads, empty_task, NULL);
        t[r] = bench_now() - t0;
    }
    return bench_median(t, 15);
}

/* The micro-kernel alone over one K chunk of `kgroups` groups, cycling through na packed A
 * micro-panels and nb B panels (1 and 1: operands resident in L1; more: streamed from L2, as in
 * the driver); GFLOP per CPU second, best of 5. */
static double ukr_alone(const g4v_gemm_kernel *k, int kgroups, int na, int nb, int ldy,
                        int iters) {
    size_t asz = k->a_bf16 ? 2 : 4, bsz = k->b_bf16 ? 2 : 4;
    size_t pa = (size_t)k->mr * kgroups * k->kg * asz, pb = (size_t)k->nr * kgroups * k->kg * bsz;
    unsigned char *a = aligned_alloc(64, pa * na), *b = aligned_alloc(64, pb * nb);
    size_t ybytes = ldy ? sizeof(float) * (size_t)ldy * (size_t)(k->mr * na) : 2048;
    float *y = aligned_alloc(64, ybytes);
    if (!a || !b || !y) exit(1);
    memset(a, 0, pa * na);
    memset(b, 0, pb * nb);
    memset(y, 0, ybytes);
    static const g4v_ukr_epi none = {0.0f, 0.0f, 0, 0};
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t0 = cpu_now();
        for (int i = 0; i < iters; i++)
            k->ukr(kgroups, a + pa * (size_t)(i % na), b + pb * (size_t)(i / na % nb), NULL,
                   ldy ? y + (size_t)(i % na) * k->mr * ldy + (size_t)(i / na % nb) * k->nr : y,
                   ldy ? (size_t)ldy : (size_t)k->nr, &none);
        double t = cpu_now() - t0;
        best = t < best ? t : best;
    }
    free(a);
    free(b);
    free(y);
    return 2.0 * k->mr * k->nr * (double)kgroups * k->kg * iters / best * 1e-9;
}

/* K, N of the encoder's GEMMs (M = its rows) */
static int default_shapes[][2] = {{768, 2304}, {768, 3072}, {3072, 768}, {768, 768}};

int main(int argc, char **argv) {
    int one_shape[1][2] = {{0, 0}}, small_pages = 0;
    int m = 2304, reps = 5, calls = 5;
    int threads[MAX_LIST] = {1, 2}, nthreads = 2;
    variant vars[MAX_VARIANTS];
    int nv = 1;
    memset(vars, 0, sizeof vars);
    snprintf(vars[0].name, sizeof vars[0].name, "default");
    vars[0].is_default = 1;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--malloc")) {
            small_pages = 1;
            continue;
        }
        if (!strcmp(argv[i], "--help") || !v) {
            printf("usage: bench_gemm_tune [--m M] [--reps R (1..%d)] [--calls C] [--threads LIST]"
                   " [--shape K,N] [--malloc] [--var SPEC]...\n"
                   "  --m 2304              rows of X (default 2304: 256 soft tokens)\n"
                   "  --reps 5 --calls 5    repetitions (medians), calls timed back to back in each\n"
                   "  --threads 1,2         thread counts\n"
                   "  --malloc              X and Y from malloc (bench_gemm's way) instead of the"
                   " encoder's\n"
                   "                        g4v_malloc_large (huge pages on request)\n"
                   "  --shape 768,32        time this one shape instead of the encoder's four\n"
                   "  --var kc=24/pf=1      also time this blocking (g4v_gemm_cfg fields: kc = K"
                   " groups per chunk,\n"
                   "                        tiles = row tiles per task, panels = B panels per"
                   " task, pf=1 / -1 =\n"
                   "                        prefetch each tile's output rows or not (default:"
                   " when N > K));\n"
                   "                        up to %d\n",
                   MAX_REPS, MAX_VARIANTS - 1);
            return !strcmp(argv[i], "--help") ? 0 : 2;
        }
        if (!strcmp(argv[i], "--m"))
            m = atoi(v);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(v);
        else if (!strcmp(argv[i], "--calls"))
            calls = atoi(v);
        else if (!strcmp(argv[i], "--threads"))
            nthreads = parse_list(v, threads);
        else if (!strcmp(argv[i], "--shape")) {
            if (sscanf(v, "%d,%d", &one_shape[0][0], &one_shape[0][1]) != 2 ||
                one_shape[0][0] < 1 || one_shape[0][1] < 1 || one_shape[0][0] > 65536 ||
                one_shape[0][1] > 65536) {
                fprintf(stderr, "bench_gemm_tune: --shape wants K,N\n");
                return 2;
            }
        } else if (!strcmp(argv[i], "--var")) {
            if (nv == MAX_VARIANTS || parse_variant(v, &vars[nv++])) {
                fprintf(stderr, "bench_gemm_tune: bad or too many --var: %s\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "bench_gemm_tune: unknown option %s (--help)\n", argv[i]);
            return 2;
        }
        i++;
    }
    if (m < 1 || reps < 1 || reps > MAX_REPS || calls < 1 || nthreads < 1) {
        fprintf(stderr, "bench_gemm_tune: bad arguments (--help)\n");
        return 2;
    }
    bench_require_isa("bench_gemm_tune");
    g4v_pool *pools[MAX_LIST];
    for (int t = 0; t < nthreads; t++)
        if (g4v_pool_create(threads[t], &pools[t], NULL) != G4V_OK) return 1;
    int width = 0;
    bench_peak_fma(pools[0], 1, &width);
    bench_peaks pk;
    if (bench_peaks_measure(&pk, threads, nthreads, 5)) return 1;
    printf("cpu: %s, M = %d, medians of %d interleaved reps of %d calls\n", g4v_cpu_isa_name(), m,
           reps, calls);
    bench_peaks_print(&pk, stdout);
    int(*shapes)[2] = default_shapes, nshapes = 4;
    for (int t = 0; t < nthreads; t++)
        if (threads[t] > 1)
            printf("pool of %d: a run of empty tasks takes %.1f us back to back, %.1f us after a "
                   "50 ms sleep\n",
                   threads[t], 1e6 * pool_wake(pools[t], threads[t], 0),
                   1e6 * pool_wake(pools[t], threads[t], 50));
    /* the 1-thread peak in CPU time: the micro-kernel's ceiling, for the CPU-time column */
    double peak1 = 0;
    {
        uint16_t wz[32 * 768];
        memset(wz, 0, sizeof wz);
        g4v_wmat *W = NULL;
        g4v_err err;
        if (g4v_wmat_create(g4v_kernels_current(), wz, G4V_DT_BF16, 32, 768, G4V_MATH_FAST, &W,
                            &err) != G4V_OK)
            return 1;
        const g4v_gemm_kernel *kern = g4v_wmat_kernel(W);
        int kg = 768 / kern->kg;
        peak1 = ukr_alone(kern, kg, 1, 1, 0, 4000000 / kg);
        printf("micro-kernel %s alone, K = 768, L1-resident: %.1f GFLOP per CPU second\n",
               kern->name, peak1);
        /* the driver's inner loop: a task's A micro-panels from L2 against one B panel */
        static const int cases[][4] = {{48, 24, 1, 0},    {24, 24, 1, 0}, {48, 1, 8, 0},
                                       {48, 24, 8, 0},    {48, 24, 72, 0}, {48, 24, 8, 2304},
                                       {48, 24, 72, 2304}};
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            double g = ukr_alone(kern, cases[c][0], cases[c][1], cases[c][2], cases[c][3],
                                 4000000 / cases[c][0]);
            printf("  %d K groups, cycling %d A micro-panels and %d B panels, output %s: %.1f "
                   "(%.1f%%)\n",
                   cases[c][0], cases[c][1], cases[c][2], cases[c][3] ? "rows of Y" : "one tile",
                   g, 100 * g / peak1);
        }
        g4v_wmat_free(W);
    }
    printf("%-16s %2s %-12s %7s %7s | %7s %7s | %7s %7s | %7s\n", "shape MxK->N", "T", "variant",
           "GFLOP/s", "%peak", "cold 1x", "%peak", "CPU-s", "%ukr", "best");
    if (one_shape[0][0] > 0) shapes = one_shape, nshapes = 1;
    for (int s = 0; s < nshapes; s++) {
        int k = shapes[s][0], n = shapes[s][1];
        /* X and Y as the encoder's workspace holds them (g4v_malloc_large: huge pages where the
         * kernel gives them on request), or with plain malloc as bench_gemm does (--malloc) */
        size_t xb = sizeof(float) * (size_t)m * k, yb = sizeof(float) * (size_t)m * n;
        float *x = small_pages ? malloc(xb) : g4v_malloc_large(xb);
        float *y = small_pages ? malloc(yb) : g4v_malloc_large(yb), *y0 = malloc(yb);
        uint16_t *w = malloc(sizeof(uint16_t) * (size_t)n * k);
        if (!x || !y || !y0 || !w) return 1;
        for (size_t i = 0; i < (size_t)m * k; i++)
            x[i] = frand();
        for (size_t i = 0; i < (size_t)n * k; i++)
            w[i] = g4v_f32_to_bf16(frand() * 0.05f);
        g4v_wmat *W = NULL;
        g4v_err err;
        if (g4v_wmat_create(g4v_kernels_current(), w, G4V_DT_BF16, n, k, G4V_MATH_FAST, &W,
                            &err) != G4V_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 1;
        }
        int dp = !strcmp(g4v_wmat_kernel_name(W), "avx512-bf16dp");
        double flops = 2.0 * m * (double)n * k;
        g4v_gemm(pools[0], x, (size_t)k, W, y0, (size_t)n, (size_t)m, NULL);
        for (int ti = 0; ti < nthreads; ti++) {
            double tw[MAX_VARIANTS][MAX_REPS], tc[MAX_VARIANTS][MAX_REPS],
                tu[MAX_VARIANTS][MAX_REPS], unused;
            int T = threads[ti];
            for (int v = 0; v < nv; v++) {
                run_calls(pools[ti], T, x, m, k, W, y, n, &vars[v], 1, &unused); /* warm-up */
                if (memcmp(y, y0, sizeof(float) * (size_t)m * n)) {
                    fprintf(stderr, "bench_gemm_tune: %s at %d threads changed the result\n",
                            vars[v].name, threads[ti]);
                    return 1;
                }
            }
            for (int r = 0; r < reps; r++)
                for (int v = 0; v < nv; v++) {
                    tw[v][r] =
                        run_calls(pools[ti], T, x, m, k, W, y, n, &vars[v], calls, &tu[v][r]);
                    nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
                    tc[v][r] = run_calls(pools[ti], T, x, m, k, W, y, n, &vars[v], 1, &unused);
                }
            double peak = bench_peaks_get(&pk, threads[ti],
                                          dp             ? BENCH_DPBF16
                                          : width == 512 ? BENCH_FMA_ZMM
                                                         : BENCH_FMA_YMM);
            for (int v = 0; v < nv; v++) {
                double g = flops / bench_median(tw[v], reps) * 1e-9;
                double gc = flops / bench_median(tc[v], reps) * 1e-9;
                double gu = flops / bench_median(tu[v], reps) * 1e-9 / T;
                double gb = flops / tu[v][0] * 1e-9 / T; /* sorted by bench_median: the best */
                char shape[32];
                snprintf(shape, sizeof shape, "%dx%d->%d", m, k, n);
                printf("%-16s %2d %-12s %7.1f %6.1f%% | %7.1f %6.1f%% | %7.1f %6.1f%% | %6.1f%%\n",
                       shape, T, vars[v].name, g, 100 * g / peak, gc, 100 * gc / peak, gu,
                       100 * gu / peak1, 100 * gb / peak1);
            }
        }
        g4v_wmat_free(W);
        if (small_pages) {
            free(x);
            free(y);
        } else {
            g4v_free_large(x);
            g4v_free_large(y);
        }
        free(y0);
        free(w);
    }
    for (int t = 0; t < nthreads; t++)
        g4v_pool_destroy(pools[t]);
    return 0;
}
