#!/usr/bin/env bash
# Installs everything gemma4-vision needs to build and test, from Debian's archive only.
# Idempotent: packages already present are skipped by apt. Run as root (or via sudo).
set -euo pipefail

BUILD_PKGS="build-essential cmake pkg-config libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev libcjson-dev"
TEST_PKGS="python3 python3-numpy python3-pil clang libclang-rt-14-dev libsimde-dev"

want="$BUILD_PKGS"
[ "${1:-}" = "--test" ] && want="$BUILD_PKGS $TEST_PKGS"

missing=""
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
    exit 0
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $missing
