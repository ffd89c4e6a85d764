#!/bin/sh
# llama_peer.sh - llama.cpp's gemma4v encoder as a peer of ours on the same checkpoint, one command
# (`make bench` and bench/report.sh run it; BENCH_LLAMA=0 skips it there).
#
#   bench/llama_peer.sh BUILD MODEL [THREADS] [REPS]     (THREADS default 1,2; REPS 3)
#
# Prepares once, into BUILD/bench-llama (reused afterwards): the native llama.cpp build with
# llama-mtmd-cli (scripts/build-llama.sh --bench, ~10 minutes the first time), MODEL converted to
# an mmproj GGUF with bf16 matrices (tools/gguf_from_checkpoint.py), a small synthetic text model
# of MODEL's text width (tools/gen_lm_gguf.py; llama-mtmd-cli needs one, it is not timed) and a
# 768x768 PNG; then runs bench/llama_peer.py (ours vs llama-mtmd-cli, same run, markdown table).
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:?usage: llama_peer.sh BUILD MODEL [THREADS] [REPS]}
MODEL=${2:?usage: llama_peer.sh BUILD MODEL [THREADS] [REPS]}
THREADS=${3:-1,2}
REPS=${4:-3}
PYTHON=${PYTHON:-/usr/bin/python3}
[ -f "$MODEL/config.json" ] || { echo "llama_peer: $MODEL/config.json not found" >&2; exit 1; }
prefix=$(scripts/build-llama.sh --bench | tail -1)
src=$(scripts/build-llama.sh --src | tail -1)
d=$BUILD/bench-llama
mkdir -p "$d"
name=$(basename "$MODEL")
# the text width decides the text model's config (llama.cpp checks that the two agree)
width=$("$PYTHON" -c "import json,sys; c=json.load(open(sys.argv[1])); \
print(c.get('text_config', {}).get('hidden_size') or c.get('text_hidden_size') or 0)" \
  "$MODEL/config.json")
case "$width" in
  1536) lmcfg=e2b ;; 2560) lmcfg=e4b ;; 512) lmcfg=31b ;; 384) lmcfg=12b ;;
  *) echo "llama_peer: no synthetic text model of width $width (tools/gen_lm_gguf.py)" >&2; exit 1 ;;
esac
[ -f "$d/lm-$lmcfg.gguf" ] || "$PYTHON" tools/gen_lm_gguf.py "$d/lm-$lmcfg.gguf" --config "$lmcfg" \
  --gguf-py "$src/gguf-py" --vocab "$src/models/ggml-vocab-gemma-4.gguf" >&2
# a changed checkpoint (newer config.json) is converted again
if [ ! -f "$d/mmproj-$name-bf16.gguf" ] || [ "$MODEL/config.json" -nt "$d/mmproj-$name-bf16.gguf" ]; then
  "$PYTHON" tools/gguf_from_checkpoint.py "$MODEL" "$d/mmproj-$name-bf16.gguf" --outtype bf16 >&2
fi
[ -f "$d/photo-768.png" ] || "$PYTHON" examples/make_demo_image.py "$d/photo-768.png" 768
"$PYTHON" bench/llama_peer.py --g4v "$BUILD/g4v" --model "$MODEL" \
  --mtmd-cli "$prefix/bin/llama-mtmd-cli" --lm "$d/lm-$lmcfg.gguf" \
  --mmproj "$d/mmproj-$name-bf16.gguf" --image "$d/photo-768.png" --threads "$THREADS" \
  --reps "$REPS" --json "$d/llama_peer.json"
