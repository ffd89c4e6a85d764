/* test_bench_peaks.c - the shared peak table of the benchmarks (bench/bench_peaks.h) with a
 * scripted measurement: a row is looked up by its own thread count only, a peak is the best of
 * its rounds (a 2-thread round whose threads ran one after the other, reading like the 1-thread
 * peak, is outvoted), rounds go round-robin over the thread counts, an inverted table is
 * remeasured and then marked suspect; and the real loops give a positive peak for what the CPU
 * has. The failure this guards: "179% of peak" for a 2-thread GEMM divided by a 1-thread peak. */
#include "../../bench/bench_peaks.h"

#include "base/cpu.h"
#include "test_util.h"

#include <string.h>

typedef struct {
    int calls, log[256];  /* thread count of each call, in order */
    const double *two;    /* the 2-thread reading of each round, as a multiple of the 1-thread */
    int ntwo, seen2;      /* readings in `two` (the last repeats); 2-thread rounds so far */
} script;

/* 2-thread rounds whose threads ran one after the other read like one thread (1.01): the first
 * and the last, so neither the first nor the last reading is the peak */
static const double outvoted[] = {1.01, 1.6, 1.98, 1.5, 1.01};
static const double inverted[] = {0.9};         /* below the 1-thread peak in every round */
static const double one_like[] = {1.01};        /* never better, but not below either */

static double scripted(void *arg, int threads, int kind) {
    script *s = arg;
    if (s->calls < 256) s->log[s->calls] = threads;
    s->calls++;
    double base = 100.0 * (kind + 1);
    if (threads == 1) return base * (kind == 0 && s->calls % 4 == 1 ? 0.97 : 1.0);
    if (kind == 0) s->seen2++;
    int i = s->seen2 - 1 < s->ntwo ? s->seen2 - 1 : s->ntwo - 1;
    return base * s->two[i];
}

int main(void) {
    bench_peaks p;
    /* a 2-thread round that reads like one thread is outvoted by the best of the rounds */
    script s = {.two = outvoted, .ntwo = 5};
    CHECK(bench_peaks_measure_with(&p, (const int[]){2, 1, 2}, 3, 5, scripted, &s) == 0);
    CHECK(p.n == 2 && p.threads[0] == 1 && p.threads[1] == 2); /* sorted, duplicate dropped */
    CHECK(p.rounds == 5 && !p.suspect);
    for (int k = 0; k < BENCH_PEAK_KINDS; k++) {
        double base = 100.0 * (k + 1);
        CHECK_MSG(bench_peaks_get(&p, 1, k) == base, "kind %d: 1-thread peak %g", k,
                  bench_peaks_get(&p, 1, k));
        /* the best 2-thread round (the third), never the 1-thread-like first or last */
        CHECK_MSG(bench_peaks_get(&p, 2, k) == 1.98 * base, "kind %d: 2-thread peak %g", k,
                  bench_peaks_get(&p, 2, k));
    }
    /* only the measured thread counts are answered; no fallback to another row */
    CHECK(bench_peaks_get(&p, 3, BENCH_FMA_ZMM) == 0 && bench_peaks_get(&p, 0, 0) == 0);
    CHECK(bench_peaks_get(&p, 2, BENCH_PEAK_KINDS) == 0);
    /* round-robin: each round measures 1 then 2 threads, so load hits both alike */
    CHECK(s.calls == 5 * 2 * BENCH_PEAK_KINDS);
    for (int c = 0; c < s.calls; c++)
        CHECK_MSG(s.log[c] == (c / BENCH_PEAK_KINDS % 2 ? 2 : 1), "call %d on %d threads", c,
                  s.log[c]);

    /* a 2-thread peak below the 1-thread one: remeasured up to 3x the rounds, then suspect */
    script late = {.two = inverted, .ntwo = 1};
    CHECK(bench_peaks_measure_with(&p, (const int[]){1, 2}, 2, 5, scripted, &late) == 0);
    CHECK_MSG(p.suspect && p.rounds == 15, "suspect %d after %d rounds", p.suspect, p.rounds);
    script fixes = {.two = one_like, .ntwo = 1}; /* 1.01 x is not below 1.0 x: not inverted */
    CHECK(bench_peaks_measure_with(&p, (const int[]){1, 2}, 2, 3, scripted, &fixes) == 0);
    CHECK(!p.suspect && p.rounds == 3);

    /* bad arguments */
    CHECK(bench_peaks_measure_with(&p, (const int[]){0}, 1, 3, scripted, &s) == -1);
    CHECK(bench_peaks_measure_with(&p, (const int[]){1}, 1, 0, scripted, &s) == -1);
    int nine[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    CHECK(bench_peaks_measure_with(&p, nine, 9, 1, scripted, &s) == -1);

    /* the real loops: a positive peak for each instruction this CPU has, 0 for the others */
    CHECK(bench_peaks_measure(&p, (const int[]){1}, 1, 1) == 0);
    unsigned f = g4v_cpu_features();
    CHECK((bench_peaks_get(&p, 1, BENCH_FMA_YMM) > 0) == !!(f & G4V_CPU_AVX2));
    CHECK((bench_peaks_get(&p, 1, BENCH_FMA_ZMM) > 0) == !!(f & G4V_CPU_AVX512));
    CHECK((bench_peaks_get(&p, 1, BENCH_DPBF16) > 0) == !!(f & G4V_CPU_AVX512BF16));
    bench_peaks_print(&p, stdout);
    return test_summary("test_bench_peaks");
}
