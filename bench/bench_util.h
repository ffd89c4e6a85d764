/* bench_util.h - the timing helpers every benchmark here shares: a monotonic clock in seconds and
 * the median of a set of repetitions (the figure we report on a shared, noisy machine). */
#ifndef G4V_BENCH_UTIL_H
#define G4V_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

static inline double bench_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v[0..n) in place and returns its median (the mean of the middle two for even n). */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof v[0], bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
