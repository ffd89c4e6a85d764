#!/bin/sh
# bench-llama.sh - make bench-llama (part of make bench; BENCH_LLAMA=0 leaves it out): llama.cpp's
# gemma4v encoder (llama-mtmd-cli, native build of scripts/build-llama.sh --bench, ~10 min once)
# against ours on the same synthetic checkpoint ($BENCH_MODEL, converted to a bf16 mmproj GGUF)
# and a 768x768 PNG, alternately in the same run, BENCH_LLAMA_THREADS (1,2) threads,
# BENCH_LLAMA_REPS (3) repetitions; prints the ratio (bench/llama_peer.sh).
. scripts/make/lib.sh
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" g4v_cli
bench_model
uptime
PYTHON=$PYTHON bench/llama_peer.sh "$BUILD" "$BENCH_MODEL" "${BENCH_LLAMA_THREADS:-1,2}" \
    "${BENCH_LLAMA_REPS:-3}"
