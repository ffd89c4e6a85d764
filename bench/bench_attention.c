/* bench_attention.c - GFLOP/s of each attention variant on the encoder's shapes.
 *
 * usage: bench_attention [--L 576,2304] [--heads 12] [--kv-heads 12] [--head-dim 64]
 *                        [--threads 1] [--reps 5] [--variant NAME] [--row-major]
 * K and V are head-major ([Hkv][L][d], as the encoder writes them; the copy is not timed); --row-major passes them as [L, Hkv*d] rows instead, which measures what the
 * head-major layout buys. q is strided as the encoder leaves it ([L, H*d] rows); q, k and v are
 * random in [-2, 2) so the
 * softmax is neither flat nor one-hot. FLOPs are 4*L^2*H*d (docs/NUMERICS.md §7). Prints one
 * markdown row per (L, variant): median seconds of --reps runs after one warm-up, GFLOP/s, and the
 * ratio to the portable kernel measured in the same run. The bf16 variant runs twice: packing
 * K and V itself per task, and with them prepared once beforehand (its descriptor's prepare_kv,
 * not timed), which is how the encoder calls it.
 */
#include "bench_gemm.h"
#include "bench_peaks.h"
#include "bench_util.h"

#include "base/alloc.h"
#include "base/cpu.h"
#include "base/pool.h"
#include "kernels/dispatch.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* [L, heads*d] rows (row stride ld) copied head-major into dst [heads][L][d]. */
static void split_heads(const float *src, size_t ld, float *dst, int L, int heads, int d) {
    for (int r = 0; r < L; r++)
        for (int h = 0; h < heads; h++)
            memcpy(dst + ((size_t)h * L + r) * d, src + r * ld + (size_t)h * d,
                   (size_t)d * sizeof(float));
}

static int parse_list(const char *s, int *out, int max) {
    int n = 0;
    while (s && *s && n < max) {
        out[n++] = atoi(s);
        s = strchr(s, ',');
        if (s) s++;
    }
    return n;
}

static double time_variant(g4v_attention_fn *fn, g4v_pool *pool, const g4v_attn_args *a, int reps) {
    double t[64];
    if (reps > 64) reps = 64;
    fn(pool, a); /* warm-up: first touch of out and scratch */
    for (int r = 0; r < reps; r++) {
        double t0 = bench_now();
        fn(pool, a);
        t[r] = bench_now() - t0;
    }
    return bench_median(t, reps);
}

int main(int argc, char **argv) {
    int Ls[16] = {576, 2304}, nL = 2, H = 12, Hkv = 12, d = 64, threads = 1, reps = 5;
    const char *only = NULL;
    int row_major = 0;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--L") && v)
            nL = parse_list(v, Ls, 16), i++;
        else if (!strcmp(argv[i], "--heads") && v)
            H = atoi(v), i++;
        else if (!strcmp(argv[i], "--kv-heads") && v)
            Hkv = atoi(v), i++;
        else if (!strcmp(argv[i], "--head-dim") && v)
            d = atoi(v), i++;
        else if (!strcmp(argv[i], "--threads") && v)
            threads = atoi(v), i++;
        else if (!strcmp(argv[i], "--reps") && v)
            reps = atoi(v), i++;
        else if (!strcmp(argv[i], "--variant") && v)
            only = v, i++;
        else if (!strcmp(argv[i], "--row-major"))
            row_major = 1;
        else {
            fprintf(stderr, "usage: bench_attention [--L 576,2304] [--heads 12] [--kv-heads 12] "
                            "[--head-dim 64] [--threads 1] [--reps 5] [--variant NAME] "
                            "[--row-major]\n");
            return !strcmp(argv[i], "--help") ? 0 : 2;
        }
    }
    if (H <= 0 || Hkv <= 0 || H % Hkv || d <= 0 || d % 4 || threads <= 0 || reps <= 0) {
        fprintf(stderr,
                "bench_attention: need H %% Hkv == 0, d a multiple of 4, positive counts\n");
        return 2;
    }
    bench_require_isa("bench_attention");
    /* Every registered attention variant the CPU runs, portable first (the ratio's base); the
     * FAST-only ones (bf16 products, chosen for FAST models) too. */
    struct {
        const char *name;
        const g4v_attention_kernel *kern;
    } vars[16];
    int nvars = 0, nreg;
    const g4v_kernel_variant *reg = g4v_kernel_variants(&nreg);
    for (int i = nreg - 1; i >= 0 && nvars < 16; i--)
        if (reg[i].family == G4V_KF_ATTENTION &&
            !(reg[i].needs & ~(g4v_cpu_features() | G4V_KERNEL_FAST_ONLY))) {
            vars[nvars].name = reg[i].isa;
            vars[nvars++].kern = reg[i].impl.attention;
        }
    g4v_pool *pool = NULL;
    g4v_err err;
    if (threads > 1 && g4v_pool_create(threads, &pool, &err)) {
        fprintf(stderr, "bench_attention: cannot start %d threads: %s\n", threads, err.msg);
        return 1;
    }
    /* the instruction peaks each variant multiplies with, the shared table (bench_peaks.h) */
    bench_peaks pk;
    if (bench_peaks_measure(&pk, &threads, 1, 5)) return 1;
    double p256 = bench_peaks_get(&pk, threads, BENCH_FMA_YMM),
           p512 = bench_peaks_get(&pk, threads, BENCH_FMA_ZMM),
           pdp = bench_peaks_get(&pk, threads, BENCH_DPBF16);
    bench_peaks_print(&pk, stdout);
    printf("\n");
    printf("| L | H | Hkv | d | threads | variant | median s (%d reps) | GFLOP/s | %% of peak | "
           "vs portable |\n",
           reps);
    printf("|---|---|---|---|---|---|---|---|---|---|\n");
    for (int li = 0; li < nL; li++) {
        int L = Ls[li];
        size_t qd = (size_t)H * d, kvd = (size_t)Hkv * d;
        float *q = g4v_malloc_large((size_t)L * qd * sizeof(float));
        float *k = g4v_malloc_large((size_t)L * kvd * sizeof(float));
        float *v = g4v_malloc_large((size_t)L * kvd * sizeof(float));
        float *out = g4v_malloc_large((size_t)L * qd * sizeof(float));
        size_t scr_n = (size_t)threads * g4v_attention_scratch_floats(d) + 2 * (size_t)L * kvd;
        float *scr = g4v_malloc_large(scr_n * sizeof(float));
        if (!q || !k || !v || !out || !scr) {
            fprintf(stderr, "bench_attention: out of memory at L = %d\n", L);
            return 1;
        }
        uint64_t s = 0x9e3779b97f4a7c15ull;
        for (size_t i = 0; i < (size_t)L * qd; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            q[i] = (float)((s >> 40) * (4.0 / 16777216.0) - 2.0);
        }
        for (size_t i = 0; i < (size_t)L * kvd; i++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            k[i] = (float)((s >> 40) * (4.0 / 16777216.0) - 2.0);
            v[i] = (float)((s & 0xffffff) * (4.0 / 16777216.0) - 2.0);
        }
        g4v_attn_args a = {
            .q = q, .k = k, .v = v, .out = out, .nq = L, .nk = L, .H = H, .Hkv = Hkv, .d = d};
        a.ldq = a.ldo = qd;
        a.ldk = a.ldv = kvd;
        a.scale = 1.0f;
        a.scratch = scr;
        if (!row_major) {
            float *hk = scr + (size_t)threads * g4v_attention_scratch_floats(d);
            float *hv = hk + (size_t)L * kvd;
            split_heads(k, kvd, hk, L, Hkv, d);
            split_heads(v, kvd, hv, L, Hkv, d);
            a.k = hk, a.v = hv, a.ldk = a.ldv = (size_t)d, a.hsk = a.hsv = (size_t)L * d;
        }
        double flop = 4.0 * L * (double)L * H * d, t_port = 0;
        for (int vi = 0; vi < nvars; vi++) {
            if (only && strcmp(only, vars[vi].name)) continue;
            const g4v_attention_kernel *kern = vars[vi].kern;
            double t = time_variant(kern->run, pool, &a, reps);
            if (vi == 0) t_port = t;
            char ratio[32] = "-", pct[48] = "-"; /* no portable run with --variant */
            if (t_port > 0) snprintf(ratio, sizeof ratio, "%.2fx", t_port / t);
            const char *nm = vars[vi].name;
            double peak = !strcmp(nm, "avx2")            ? p256
                          : !strcmp(nm, "avx512")        ? p512
                          : !strcmp(nm, "avx512-bf16dp") ? pdp
                                                         : 0;
            if (peak > 0)
                snprintf(pct, sizeof pct, "%.0f%% of %.0f", 100 * flop / t * 1e-9 / peak, peak);
            printf("| %d | %d | %d | %d | %d | %s | %.4f | %.1f | %s | %s |\n", L, H, Hkv, d,
                   threads, nm, t, flop / t * 1e-9, pct, ratio);
            fflush(stdout);
            if (!kern->prepare_kv) continue;
            /* again with K and V prepared once, outside the timing, as the encoder does once per
             * layer for all its query chunks */
            void *kvp = g4v_malloc_large(kern->kv_bytes(L, Hkv, d));
            if (!kvp) continue;
            kern->prepare_kv(pool, &a, 0, L, kvp);
            g4v_attn_args ap = a;
            ap.kv_prepared = kvp;
            double tp = time_variant(kern->run, pool, &ap, reps);
            if (t_port > 0) snprintf(ratio, sizeof ratio, "%.2fx", t_port / tp);
            if (peak > 0)
                snprintf(pct, sizeof pct, "%.0f%% of %.0f", 100 * flop / tp * 1e-9 / peak, peak);
            printf("| %d | %d | %d | %d | %d | %s, K/V prepared | %.4f | %.1f | %s | %s |\n", L, H,
                   Hkv, d, threads, nm, tp, flop / tp * 1e-9, pct, ratio);
            fflush(stdout);
            g4v_free_large(kvp);
        }
        g4v_free_large(q), g4v_free_large(k), g4v_free_large(v), g4v_free_large(out);
        g4v_free_large(scr);
    }
    g4v_pool_destroy(pool);
    return 0;
}
