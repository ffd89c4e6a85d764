#!/bin/sh
# soak-tsan.sh - make soak-tsan: the library soak (tests/soak/soak.c) under ThreadSanitizer for
# SOAK_TSAN_SECONDS (60), SOAK_THREADS (2) threads (build-tsan/).
. scripts/make/lib.sh
configure build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_TSAN=ON -DG4V_WERROR=ON
compile build-tsan soak
[ -f build-tsan/soak-fixtures/tiny/config.json ] ||
    $PYTHON tests/api/make_fixtures.py build-tsan/soak-fixtures
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/soak/soak build-tsan/soak-fixtures \
    "${SOAK_TSAN_SECONDS:-60}" "${SOAK_THREADS:-2}" --no-rss-check
