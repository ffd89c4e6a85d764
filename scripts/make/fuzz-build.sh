#!/bin/sh
# fuzz-build.sh - make fuzz-build: the libFuzzer targets (fuzz/README.md): clang, ASan + UBSan,
# the library built with coverage, one program per fuzz/fuzz_*.c, in build-fuzz/.
. scripts/make/lib.sh
configure build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_SANITIZE=ON \
    -DG4V_FUZZ=ON -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link
compile build-fuzz g4v_fuzz
