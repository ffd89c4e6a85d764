/* bench_peaks.h - the one table of measured instruction peaks that every benchmark divides by
 * (bench_gemm, bench_encoder, bench_attention, bench_peak).
 *
 * A peak is the best of several short measurements of each thread count, taken round-robin over
 * the thread counts so that a burst of load elsewhere hits them all alike; a row is always looked
 * up by its thread count, so a 2-thread time is never divided by a 1-thread peak. A measurement
 * can only come out low (load, a thread that started late), never above what the instruction
 * gives, so the best of N tends to the true peak from below; a T-thread peak below a peak of
 * fewer threads is a failed measurement (the threads did not run together): those rounds are
 * repeated, and if it persists the table is marked `suspect` and the benchmarks say so.
 */
#ifndef G4V_BENCH_PEAKS_H
#define G4V_BENCH_PEAKS_H

#include <stdio.h>

enum { BENCH_FMA_YMM, BENCH_FMA_ZMM, BENCH_DPBF16, BENCH_PEAK_KINDS };
enum { BENCH_PEAK_MAX_THREADS = 8 }; /* thread counts in one table */

typedef struct {
    int n;                                        /* thread counts measured */
    int threads[BENCH_PEAK_MAX_THREADS];          /* ascending */
    double gflops[BENCH_PEAK_MAX_THREADS][BENCH_PEAK_KINDS]; /* best of `rounds`; 0: absent */
    int rounds;                                   /* rounds taken (more when repeated) */
    int suspect; /* a peak stayed below one of fewer threads: the machine is too busy */
} bench_peaks;

/* One measurement in GFLOP/s of instruction `kind` on `threads` threads at once; 0 when the CPU
 * lacks it. bench_peaks_measure uses the real loops (bench_gemm_peak.c); tests pass a fake. */
typedef double (*bench_peak_fn)(void *arg, int threads, int kind);

/* Fills p for the thread counts threads[0..n) (any order, duplicates dropped, at most
 * BENCH_PEAK_MAX_THREADS) with the best of `rounds` measurements each, up to 2 * rounds more
 * while a peak is below one of fewer threads. Returns 0, or -1 on bad arguments. */
int bench_peaks_measure_with(bench_peaks *p, const int *threads, int n, int rounds,
                             bench_peak_fn fn, void *arg);
/* The same with the real measurement loops, a thread pool per thread count; -1 also when a pool
 * cannot be started. */
int bench_peaks_measure(bench_peaks *p, const int *threads, int n, int rounds);

/* The peak of `kind` at exactly `threads` threads; 0 when that thread count was not measured or
 * the CPU lacks the instruction (never the peak of another thread count). */
double bench_peaks_get(const bench_peaks *p, int threads, int kind);

/* "FMA ymm", "FMA zmm", "vdpbf16ps". */
const char *bench_peak_kind_name(int kind);

/* Prints the table as one line per thread count, "peaks, N thread(s) (best of R): FMA ymm G, FMA
 * zmm G, vdpbf16ps G GFLOP/s", plus a warning line when suspect. */
void bench_peaks_print(const bench_peaks *p, FILE *f);

/* Exits with the library's message when G4V_ISA has a value the library refuses (the benchmarks
 * call the kernels directly, below the API's check). */
void bench_require_isa(const char *prog);

#endif
