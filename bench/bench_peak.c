/* bench_peak.c - the instruction peaks of this CPU per thread count, one machine-readable line
 * each: what bench/check_speed_targets.py divides by to say how far a measured time is from the
 * arithmetic limit (the same table, bench_peaks.c, that bench_gemm, bench_attention and
 * bench_encoder print).
 *
 * usage: bench_peak [--threads N[,N...]] [--rounds R]   (default 1; 5)
 * prints: threads=N fma_ymm=G fma_zmm=G vdpbf16ps=G rounds=R suspect=0|1
 *         one line per thread count (GFLOP/s, best of R per thread count; 0: not on this CPU)
 */
#include "bench_peaks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int threads[BENCH_PEAK_MAX_THREADS] = {1}, nt = 1, rounds = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            const char *s = argv[++i];
            for (nt = 0; nt < BENCH_PEAK_MAX_THREADS && *s;) {
                char *end;
                long t = strtol(s, &end, 10);
                if (end == s || t < 1 || t > 256) {
                    fprintf(stderr, "bench_peak: --threads takes counts 1..256 separated by ','\n");
                    return 2;
                }
                threads[nt++] = (int)t;
                s = *end == ',' ? end + 1 : end;
                if (*end && *end != ',') {
                    fprintf(stderr, "bench_peak: --threads: unexpected '%s'\n", end);
                    return 2;
                }
            }
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
            if (rounds < 1 || rounds > 100) {
                fprintf(stderr, "bench_peak: --rounds must be 1..100\n");
                return 2;
            }
        } else {
            fprintf(stderr,
                    "usage: bench_peak [--threads N[,N...]] [--rounds R]\n"
                    "prints the measured FMA (ymm, zmm) and vdpbf16ps peaks in GFLOP/s, one line\n"
                    "per thread count, each the best of R rounds (default 5) taken round-robin\n");
            return strcmp(argv[i], "-h") && strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    bench_require_isa("bench_peak");
    bench_peaks pk;
    if (bench_peaks_measure(&pk, threads, nt, rounds)) {
        fprintf(stderr, "bench_peak: cannot start the threads\n");
        return 1;
    }
    for (int i = 0; i < pk.n; i++)
        printf("threads=%d fma_ymm=%.1f fma_zmm=%.1f vdpbf16ps=%.1f rounds=%d suspect=%d\n",
               pk.threads[i], pk.gflops[i][BENCH_FMA_YMM], pk.gflops[i][BENCH_FMA_ZMM],
               pk.gflops[i][BENCH_DPBF16], pk.rounds, pk.suspect);
    return 0;
}
