#!/bin/sh
# chat-test.sh - make chat-test: g4v chat against llama.cpp (docs/CHAT.md §5): g4v is configured
# against the llama.cpp build and the chat tests run. The Makefile's recipe, moved here verbatim
# (quiet, as it was: no command is echoed).
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc)}
set -e; prefix=$(scripts/build-llama.sh | tail -1); \
cmake -S . -B $BUILD -DG4V_WERROR=ON -DG4V_LLAMA_DIR=$prefix -DG4V_LLAMA_SRC=$prefix/src $CMAKE_FLAGS; \
cmake --build $BUILD -j $JOBS; \
cd $BUILD; ctest -N -L chat | grep -q chat_mtmd_ || \
  { echo "chat-test: CMake did not pick up $prefix (see cmake/Llama.cmake)"; exit 1; }; \
ctest --output-on-failure -j $JOBS -L chat
