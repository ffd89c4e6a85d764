#!/bin/sh
# asan.sh - make asan: the unit and hostile-input tests under ASan + UBSan with allocation-failure
# injection compiled in (build-asan/, Debug).
. scripts/make/lib.sh
configure build-asan -DCMAKE_BUILD_TYPE=Debug -DG4V_SANITIZE=ON -DG4V_FAULT_INJECTION=ON \
    -DG4V_WERROR=ON
compile build-asan
cd build-asan && ctest --output-on-failure -j "$JOBS" -L 'unit|fault'
