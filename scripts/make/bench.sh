#!/bin/sh
# bench.sh - make bench: whole-encoder table (bench/bench_encoder.c) vs the PyTorch peer
# (bench/torch_peer.py) on a synthetic e4b checkpoint ($BENCH_MODEL, generated once). BENCH_ARGS
# picks budgets, threads and repetitions (e.g. BENCH_ARGS="--budgets 70,140,280 --threads 1,2").
# bench-deps installs the peers (Debian's python3-torch and libopenblas0-pthread, libdnnl-dev for
# bench_gemm; never needed by the tests). OpenBLAS is loaded for the peer via LD_LIBRARY_PATH, and
# the environment's OpenBLAS caps are unset for it (bench/README.md, "The PyTorch peer"; BENCH_PEER
# overrides the peer's command). Without torch the peer columns read "-". Beside it, in the same
# run, the PyPI PyTorch peer (bench/hf_peer.py: transformers' own Gemma4VisionModel, bf16 and f32,
# sdpa, the PyPI wheel with oneDNN, in the venv of scripts/hf-env.sh, made once: ~5 GB), as a
# Hugging Face user runs the tower: its "HF" columns are the ratio we publish (BENCH_HF=0 leaves
# it out; malloc on huge pages for it too, as for the Debian peer). After each thread count's
# table, the same points on an all-sharp tower ($BENCH_MODEL_SHARP: --qk-scale 2, every layer
# above the sharpness threshold, so FAST runs all of them as PRECISE, docs/NUMERICS.md §6.5)
# beside the ordinary one (BENCH_SHARP=0 leaves it out). Then make bench-llama
# (llama.cpp's encoder on the same checkpoint; BENCH_LLAMA=0 skips it) and make bench-chat
# (BENCH_CHAT=0 skips it).
. scripts/make/lib.sh
BENCH_PEER=${BENCH_PEER:-env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
GLIBC_TUNABLES=glibc.malloc.hugetlb=1 LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread \
$PYTHON bench/torch_peer.py}
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" bench_encoder
bench_model
sharp=""
if [ "${BENCH_SHARP:-1}" != 0 ]; then bench_model_sharp && sharp=$BENCH_MODEL_SHARP; fi
uptime
peer=""
if $PYTHON -c "import torch" 2>/dev/null; then
    peer=$BENCH_PEER
else
    echo "bench: python3-torch not installed: no peer columns"
fi
hf=""
if [ "${BENCH_HF:-1}" != 0 ]; then
    hfpy=$(scripts/hf-env.sh | tail -1) &&
        hf="env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 $hfpy bench/hf_peer.py" ||
        echo "bench: no hf venv (scripts/hf-env.sh): no HF columns"
fi
"$BUILD/bench/bench_encoder" --model "$BENCH_MODEL" ${BENCH_ARGS-} ${peer:+--peer "$peer"} \
    ${hf:+--hf-peer "$hf"} ${sharp:+--sharp-model "$sharp"}
if [ "${BENCH_LLAMA-}" != 0 ]; then $MAKE bench-llama; fi
if [ "${BENCH_CHAT-}" != 0 ]; then $MAKE bench-chat; fi
