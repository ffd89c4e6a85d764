#!/usr/bin/env bash
# install-node-client.sh - the official OpenAI client for Node (npm `openai`, with `zod`) and
# `puppeteer-core` (drives Debian's chromium in tests/chat/test_chat_webui.py), the versions pinned
# in tests/service/node/package-lock.json, for the tests of `g4v serve` and `make load-chat`.
# Installed outside the repository, into ${XDG_CACHE_HOME:-~/.cache}/g4v-node/<hash of the lock>,
# with `npm ci` (exactly the lock, no install scripts). Idempotent: an install of the same lock is
# reused. The last line printed is the node_modules directory (NODE_PATH for the tests).
# Exit 0 ok; 75 when the npm registry cannot be reached (the tests then skip, saying so);
# 1 otherwise (npm or node missing: scripts/install-deps.sh --test installs them).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
LOCK="$SRC/tests/service/node/package-lock.json"
command -v node >/dev/null || { echo "install-node-client: node is missing (scripts/install-deps.sh --test)" >&2; exit 1; }
command -v npm >/dev/null || { echo "install-node-client: npm is missing (scripts/install-deps.sh --test)" >&2; exit 1; }
HASH=$(cat "$SRC/tests/service/node/package.json" "$LOCK" | sha256sum | cut -c1-16)
DIR="${XDG_CACHE_HOME:-$HOME/.cache}/g4v-node/$HASH"
if [ -f "$DIR/installed" ]; then
    echo "$DIR/node_modules"
    exit 0
fi
echo "install-node-client: npm ci into $DIR" >&2
mkdir -p "$DIR"
cp "$SRC/tests/service/node/package.json" "$LOCK" "$DIR/"
if ! (cd "$DIR" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2); then
    if ! timeout 60 npm ping >/dev/null 2>&1; then
        echo "install-node-client: the npm registry cannot be reached ($(npm config get registry))" >&2
        exit 75
    fi
    echo "install-node-client: npm ci failed in $DIR" >&2
    exit 1
fi
node -e "require('$DIR/node_modules/openai')" || { echo "install-node-client: openai does not load" >&2; exit 1; }
node -e "require('$DIR/node_modules/puppeteer-core')" || { echo "install-node-client: puppeteer-core does not load" >&2; exit 1; }
touch "$DIR/installed"
echo "$DIR/node_modules"
