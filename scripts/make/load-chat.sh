#!/bin/sh
# load-chat.sh - make load-chat: g4v serve --lm under concurrent streaming chats
# (scripts/load_chat.sh; the OpenAI client for Node): requests/s, time to first token p50/p99,
# errors. Loopback only, synthetic models; LOAD_SECONDS (10) per run, LOAD_STREAMS (4) chats at
# once.
. scripts/make/lib.sh
prefix=$(llama_prefix)
configure "$BUILD" -DG4V_LLAMA_DIR=$prefix -DG4V_LLAMA_SRC=$prefix/src $CMAKE_FLAGS
compile "$BUILD" g4v_cli
PYTHON=$PYTHON scripts/load_chat.sh "$BUILD" "$prefix" "${LOAD_SECONDS:-10}" "${LOAD_STREAMS:-4}"
