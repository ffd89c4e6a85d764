#!/bin/sh
# bench-report.sh - make bench-report: one markdown report of this machine (bench/report.sh): CPU
# flags, kernel table, GEMM per ISA level and attention per variant against measured peaks,
# encoder seconds, RSS and load time at 70/280/1120 tokens on 1 and 2 threads, accuracy of both
# modes against the float64 reference, and the speed and memory targets with their floors at 100%
# of the measured peak (bench/check_speed_targets.py). ~10 minutes on a 2-core Zen 4 (longer
# without AVX512-BF16); REPORT_QUICK=1 for a few minutes.
. scripts/make/lib.sh
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD"
BUILD=$BUILD PYTHON=$PYTHON BENCH_MODEL=$BENCH_MODEL BENCH_LLAMA=${BENCH_LLAMA-} bench/report.sh
