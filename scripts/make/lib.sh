# lib.sh - sourced by the scripts of the make targets (scripts/make/*.sh): the settings the
# Makefile passes in the environment (its RUN: BUILD, JOBS, CMAKE_FLAGS, PYTHON, MAKE) with the
# Makefile's defaults, and the CMake steps the targets share. Each step prints its command first,
# as make printed the recipe lines these scripts replace. CMAKE_FLAGS is split at spaces, as in
# the recipes; the scripts run in the repository root (where make runs them).
set -e
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
CMAKE_FLAGS=${CMAKE_FLAGS-}
PYTHON=${PYTHON:-/usr/bin/python3}
MAKE=${MAKE:-make}

# configure DIR FLAGS...: configure a build directory (every target configures through it).
configure() {
    dir=$1
    shift
    echo "cmake -S . -B $dir $*"
    cmake -S . -B "$dir" "$@"
}

# compile DIR [TARGETS...]: build it, or only TARGETS.
compile() {
    dir=$1
    shift
    if [ $# -gt 0 ]; then
        echo "cmake --build $dir -j $JOBS --target $*"
        cmake --build "$dir" -j "$JOBS" --target "$@"
    else
        echo "cmake --build $dir -j $JOBS"
        cmake --build "$dir" -j "$JOBS"
    fi
}

# llama_prefix [ARGS...]: the install prefix of the llama.cpp build (scripts/build-llama.sh builds
# it the first time, then reuses it).
llama_prefix() { scripts/build-llama.sh "$@" | tail -1; }

# The synthetic e4b checkpoint of the benchmarks ($BENCH_MODEL), generated on first use.
BENCH_MODEL=${BENCH_MODEL:-$BUILD/bench-e4b}
bench_model() {
    [ -f "$BENCH_MODEL/config.json" ] ||
        $PYTHON tools/gen_checkpoint.py "$BENCH_MODEL" --config e4b --seed 0
}

# The same tower made all-sharp ($BENCH_MODEL_SHARP): q/k norm weights x2, sharpness ~4 in every
# layer (threshold 2.0, docs/NUMERICS.md §6.5), so FAST runs every layer as PRECISE.
BENCH_MODEL_SHARP=${BENCH_MODEL_SHARP:-$BUILD/bench-e4b-sharp}
bench_model_sharp() {
    [ -f "$BENCH_MODEL_SHARP/config.json" ] ||
        $PYTHON tools/gen_checkpoint.py "$BENCH_MODEL_SHARP" --config e4b --seed 0 --qk-scale 2
}

# chat_bench_files DIR LLAMA_SRC: the files make bench-chat and bench-llama-backends share, each
# generated on first use: the real-E2B-shaped Q4_0 text model (random weights, llama.cpp's Gemma
# 4 vocabulary), the synthetic e2b tower and a 768x768 image (256 rows).
chat_bench_files() {
    mkdir -p "$1"
    [ -f "$1/lm-e2b-full.gguf" ] || $PYTHON tools/gen_lm_gguf.py "$1/lm-e2b-full.gguf" \
        --config e2b-full --layers 35 --quant q4_0 --gguf-py "$2/gguf-py" \
        --vocab "$2/models/ggml-vocab-gemma-4.gguf"
    [ -f "$1/vis-e2b/config.json" ] || $PYTHON tools/gen_checkpoint.py "$1/vis-e2b" --config e2b \
        --seed 1 --no-decoys
    [ -f "$1/photo-768.jpg" ] || $PYTHON examples/make_demo_image.py "$1/photo-768.jpg" 768
}
