#!/bin/sh
# unified-long.sh - make unified-long: the 12B unified embedder against the float64 reference at
# the full target sizes of budgets 70, 280 and 1120 (the default suite runs budget 70 only).
# About a minute.
. scripts/make/lib.sh
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" encode_tool g4v_cli
G4V_BUILD_DIR=$BUILD G4V_BIN=$BUILD/g4v G4V_ENCODE_TOOL=$BUILD/tests/encoder/encode_tool \
    $PYTHON -m pytest -q -p no:cacheprovider -rfEs tests/encoder/test_unified_ref.py --arg=--long
