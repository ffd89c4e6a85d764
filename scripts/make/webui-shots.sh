#!/bin/sh
# webui-shots.sh - make webui-shots: screenshots of the chat page of g4v serve --lm (docs/WEBUI.md)
# in its main states (empty, attachments with budgets, streaming, an answer with its figures, a
# thought, an error, the API key, 390 px wide, a conversation back after a reload, the list of
# conversations, limits refused with the context meter, coloured code), taken by its browser test
# (ctest chat_webui, synthetic models), into $BUILD/webui-shots.
. scripts/make/lib.sh
prefix=$(llama_prefix)
configure "$BUILD" -DG4V_WERROR=ON -DG4V_LLAMA_DIR=$prefix -DG4V_LLAMA_SRC=$prefix/src $CMAKE_FLAGS
compile "$BUILD"
shots=$(cd "$BUILD" && pwd)/webui-shots
rm -rf "$shots"
cd "$BUILD"
ctest -N -R '^chat_webui$' | grep -q chat_webui ||
    { echo "webui-shots: CMake did not pick up $prefix (see cmake/Llama.cmake)"; exit 1; }
G4V_WEBUI_SHOTS=$shots ctest --output-on-failure -R '^chat_webui$'
echo "webui-shots: the screenshots are in $shots"
ls "$shots"
