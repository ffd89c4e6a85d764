#!/bin/sh
# bench-tune.sh - make bench-tune: the GEMM driver's blocking variants side by side
# (bench/bench_gemm_tune.c: % of the peak of the same run, wall and CPU time, the micro-kernel's
# ceiling, the pool's wake-up; TUNE_ARGS overrides the variants) and the attention kernels at
# L = 2304 and 10,080 on 1 and 2 threads. To compare two builds alternately (GEMM, attention,
# encoder): bench/ab_bench.sh.
. scripts/make/lib.sh
TUNE_ARGS=${TUNE_ARGS:---threads 1,2 --reps 9 --var pf=-1 --var pf=1 --var kc=24}
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" bench_gemm_tune bench_attention
"$BUILD/bench/bench_gemm_tune" $TUNE_ARGS
"$BUILD/bench/bench_attention" --L 2304,10080 --threads 1
"$BUILD/bench/bench_attention" --L 2304,10080 --threads 2
