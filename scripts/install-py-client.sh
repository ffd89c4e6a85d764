#!/usr/bin/env bash
# install-py-client.sh - the official OpenAI client for Python (PyPI `openai`), pydantic and
# jsonschema, at the versions pinned in tests/chat/clients/requirements.txt (every package, the
# dependencies too), for the structured-output and tool tests of `g4v serve`
# (tests/chat/test_chat_structured.py). Installed outside the repository, into a virtual
# environment of Debian's Python at ${XDG_CACHE_HOME:-~/.cache}/g4v-pyclient/<hash of the
# requirements>, wheels only (no build, no install scripts). Idempotent: the same requirements
# are installed once. The last line printed is the environment's python.
#   --compat   instead: pytest, openai and requests as tests/chat/compat/requirements.txt pins
#              them, for llama.cpp's own server tests (make chat-compat)
# Exit 0 ok; 75 when PyPI cannot be reached (the tests then skip, saying so); 1 otherwise.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
REQ="$SRC/tests/chat/clients/requirements.txt"
MODULES="openai, pydantic, jsonschema"
case "${1:-}" in
    "") ;;
    --compat) REQ="$SRC/tests/chat/compat/requirements.txt" MODULES="pytest, openai, requests" ;;
    *) echo "usage: install-py-client.sh [--compat]" >&2; exit 1 ;;
esac
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "install-py-client: $PY is missing (scripts/install-deps.sh --test)" >&2; exit 1; }
HASH=$( (cat "$REQ"; "$PY" -c 'import sys; print(sys.version)') | sha256sum | cut -c1-16)
DIR="${XDG_CACHE_HOME:-$HOME/.cache}/g4v-pyclient/$HASH"
if [ -f "$DIR/installed" ]; then
    echo "$DIR/bin/python"
    exit 0
fi
echo "install-py-client: pip install into $DIR" >&2
rm -rf "$DIR"
"$PY" -m venv "$DIR" || { echo "install-py-client: python3 -m venv failed (Debian: python3-venv)" >&2; exit 1; }
if ! timeout 600 "$DIR/bin/pip" install -q --disable-pip-version-check --only-binary=:all: \
        -r "$REQ" >&2; then
    if ! timeout 60 "$DIR/bin/pip" download -q --no-deps --only-binary=:all: -d "$DIR/probe" \
            "$(head -1 "$REQ")" >/dev/null 2>&1; then
        echo "install-py-client: PyPI cannot be reached" >&2
        exit 75
    fi
    echo "install-py-client: pip install failed in $DIR" >&2
    exit 1
fi
"$DIR/bin/python" -c "import $MODULES" ||
    { echo "install-py-client: the packages do not import" >&2; exit 1; }
touch "$DIR/installed"
echo "$DIR/bin/python"
