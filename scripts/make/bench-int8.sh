#!/bin/sh
# bench-int8.sh - make bench-int8: the INT8 modes against FAST in one run (bench/int8_speed.py:
# 256 and 1120 soft tokens, 2 threads, FAST / INT8 and FAST / INT8 per 32-block as ratios) on the
# synthetic e4b of `make bench`.
. scripts/make/lib.sh
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" encode_tool
bench_model
$PYTHON bench/int8_speed.py --encode-tool "$BUILD/tests/encoder/encode_tool" --model "$BENCH_MODEL"
