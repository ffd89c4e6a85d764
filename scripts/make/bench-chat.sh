#!/bin/sh
# bench-chat.sh - make bench-chat (part of make bench; BENCH_CHAT=0 leaves it out): time to first
# token against llama.cpp's own programs on the same files (docs/CHAT.md §5.4). First a 5-turn
# conversation about one image through the official OpenAI Python client (bench/chat_turns.py; the
# client in a venv of scripts/openai-env.sh): g4v serve --lm with prompt reuse, without it
# (--no-prompt-reuse, when the binary has it) and llama-server with its prompt cache, one at a
# time, CHAT_TURNS_REPS (3) conversations each in turn (CHAT_TURNS_MAX_TOKENS, 32), and each turn
# against the time to prefill its new text alone. Then four conversations at once, --lm-slots 4
# against llama-server -np 4 (bench/chat_batch.py: aggregate tokens/s, time between tokens, a
# late arrival's TTFT; CHAT_BATCH_REPS, 3; CHAT_BENCH_BATCH=0 skips it), after libllama's own
# ceiling for it (bench/llama_steps.c: one decode call for 1, 2, 4 sequences, no server). Then
# the one-shot g4v chat against llama-mtmd-cli (bench/chat_ttft.py, CHAT_BENCH_REPS, 5;
# CHAT_BENCH_ONESHOT=0 skips it). All link one native libllama (scripts/build-llama.sh --bench, ~15 min once, which also
# builds both llama.cpp programs); the text model has the real E2B shapes with random Q4_0
# weights (generated once into $CHAT_BENCH), the vision model is a synthetic e2b tower as an F16
# mmproj, the image 768x768 (256 rows on both sides), CHAT_BENCH_THREADS (2) threads everywhere.
. scripts/make/lib.sh
d=${CHAT_BENCH:-$BUILD/bench-chat}
threads=${CHAT_BENCH_THREADS:-2}
prefix=$(llama_prefix --bench)
src=$(scripts/build-llama.sh --src | tail -1)
py=$(scripts/openai-env.sh | tail -1)
configure "$BUILD-chatbench" -DG4V_LLAMA_DIR=$prefix -DG4V_LLAMA_SRC=$src $CMAKE_FLAGS
compile "$BUILD-chatbench" g4v_cli llama_steps
chat_bench_files "$d" "$src"
[ -f "$d/mmproj-e2b-f16.gguf" ] || $PYTHON tools/gguf_from_checkpoint.py "$d/vis-e2b" \
    "$d/mmproj-e2b-f16.gguf" --outtype f16
[ -f "$d/warm-640.jpg" ] || $PYTHON examples/make_demo_image.py "$d/warm-640.jpg" 640
uptime
$py bench/chat_turns.py --g4v "$BUILD-chatbench/g4v" --llama-server "$prefix/bin/llama-server" \
    --lm "$d/lm-e2b-full.gguf" --mmproj "$d/mmproj-e2b-f16.gguf" --image "$d/photo-768.jpg" \
    --warmup-image "$d/warm-640.jpg" --reps "${CHAT_TURNS_REPS:-3}" --threads "$threads" \
    --max-tokens "${CHAT_TURNS_MAX_TOKENS:-32}" --json "$d/turns.json"
if [ "${CHAT_BENCH_BATCH:-1}" != 0 ]; then
    uptime
    "$BUILD-chatbench/bench/llama_steps" "$d/lm-e2b-full.gguf" "$threads" | tee "$d/steps.txt"
    $PYTHON bench/chat_batch.py make-images "$d/photo-768.jpg" "$d/batch-images"
    $py bench/chat_batch.py --g4v "$BUILD-chatbench/g4v" --llama-server "$prefix/bin/llama-server" \
        --lm "$d/lm-e2b-full.gguf" --mmproj "$d/mmproj-e2b-f16.gguf" --images "$d/batch-images" \
        --warmup-image "$d/warm-640.jpg" --slots 4 --reps "${CHAT_BATCH_REPS:-3}" \
        --threads "$threads" --max-tokens 128 --json "$d/batch.json"
fi
if [ "${CHAT_BENCH_ONESHOT:-1}" != 0 ]; then
    uptime
    $PYTHON bench/chat_ttft.py --g4v "$BUILD-chatbench/g4v" \
        --mtmd-cli "$prefix/bin/llama-mtmd-cli" --lm "$d/lm-e2b-full.gguf" \
        --mmproj "$d/mmproj-e2b-f16.gguf" --image "$d/photo-768.jpg" --reps "${CHAT_BENCH_REPS:-5}" \
        --threads "$threads" --json "$d/ttft.json"
fi
