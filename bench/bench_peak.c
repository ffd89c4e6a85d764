/* bench_peak.c - the instruction peaks of this CPU on N threads at once, as one machine-readable
 * line: what bench/check_speed_targets.py divides by to say how far a measured time is from the
 * arithmetic limit (the same measurement bench_gemm, bench_attention and bench_encoder print).
 *
 * usage: bench_peak [--threads N]   (default 1)
 * prints: threads=N fma_ymm=G fma_zmm=G vdpbf16ps=G   (GFLOP/s, best of 5; 0: not on this CPU)
 */
#include "bench_gemm.h"

#include "base/pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int threads = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_peak [--threads N]\n"
                            "prints the measured FMA (ymm, zmm) and vdpbf16ps peaks in GFLOP/s\n");
            return strcmp(argv[i], "-h") && strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (threads < 1 || threads > 256) {
        fprintf(stderr, "bench_peak: --threads must be 1..256\n");
        return 2;
    }
    g4v_pool *pool = NULL;
    g4v_err err;
    if (threads > 1 && g4v_pool_create(threads, &pool, &err)) {
        fprintf(stderr, "bench_peak: cannot start %d threads: %s\n", threads, err.msg);
        return 1;
    }
    double p256, p512, pdp;
    bench_peaks_best(pool, threads, 5, &p256, &p512, &pdp);
    printf("threads=%d fma_ymm=%.1f fma_zmm=%.1f vdpbf16ps=%.1f\n", threads, p256, p512, pdp);
    g4v_pool_destroy(pool);
    return 0;
}
