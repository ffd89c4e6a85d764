#!/bin/sh
# test-all.sh - make test after make check: everything else CI runs. The chat tests (make
# chat-test), llama.cpp's own server tests against g4v serve (make chat-compat), the ARM64
# build's tests under qemu (make test-arm64), the unit and encoder tests again with the SIMD
# paths disabled (G4V_ISA=portable; the SIMDe tests emulate AVX-512 by design, so they are left
# out of that run), the unit + hostile-input tests under ASan/UBSan with allocation-failure
# injection (make asan), the thread tests under TSan (make tsan), a short fuzz run (make
# fuzz-smoke) and the transformers comparison (make hf-parity).
. scripts/make/lib.sh
$MAKE chat-test
$MAKE chat-compat
$MAKE test-arm64
(cd "$BUILD" && G4V_ISA=portable ctest --output-on-failure -j "$JOBS" -L 'unit|encoder' -FA '.*' \
    -E '_simde$')
$MAKE asan
$MAKE tsan
$MAKE fuzz-smoke
$MAKE hf-parity
