#!/bin/sh
# test-arm64.sh - make test-arm64: the ARM64 build, cross-compiled (cmake/aarch64-linux-gnu.cmake:
# Debian's aarch64-linux-gnu toolchain and arm64 multiarch libraries) into $ARM64_BUILD, and the
# tests labelled where they are registered (tests/**/CMakeLists.txt) run under qemu-aarch64: label
# arm64 as -cpu max (NEON + BF16 + I8MM + DotProd: the BFDOT GEMM is chosen), label arm64-a57
# again as -cpu cortex-a57 (ARMv8.0 NEON only). The labelled tests are the kernel, unit and
# encoder tests and `g4v encode` against the float64 reference (the last under -cpu max only: its
# kernels are that run's). ctest prefixes the C tests with the emulator; the Python tests start
# the programs through wrappers (tests/CMakeLists.txt, g4v_tool). Emulation is ~10-50x slower
# than native, so the image decoder, Pillow and video suites (no ARM-specific code), the long CLI
# front-end tests and the G4V_ISA-capped reruns carry no arm64 label, and the encoder reference
# test keeps its tiny checkpoints (G4V_EMULATED). Only the programs those tests need are built
# (the g4v_arm64_tests target, tests/CMakeLists.txt).
. scripts/make/lib.sh
ARM64_BUILD=${ARM64_BUILD:-build-arm64}
configure "$ARM64_BUILD" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DG4V_WERROR=ON
compile "$ARM64_BUILD" g4v_arm64_tests
cd "$ARM64_BUILD"
QEMU_CPU=max ctest --output-on-failure -j "$JOBS" -L '^arm64$'
QEMU_CPU=cortex-a57 ctest --output-on-failure -j "$JOBS" -L '^arm64-a57$'
