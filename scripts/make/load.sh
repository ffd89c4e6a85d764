#!/bin/sh
# load.sh - make load: the HTTP service under load (scripts/load.sh): loopback only, LOAD_SECONDS
# (10) per wrk run.
. scripts/make/lib.sh
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD" g4v_cli
PYTHON=$PYTHON scripts/load.sh "$BUILD" "${LOAD_SECONDS:-10}"
