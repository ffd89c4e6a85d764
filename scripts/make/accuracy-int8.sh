#!/bin/sh
# accuracy-int8.sh - make accuracy-int8: both INT8 modes and FAST against float64
# (bench/accuracy.py; minutes per case at 256 tokens; ACC_INT8_CASES overrides the cases; the last
# one is sharper attention).
. scripts/make/lib.sh
ACC_INT8_CASES=${ACC_INT8_CASES:-e4b:16:768x768 e2b:0:768x768 31b:2:768x768 e4b:2:768x768:qk=2}
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" encode_tool
$PYTHON bench/accuracy.py --encode-tool "$BUILD/tests/encoder/encode_tool" \
    --modes fast,int8,int8+none,int8b --work "$BUILD/accuracy-int8" $ACC_INT8_CASES
