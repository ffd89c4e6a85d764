#!/bin/sh
# hf-parity.sh - make hf-parity: our outputs against transformers' own code (tests/hf). The venv
# and the sample photos are made once by scripts/hf-env.sh (PyPI), then reused; each script prints
# its table and ends with "N passed, M failed". HF_QUICK=1: the small shapes and one real one (a
# few minutes). The tables' JSON goes to $HF_OUT.
. scripts/make/lib.sh
HF_OUT=${HF_OUT:-$BUILD/hf-parity}
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" g4v_cli image_tool
py=$(scripts/hf-env.sh | tail -1)
q=${HF_QUICK:+--quick}
mkdir -p "$HF_OUT"
export G4V_BUILD_DIR="$BUILD" G4V_BIN="$BUILD/g4v" PYTHONDONTWRITEBYTECODE=1
$py tests/image/test_resize_torchvision.py "$BUILD/tests/image/image_tool"
$py tests/hf/test_hf_tower.py $q --json "$HF_OUT/tower.json"
$py tests/hf/test_hf_preprocess.py $q --json "$HF_OUT/preprocess.json"
$py tests/hf/test_hf_prompt_video.py --json "$HF_OUT/prompt_video.json"
