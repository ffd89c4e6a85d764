#!/bin/sh
# chat-compat.sh - make chat-compat: llama.cpp's own server tests, unedited, from the pinned
# source (server/tests in the tools folder of scripts/build-llama.sh's tree) against `g4v serve
# --lm` on the synthetic e2b models: the suites for chat completions, vision, tool calls,
# security, streaming, templates and the Responses API (SUITES), through our adaptation
# tests/chat/compat/conftest.py (theirs is not loaded), less the tests they mark slow (real
# models from Hugging Face), as llama.cpp's own tests.sh leaves them out. The tests that fail are
# listed in tests/chat/compat/expected_failures.tsv, each with its reason; a failure not listed, a
# listed test that passes, or an entry that matches no test fails the target (docs/TESTING.md
# "llama.cpp's server tests").
#   usage: make chat-compat [ARGS='pytest arguments'] [SUITES='unit/test_x.py ...']
#     ARGS     given: passed to pytest instead of the suites (split at spaces), e.g.
#              ARGS='unit/test_security.py::test_correct_api_key' (paths relative to their tests
#              folder); the check for entries that match no test is then off
#     SUITES   the test files (default below)
# Builds what chat-test builds first (libllama once, g4v against it; then only g4v), the fixtures
# (tests/chat/make_fixtures.py, made once) and the pinned pytest + openai + requests
# (scripts/install-py-client.sh --compat). Logs: $BUILD/chat-compat/ (each g4v serve's stderr).
. scripts/make/lib.sh
case "${1:-}" in
    -h|--help) sed -n '2,18p' "$0" | cut -c3-; exit 0 ;;
    "") ;;
    *) echo "usage: scripts/make/chat-compat.sh (settings in the environment: ARGS, SUITES)" >&2
       exit 1 ;;
esac
SUITES=${SUITES:-"unit/test_chat_completion.py unit/test_vision_api.py unit/test_tool_call.py
  unit/test_security.py unit/test_stream.py unit/test_template.py
  unit/test_compat_oai_responses.py"}
ROOT=$(pwd)
prefix=$(llama_prefix)
configure "$BUILD" -DG4V_WERROR=ON -DG4V_LLAMA_DIR="$prefix" -DG4V_LLAMA_SRC="$prefix/src" \
    $CMAKE_FLAGS >/dev/null
compile "$BUILD" g4v_cli >/dev/null
B=$(cd "$BUILD" && pwd)
FX=$B/tests/chat/fixtures
$PYTHON tests/chat/make_fixtures.py "$FX" --llama-src "$prefix/src"
set +e
py=$(scripts/install-py-client.sh --compat | tail -1)
rc=$?
set -e
[ $rc -eq 0 ] ||
    { echo "chat-compat: cannot install the pinned test clients (exit $rc)" >&2; exit 1; }
TESTS=$prefix/src/tools/server/tests
[ -f "$TESTS/utils.py" ] || { echo "chat-compat: $TESTS/utils.py is missing" >&2; exit 1; }
LOGS=$B/chat-compat
rm -rf "$LOGS"
mkdir -p "$LOGS"
if [ -n "${ARGS:-}" ]; then
    set -- $ARGS
else
    set -- --compat-full $SUITES
fi
echo "chat-compat: pytest in $TESTS (logs in $LOGS)"
cd "$TESTS"
start=$(date +%s)
set +e
G4V_BIN=$B/g4v G4V_COMPAT_FIXTURES=$FX G4V_COMPAT_LOGS=$LOGS PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH="$ROOT/tests/chat/compat:$TESTS" \
    "$py" -P -m pytest --noconftest -p conftest -p no:cacheprovider -q -rfEX -m 'not slow' \
    --basetemp="$LOGS/tmp" -W ignore::DeprecationWarning "$@"
rc=$?
set -e
echo "chat-compat: $(($(date +%s) - start)) s, pytest exit $rc"
exit $rc
