#!/bin/sh
# accuracy-bf16.sh - make accuracy-bf16: FAST on the AVX512_BF16 kernels (bf16 GEMM and
# attention), emulated through SIMDe so it runs on any x86-64, against the native FAST and the
# float64 reference (bench/accuracy.py): e4b and the 31B shape at 256 and 1120 tokens, and sharper
# attention (qk=2). Emulation is ~30x slower than native: about an hour on 2 cores.
# ACC_BF16_CASES overrides the cases.
. scripts/make/lib.sh
ACC_BF16_CASES=${ACC_BF16_CASES:-e4b:16:768x768 e4b:2:768x768:qk=2 31b:2:768x768 \
31b:2:768x768:qk=2 e4b:2:1680x1536 31b:2:1680x1536}
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" encode_tool encode_tool_simde
$PYTHON bench/accuracy.py --encode-tool "$BUILD/tests/encoder/encode_tool" \
    --encode-tool "$BUILD/tests/encoder/encode_tool_simde" --modes fast \
    --work "$BUILD/accuracy-bf16" $ACC_BF16_CASES
