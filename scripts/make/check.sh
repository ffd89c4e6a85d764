#!/bin/sh
# check.sh - make check: build with -Werror and run the default ctest suite (the chat tests left
# out; CTEST_FLAGS adds ctest options).
. scripts/make/lib.sh
configure "$BUILD" -DG4V_WERROR=ON $CMAKE_FLAGS
compile "$BUILD"
cd "$BUILD" && ctest --output-on-failure -j "$JOBS" -LE chat ${CTEST_FLAGS-}
