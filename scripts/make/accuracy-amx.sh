#!/bin/sh
# accuracy-amx.sh - make accuracy-amx: FAST through the AMX tile kernels (the tile GEMM and the
# tile attention, run on the tile emulator by tests/encoder/encode_tool_simde) against the float64
# reference, e2b, e4b, 31B (2 layers) and the 12B embedder, at 70 and 1120 tokens
# (tests/encoder/test_amx_ref.py with G4V_AMX_REF_FULL=1; the default suite runs the 70-token
# cases). The 1120-token cases take most of an hour on 2 cores, most of it the float64 reference.
. scripts/make/lib.sh
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" encode_tool_simde
G4V_AMX_REF_FULL=1 G4V_BUILD_DIR="$BUILD" G4V_SOURCE_DIR="$PWD" \
    $PYTHON -m pytest -q -s -p no:cacheprovider --rootdir=tests tests/encoder/test_amx_ref.py
