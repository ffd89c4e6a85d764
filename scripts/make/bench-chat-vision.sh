#!/bin/sh
# bench-chat-vision.sh - make bench-chat-vision: `g4v serve --lm --lm-slots 4`, default threads,
# four conversations each sending a new image at once against one alone, a baseline g4v against
# this one in the same run, taking turns (bench/chat_vision_budget.py; docs/SERVICE.md
# "Threads"). The baseline is built from CHAT_VISION_BASE (default 26ea5c6, before the chat images
# went through the encode contexts and the CPU gate): its tree exported with git archive into
# $BUILD-chatvision-base/src, configured and built there (once per commit). Both link the
# libllama of scripts/build-llama.sh. The files are make bench-chat's (chat_bench_files: the
# real-E2B-shaped Q4_0 text model, the synthetic e2b tower, a 768x768 photo). CHAT_VISION_ARGS:
# --max-tokens (16), --reps (2), --json OUT.
. scripts/make/lib.sh
base=${CHAT_VISION_BASE:-26ea5c6}
d=${CHAT_BENCH:-$BUILD/bench-chat}
prefix=$(llama_prefix)
src=$(scripts/build-llama.sh --src | tail -1)
configure "$BUILD" -DG4V_LLAMA_DIR=$prefix -DG4V_LLAMA_SRC=$src $CMAKE_FLAGS
compile "$BUILD" g4v_cli
b="$BUILD-chatvision-base"
sha=$(git rev-parse "$base")
if [ "$(cat "$b/src.commit" 2>/dev/null)" != "$sha" ]; then
    rm -rf "$b/src"
    mkdir -p "$b/src"
    git archive "$sha" | tar -x -C "$b/src"
    echo "$sha" > "$b/src.commit"
fi
echo "cmake -S $b/src -B $b/build -DG4V_LLAMA_DIR=$prefix -DG4V_LLAMA_SRC=$src"
cmake -S "$b/src" -B "$b/build" -DG4V_LLAMA_DIR=$prefix -DG4V_LLAMA_SRC=$src
compile "$b/build" g4v_cli
chat_bench_files "$d" "$src"
uptime
$PYTHON bench/chat_vision_budget.py --g4v "$BUILD/g4v" --base "$b/build/g4v" \
    --model "$d/vis-e2b" --lm "$d/lm-e2b-full.gguf" --image "$d/photo-768.jpg" \
    --reps 2 ${CHAT_VISION_ARGS:-}
uptime
