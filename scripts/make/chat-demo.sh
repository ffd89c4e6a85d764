#!/bin/sh
# chat-demo.sh - make chat-demo: one question about one image through g4v chat. Without LM=FILE a
# SYNTHETIC Gemma 4 text model (e2b width, 4 layers, random weights, the real tokenizer) and a
# matching synthetic vision model are generated into $CHAT_DEMO once: the answer is gibberish, the
# path is real. With LM=gemma-4-E4B-it-Q4_K_M.gguf MODEL=gemma-4-e4b-it (or its mmproj .gguf)
# IMAGE=photo.jpg it answers for real. PROMPT is the question.
. scripts/make/lib.sh
CHAT_DEMO=${CHAT_DEMO:-$BUILD/chat-demo}
PROMPT=${PROMPT:-Describe this image in one sentence.}
prefix=$(llama_prefix)
configure "$BUILD" -DG4V_LLAMA_DIR=$prefix -DG4V_LLAMA_SRC=$prefix/src $CMAKE_FLAGS
compile "$BUILD" g4v_cli
lm=${LM-}
model=${MODEL-}
image=${IMAGE-}
if [ -z "$lm" ]; then
    mkdir -p "$CHAT_DEMO"
    lm=$CHAT_DEMO/lm-e2b.gguf
    model=$CHAT_DEMO/vision
    [ -f "$lm" ] || $PYTHON tools/gen_lm_gguf.py "$lm" --config e2b --gguf-py "$prefix/src/gguf-py" \
        --vocab "$prefix/src/models/ggml-vocab-gemma-4.gguf"
    [ -f "$model/config.json" ] || $PYTHON tools/gen_checkpoint.py "$model" --config tiny \
        --text-hidden 1536
fi
if [ -z "$image" ]; then
    image=$BUILD/demo-image.png
    $PYTHON examples/make_demo_image.py "$image"
fi
echo "chat-demo: $BUILD/g4v chat --lm $lm --model $model --image $image -p '$PROMPT'"
"$BUILD/g4v" chat --lm "$lm" --model "$model" --image "$image" -p "$PROMPT" --max-tokens 48 --seed 1
if [ -z "${LM-}" ]; then
    echo "chat-demo: NOTE: SYNTHETIC models (random weights): the answer is gibberish. Use"
    echo "chat-demo:       make chat-demo LM=gemma-4-E4B-it.gguf MODEL=DIR IMAGE=photo.jpg"
fi
