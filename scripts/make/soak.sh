#!/bin/sh
# soak.sh - make soak: one shared model, SOAK_THREADS (2) threads with their own contexts, a mixed
# stream of images, budgets, modes and bad inputs for SOAK_SECONDS (600; tests/soak/soak.c): every
# output bit-identical to a serial run, every bad input a clean error, RSS flat after the warm-up
# (the curve is printed). Then the same through `g4v serve` over HTTP with concurrent clients, some
# hanging up mid-request (scripts/soak_http.py, SOAK_HTTP_SECONDS, default SOAK_SECONDS).
. scripts/make/lib.sh
SOAK_SECONDS=${SOAK_SECONDS:-600}
fixtures=$BUILD/soak-fixtures
configure "$BUILD" -DG4V_WERROR=ON $CMAKE_FLAGS
compile "$BUILD" soak g4v_cli
[ -f "$fixtures/tiny/config.json" ] || $PYTHON tests/api/make_fixtures.py "$fixtures"
"$BUILD/tests/soak/soak" "$fixtures" "$SOAK_SECONDS" "${SOAK_THREADS:-2}"
$PYTHON scripts/soak_http.py --g4v "$BUILD/g4v" --fixtures "$fixtures" \
    --seconds "${SOAK_HTTP_SECONDS:-$SOAK_SECONDS}"
