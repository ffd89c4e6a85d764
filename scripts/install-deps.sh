#!/usr/bin/env bash
# Installs everything gemma4-vision needs to build and test, from Debian's archive only.
# Idempotent: packages already present are skipped by apt. Run as root (or via sudo).
#   install-deps.sh          build
#   install-deps.sh --python build + what the Python package needs at run time (make install):
#                            numpy, and Dask distributed for bulk encoding
#                            (where npm is there: also the chat page's pinned markdown-it,
#                            scripts/install-webui-lib.sh, which the build embeds)
#   install-deps.sh --test   build + tests (make test; with the arm64 cross build, make test-arm64),
#                            and the OpenAI clients the tests drive g4v serve with: Node's (npm
#                            `openai`, `zod` and `puppeteer-core`, pinned) under ~/.cache/g4v-node,
#                            Debian's chromium for the chat page's test, Python's (PyPI
#                            `openai`, pydantic, jsonschema, pinned) under ~/.cache/g4v-pyclient
#   install-deps.sh --load   build + tests + wrk (make load: the HTTP service under load)
#   install-deps.sh --bench  build + tests + the benchmark peers (make bench): PyTorch with
#                            OpenBLAS for bench/torch_peer.py, oneDNN for bench_gemm. Note that
#                            Debian makes a newly installed OpenBLAS the system libblas.so.3.
set -euo pipefail

BUILD_PKGS="build-essential cmake pkg-config libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev libtiff-dev libcjson-dev libmicrohttpd-dev libcurl4-openssl-dev libavformat-dev libavcodec-dev libswscale-dev libavutil-dev"
TEST_PKGS="python3 python3-numpy python3-pil python3-pytest python3-distributed clang libclang-rt-14-dev libsimde-dev ffmpeg python3-av"
# make coverage (llvm-profdata, llvm-cov) and the fuzz campaigns' CPU-time log (/usr/bin/time)
TEST_PKGS="$TEST_PKGS llvm time"
# make chat-test / chat-demo: scripts/build-llama.sh gets llama.cpp with npm and git, builds it
# with ninja (C++: build-essential). npm only when there is none (a Node.js from elsewhere may
# bring its own, which Debian's npm package would conflict with)
TEST_PKGS="$TEST_PKGS git ninja-build"
# the clients tests/service/test_serve_auth.py and test_serve_openai.py call g4v serve with
TEST_PKGS="$TEST_PKGS curl"
# the Python OpenAI client's virtual environment (scripts/install-py-client.sh)
TEST_PKGS="$TEST_PKGS python3-venv"
# the chat page of g4v serve --lm is tested in a real browser (tests/chat/test_chat_webui.py,
# driven by npm's puppeteer-core, which brings no browser of its own)
TEST_PKGS="$TEST_PKGS chromium"
# make test-arm64: the aarch64 cross compiler, qemu-user, and the build's libraries for arm64
# (Debian multiarch: the arm64 architecture is added to dpkg when one of them is missing)
ARM64_LIBS="libjpeg62-turbo-dev libpng-dev libwebp-dev libgif-dev libtiff-dev libcjson-dev libmicrohttpd-dev libavformat-dev libavcodec-dev libswscale-dev libavutil-dev"
TEST_PKGS="$TEST_PKGS gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
for p in $ARM64_LIBS; do TEST_PKGS="$TEST_PKGS $p:arm64"; done
PYTHON_PKGS="python3 python3-numpy python3-distributed"
LOAD_PKGS="wrk"
# llvm-19: llvm-mca with the Neoverse V1/V2 models for make bench-arm64-mca
BENCH_PKGS="python3-torch libopenblas0-pthread libdnnl-dev llvm-19"

want="$BUILD_PKGS"
case "${1:-}" in
    --python) want="$BUILD_PKGS $PYTHON_PKGS" ;;
    --test) want="$BUILD_PKGS $TEST_PKGS" ;;
    --load) want="$BUILD_PKGS $TEST_PKGS $LOAD_PKGS" ;;
    --bench) want="$BUILD_PKGS $TEST_PKGS $BENCH_PKGS" ;;
    "") ;;
    *) echo "usage: install-deps.sh [--python|--test|--load|--bench]" >&2; exit 1 ;;
esac

missing=""
case "${1:-}" in --test|--load|--bench) command -v npm >/dev/null || missing=" npm" ;; esac
for p in $want; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
    echo "install-deps: all packages present"
else
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    echo "install-deps: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    case "$missing" in
        *:arm64*) dpkg --print-foreign-architectures | grep -qx arm64 ||
            $SUDO dpkg --add-architecture arm64 ;;
    esac
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends $missing
fi
# npm's packages go to the calling user's cache, not root's: no sudo here
# (exit 75: the registry cannot be reached; the tests that need the client then say so and skip)
# the chat page's markdown-it (tools/service/webui/lib/package-lock.json), embedded by the build:
# with --test and up (npm installed above), and for a plain build where npm is already there
case "${1:-}" in
    --test|--load|--bench) want_lib=1 ;;
    *) want_lib=0; command -v npm >/dev/null && want_lib=1 ;;
esac
if [ "$want_lib" = 1 ]; then
    rc=0; "$(dirname "$0")/install-webui-lib.sh" >/dev/null || rc=$?
    [ "$rc" = 0 ] || [ "$rc" = 75 ] || exit "$rc"
fi
case "${1:-}" in
    --test|--load|--bench) rc=0; "$(dirname "$0")/install-node-client.sh" >/dev/null || rc=$?
        [ "$rc" = 0 ] || [ "$rc" = 75 ] || exit "$rc"
        rc=0; "$(dirname "$0")/install-py-client.sh" >/dev/null || rc=$?
        [ "$rc" = 0 ] || [ "$rc" = 75 ] || exit "$rc" ;;
esac
