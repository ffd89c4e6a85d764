#!/bin/sh
# bench-mlx.sh - make bench-mlx: the mlx-vlm peer (bench/mlx_peer.py) on mlx's CPU backend beside
# ours, in one run: accuracy against float64 and encode seconds, e4b at 256 tokens (MLX_CKPT,
# generated once; the image is hf-parity's astronaut photo at 768x768, in HF_OUT).
. scripts/make/lib.sh
HF_OUT=${HF_OUT:-$BUILD/hf-parity}
ckpt=${MLX_CKPT:-$HF_OUT/ckpt/e4b-peer}
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" g4v_cli
py=$(scripts/hf-env.sh --mlx | tail -1)
hpy=$(scripts/hf-env.sh | tail -1)
[ -f "$ckpt/config.json" ] || $PYTHON tools/gen_checkpoint.py "$ckpt" --config e4b
img=$HF_OUT/mlx-768.png
$hpy -c "from PIL import Image; Image.open('$HOME/.cache/g4v-hf/photos/astronaut.png').convert('RGB').resize((768, 768), Image.BICUBIC).save('$img')"
$py bench/mlx_peer.py "$ckpt" "$img" --tokens 280 --g4v "$BUILD/g4v"
