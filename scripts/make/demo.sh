#!/bin/sh
# demo.sh - make demo: the main job end to end -- load a checkpoint, encode an image, write soft
# tokens. Without MODEL=DIR it generates a SYNTHETIC e4b checkpoint into $DEMO_MODEL (random
# weights in the real layout; config.json is written last, so an interrupted generation is redone)
# and a drawn test image: the outputs then have the right shape and prompt span but are NOT
# meaningful embeddings. MODEL=path/to/gemma-4-e4b-it IMAGE=photo.jpg uses a real checkpoint and
# image; MODEL=hf:google/gemma-4-e4b-it fetches its vision tower from the Hub first (g4v pull;
# HF_TOKEN for a gated model). The soft tokens go to $DEMO_OUT.
. scripts/make/lib.sh
DEMO_MODEL=${DEMO_MODEL:-$BUILD/demo-model}
DEMO_OUT=${DEMO_OUT:-$BUILD/demo-out.npy}
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD"
model=${MODEL-}
image=${IMAGE-}
if [ -z "$model" ]; then
    model=$DEMO_MODEL
    if [ ! -f "$model/config.json" ]; then
        echo "demo: generating a SYNTHETIC e4b checkpoint in $model (tools/gen_checkpoint.py)"
        $PYTHON tools/gen_checkpoint.py "$model" --config e4b --seed 0
    fi
fi
if [ -z "$image" ]; then
    image=$BUILD/demo-image.png
    $PYTHON examples/make_demo_image.py "$image"
fi
"$BUILD/g4v" info --model "$model"
echo
echo "demo: $BUILD/g4v encode --model $model $image --json -o $DEMO_OUT"
"$BUILD/g4v" encode --model "$model" "$image" --json -o "$DEMO_OUT"
$PYTHON -c "import numpy as np; a = np.load('$DEMO_OUT'); \
print('demo: %s: %s %s, mean %.4f, std %.4f' % ('$DEMO_OUT', a.dtype, a.shape, a.mean(), a.std()))"
if [ -z "${MODEL-}" ]; then
    echo "demo: NOTE: $model is a SYNTHETIC checkpoint (random weights in the real e4b layout),"
    echo "demo:       not Google's Gemma 4 weights: the shapes and the prompt span are real, the"
    echo "demo:       numbers are NOT meaningful embeddings. Use make demo MODEL=DIR [IMAGE=FILE]."
fi
