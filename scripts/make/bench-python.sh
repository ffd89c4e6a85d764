#!/bin/sh
# bench-python.sh - make bench-python: bulk encoding (gemma4_vision.bulk on a Dask LocalCluster, 1
# and 2 workers x 1 and 2 threads) against a loop of `g4v encode` over the same mixed images, in
# one run (bench/bench_bulk.py; a few minutes on 2 cores). The checkpoint is a SYNTHETIC e2b cut
# to BENCH_PY_LAYERS (4) encoder layers (generated once into $BENCH_PY_MODEL); MODEL=DIR uses
# another. BENCH_PY_IMAGES: where the images go; BENCH_PY_ARGS: more options (--tokens 140).
. scripts/make/lib.sh
layers=${BENCH_PY_LAYERS:-4}
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD"
model=${MODEL-}
if [ -z "$model" ]; then
    model=${BENCH_PY_MODEL:-$BUILD/bench-e2b-l$layers}
    [ -f "$model/config.json" ] ||
        $PYTHON tools/gen_checkpoint.py "$model" --config e2b --layers "$layers" --seed 0
fi
PYTHONPATH=python G4V_LIBRARY=$BUILD/libg4v.so $PYTHON bench/bench_bulk.py --model "$model" \
    --images "${BENCH_PY_IMAGES:-$BUILD/bench-images}" --g4v "$BUILD/g4v" \
    ${BENCH_PY_ARGS:---tokens 140}
