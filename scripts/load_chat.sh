#!/usr/bin/env bash
# load_chat.sh BUILD_DIR LLAMA_PREFIX [SECONDS] [STREAMS] - `make load-chat`: g4v serve --lm under
# concurrent streaming chats from the official OpenAI client for Node, on loopback only.
#
# Synthetic models are generated into BUILD_DIR/load-chat once: a Gemma 4 text model of e2b width
# (4 layers, random weights, the real tokenizer; ~290 MB) and a tiny vision tower of its width,
# plus a 256x256 BMP. A server with an API key, 2 LM slots of 1 thread each, is started on
# 127.0.0.1 (ephemeral port) and stopped with SIGTERM. Two runs of SECONDS (default 20), STREAMS
# (default 4) chats at once, 16 tokens each (scripts/load_chat.cjs):
#   1. distinct images: every request's image is new, so each is encoded;
#   2. the same image: after the first request its soft tokens come from the server's cache.
# Each prints requests/s, time to first token p50/p99, generated tokens/s and errors; any error
# (a 429 included) or an unclean exit fails the run. The answers are gibberish (random weights):
# this measures the serving path, not a model.
set -euo pipefail
BUILD=${1:?usage: load_chat.sh BUILD_DIR LLAMA_PREFIX [SECONDS] [STREAMS]}
PREFIX=${2:?usage: load_chat.sh BUILD_DIR LLAMA_PREFIX [SECONDS] [STREAMS]}
SECONDS_=${3:-20}
STREAMS=${4:-4}
PY=${PYTHON:-/usr/bin/python3}
G4V="$BUILD/g4v"
D="$BUILD/load-chat"
mkdir -p "$D"
case "$("$G4V" serve --help)" in *--lm*) ;; *) echo "load-chat: $G4V serve has no --lm (built without libllama?)"; exit 1 ;; esac
[ -f "$D/lm.gguf" ] || $PY tools/gen_lm_gguf.py "$D/lm.gguf" --config e2b --gguf-py "$PREFIX/src/gguf-py" \
    --vocab "$PREFIX/src/models/ggml-vocab-gemma-4.gguf"
[ -f "$D/vision/config.json" ] || $PY tools/gen_checkpoint.py "$D/vision" --config tiny --text-hidden 1536 >/dev/null
[ -f "$D/image.bmp" ] || $PY -c "
import numpy as np; from PIL import Image
Image.fromarray(np.random.default_rng(0).integers(0, 256, (256, 256, 3), dtype=np.uint8)).save('$D/image.bmp')"
NODE_PATH=$(scripts/install-node-client.sh | tail -1)
export NODE_PATH
( umask 077; head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$D/key" )
KEY=$(cat "$D/key")

echo "load-chat: $(nproc) CPUs; $(uptime)"
"$G4V" serve --model "$D/vision" --lm "$D/lm.gguf" --lm-slots 2 --threads 1 --port 0 \
    --api-key-file "$D/key" >"$D/serve.out" 2>"$D/serve.err" &
PID=$!
for _ in $(seq 600); do grep -q listening "$D/serve.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(grep -o '127\.0\.0\.1:[0-9]*' "$D/serve.out" | cut -d: -f2)
[ -n "$PORT" ] || { cat "$D/serve.err"; kill "$PID"; exit 1; }
URL="http://127.0.0.1:$PORT"
MODEL=$(curl -s -H "Authorization: Bearer $KEY" "$URL/v1/models" | $PY -c "import json,sys; print(json.load(sys.stdin)['data'][0]['id'])")
fail=0
for mode in distinct same; do
    echo "== $STREAMS concurrent streaming chats for ${SECONDS_} s, images $mode"
    node scripts/load_chat.cjs "$URL" "$KEY" "$MODEL" "$D/image.bmp" "$STREAMS" "$SECONDS_" 16 "$mode" || fail=1
done
curl -s -H "Authorization: Bearer $KEY" "$URL/metrics" | grep -E '^g4v_(chat_[a-z_]*(total|per_second|sum|count)|http_requests_total\{code="(200|429)"\}) ' || true
kill -TERM "$PID"
wait "$PID" || { echo "load-chat: server exit $?"; fail=1; }
[ "$fail" = 0 ] && echo "load-chat: ok (0 errors)" || { echo "load-chat: FAILED (see above)"; exit 1; }
