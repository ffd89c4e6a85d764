#!/bin/sh
# tsan.sh - make tsan: the public API's tests (incl. N threads over one shared model), the chat
# prompt cache's store (tests/chat/test_prompt_cache.c), the AMX self-test's pthread_once
# (tests/kernels/test_amx_check.c), four conversations on one chat engine (test_chat_engine) and
# concurrent chat template renders (chat_jinja_threads) under ThreadSanitizer. It also runs g4v
# serve's chat tests (tests/chat/test_chat_serve.py, whose section 7 has two slots answering six
# requests at once over a shared vision model and feature cache, and
# tests/chat/test_chat_reuse_serve.py: prompt reuse, two slots, the prompt cache) with a
# ThreadSanitizer g4v, and tests/service/test_serve_batch.py (--batch: a context taking several
# waiting requests); libllama itself is not instrumented. Any report fails the target.
# The Makefile's recipe, moved here verbatim (quiet, as it was: no command is echoed).
JOBS=${JOBS:-$(nproc)}
set -e; prefix=$(scripts/build-llama.sh | tail -1); \
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_TSAN=ON -DG4V_WERROR=ON \
  -DG4V_LLAMA_DIR=$prefix -DG4V_LLAMA_SRC=$prefix/src; \
cmake --build build-tsan -j $JOBS --target test_api_threads test_amx_check test_json_race test_prompt_cache test_chat_engine chat_jinja_render g4v_cli; \
cd build-tsan; TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -L tsan; \
rm -rf tsan-logs; mkdir tsan-logs; \
TSAN_OPTIONS="exitcode=66 log_path=$PWD/tsan-logs/report" \
  ctest --output-on-failure -R '^(chat_(serve|reuse_serve)|test_serve_batch)$'; \
if ls tsan-logs/report* >/dev/null 2>&1; then cat tsan-logs/report*; \
  echo "tsan: ThreadSanitizer reported races in g4v serve (above)"; exit 1; fi
