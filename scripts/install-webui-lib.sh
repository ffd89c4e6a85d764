#!/usr/bin/env bash
# install-webui-lib.sh - the libraries the chat page of `g4v serve --lm` embeds at build time
# (npm `markdown-it` and `prismjs`: docs/WEBUI.md "Markdown"), the versions pinned in
# tools/service/webui/lib/package-lock.json. Installed outside the repository, into
# ${XDG_CACHE_HOME:-~/.cache}/g4v-webui-lib/<hash of package.json and the lock>, with `npm ci`
# (exactly the lock, integrity-checked, no install scripts); CMake looks there (the same hash,
# cmake/EmbedPage.cmake) and embeds the browser bundles into the binary, so that building needs no
# network once this ran. Idempotent: an install of the same lock is reused. The last line printed
# is the node_modules directory.
# Exit 0 ok; 75 when the npm registry cannot be reached (the page is then built without
# Markdown: answers show as plain text, and CMake says so); 1 otherwise.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
LIB="$SRC/tools/service/webui/lib"
command -v npm >/dev/null || { echo "install-webui-lib: npm is missing (scripts/install-deps.sh --test)" >&2; exit 1; }
HASH=$(cat "$LIB/package.json" "$LIB/package-lock.json" | sha256sum | cut -c1-16)
DIR="${XDG_CACHE_HOME:-$HOME/.cache}/g4v-webui-lib/$HASH"
if [ -f "$DIR/installed" ]; then
    echo "$DIR/node_modules"
    exit 0
fi
echo "install-webui-lib: npm ci into $DIR" >&2
mkdir -p "$DIR"
cp "$LIB/package.json" "$LIB/package-lock.json" "$DIR/"
if ! (cd "$DIR" && timeout 300 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2); then
    if ! timeout 60 npm ping >/dev/null 2>&1; then
        echo "install-webui-lib: the npm registry cannot be reached ($(npm config get registry))" >&2
        exit 75
    fi
    echo "install-webui-lib: npm ci failed in $DIR" >&2
    exit 1
fi
[ -s "$DIR/node_modules/markdown-it/dist/markdown-it.min.js" ] ||
    { echo "install-webui-lib: markdown-it's browser bundle is missing" >&2; exit 1; }
[ -s "$DIR/node_modules/prismjs/components/prism-core.min.js" ] ||
    { echo "install-webui-lib: Prism's components are missing" >&2; exit 1; }
touch "$DIR/installed"
echo "$DIR/node_modules"
