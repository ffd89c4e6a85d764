#!/bin/sh
# bench-serve-batch.sh - make bench-serve-batch: `g4v serve` with 8 clients posting 70-token
# images at once, the synthetic e4b of `make bench`: one request at a time, --batch 8
# (g4v_encode_batch over what waits), and contexts x 1 thread, servers taking turns in one run
# (bench/serve_batch.py; docs/SERVICE.md "Batching"). SERVE_BATCH_ARGS: --clients, --requests,
# --tokens, --threads, --reps.
. scripts/make/lib.sh
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" g4v_cli
bench_model
uptime
$PYTHON bench/serve_batch.py --g4v "$BUILD/g4v" --model "$BENCH_MODEL" ${SERVE_BATCH_ARGS:-}
