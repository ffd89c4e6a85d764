#!/bin/sh
# bench-load.sh - make bench-load: what a process pays to start, on the synthetic e4b of `make
# bench` (bench/bench_load.c): model load time, peak RSS against the mapped weights, a one-shot
# `g4v encode` against a warm encode, two processes' PSS on one checkpoint; each against its
# target (issue 37: BF16 weights used in place). LOAD_ARGS: --threads, --reps, --budget.
. scripts/make/lib.sh
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" bench_load g4v_cli
bench_model
"$BUILD/bench/bench_load" "$BENCH_MODEL" "$BUILD/g4v" ${LOAD_ARGS:---threads 2 --reps 5}
