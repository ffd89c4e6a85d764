#!/bin/sh
# bench-llama-backends.sh - make bench-llama-backends: the text model's prefill of one image (256
# rows) under the three builds of scripts/build-llama.sh, alternately in the same run
# (bench/llama_backends.py, docs/CHAT.md §6): the default (CPU backend variants chosen at run
# time), --bench (native) and --avx2 (the former default). One g4v, linked against the default,
# runs against each through LD_LIBRARY_PATH. The files are bench-chat's ($CHAT_BENCH: the
# real-shaped E2B text model, Q4_0, 2.6 GB, and a synthetic e2b vision tower, generated once).
# Builds each library the first time (~30 + 10 + 8 minutes on 2 cores). LLAMA_BACKENDS_REPS (5).
. scripts/make/lib.sh
d=${CHAT_BENCH:-$BUILD/bench-chat}
prefix=$(llama_prefix)
native=$(llama_prefix --bench)
avx2=$(llama_prefix --avx2)
configure "$BUILD" -DG4V_LLAMA_DIR=$prefix -DG4V_LLAMA_SRC=$prefix/src $CMAKE_FLAGS
compile "$BUILD" g4v_cli
chat_bench_files "$d" "$prefix/src"
uptime
$PYTHON bench/llama_backends.py --g4v "$BUILD/g4v" --lib "variants=$prefix/lib" \
    --lib "native=$native/lib" --lib "avx2=$avx2/lib" --lm "$d/lm-e2b-full.gguf" \
    --model "$d/vis-e2b" --image "$d/photo-768.jpg" --reps "${LLAMA_BACKENDS_REPS:-5}" \
    --threads "$JOBS" --json "$d/llama-backends.json"
