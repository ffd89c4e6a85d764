#!/bin/sh
# build-llama.sh - llama.cpp's libllama + libmtmd for `g4v chat` and its tests (docs/CHAT.md §6).
#
# Gets the pinned llama.cpp release the way node-llama-cpp ships it (npm pack node-llama-cpp@3.22.1;
# its package/llama/gitRelease.bundle is a git bundle of the release source, commit de3ff815),
# verifies the commit, builds the shared libraries for the CPU and installs them into
#     ${G4V_LLAMA_CACHE:-~/.cache/g4v-llama}/<commit>-cpu-variants/{include,lib}
# with the source tree kept as <commit>/src (gguf-py and the Gemma 4 vocabulary for the tests),
# linked from the prefix as src. Idempotent: a finished install of the same flavor (its .complete
# names the flavor's build options) is reused. Prints the prefix last.
#   LLAMA_SRC=DIR   use an existing clone of that commit instead of npm (it is verified)
#   JOBS=N          parallel build jobs (default: nproc)
# Build: Release, no CUDA/Metal, no curl/openssl, libllama + libmtmd only (no tools, no server).
# The CPU backend is llama.cpp's set of run-time variants (GGML_BACKEND_DL=ON,
# GGML_CPU_ALL_VARIANTS=ON): lib/libggml-cpu-<variant>.so for each instruction-set level (x86-64:
# x64, sse42 ... haswell (AVX2), skylakex/icelake/zen4 (AVX-512), alderlake (AVX-VNNI),
# sapphirerapids (AMX); aarch64 Linux: armv8.0_1 ... armv9.2_2, which need GCC >= 14 or Clang),
# of which the process loads the best its CPU runs (chat/chat_backend.c). So one cache serves
# every machine and each gets its best kernels; ~25-30 minutes on 2 cores (every variant compiles
# the CPU backend).
# RUNPATH $ORIGIN: the libraries and the variants find each other where installed.
# Patched: the source is the pinned commit plus scripts/llama-patches/*.patch, applied in name
# order (each a few lines, each saying why in its own comment; the .complete mark names them, so a
# build from before a patch is rebuilt). Today: amx-tile-config.patch, without which Debian 12's
# GCC 12 builds an AMX path (libggml-cpu-sapphirerapids.so) that configures empty tiles and dies
# with SIGILL on every quantized text model on an AMX Xeon (docs/CHAT.md §6). After the build,
# scripts/check-tile-config.py reads every installed library's machine code and fails the build if
# any tile configuration is still left unfilled.
#   --avx2         today's former default, for comparison (make bench-llama-backends): one CPU
#                  backend linked into libggml, GGML_NATIVE=OFF (the AVX2/FMA/F16C baseline on
#                  x86-64, Armv8-A on aarch64), into <commit>/{include,lib}; 5-9 minutes on 2 cores
#   --bench        the peers for `make bench-chat` instead: GGML_NATIVE=ON (llama.cpp at its best
#                  on this CPU) plus llama.cpp's llama-mtmd-cli and llama-server (without its web
#                  UI, HTTP only), into <commit>-native/{include,lib,bin} (~15 minutes on 2 cores;
#                  the native build is not portable across CPUs: never for CI's tests)
#   --src          only the verified source tree: prints <commit>/src, builds nothing
set -eu
FLAVOR=variants
case "${1:-}" in
  "") ;;
  --avx2) FLAVOR=avx2 ;;
  --bench) FLAVOR=native ;;
  --src) FLAVOR=src ;;
  *) echo "usage: build-llama.sh [--avx2 | --bench | --src]" >&2; exit 1 ;;
esac
COMMIT=de3ff815ea7d559ee917f063901b8986f038abc6
NPM_PKG=node-llama-cpp@3.22.1
CACHE=${G4V_LLAMA_CACHE:-$HOME/.cache/g4v-llama}
HERE=$(cd "$(dirname "$0")" && pwd)
PATCHES=$(ls "$HERE"/llama-patches/*.patch 2>/dev/null | sort)
PATCH_NAMES="patches=$(for p in $PATCHES; do basename "$p" .patch; done | paste -sd+ -)"
# each flavor's prefix, and the build options its .complete must name to be reused
case $FLAVOR in
  variants) PREFIX=$CACHE/$COMMIT-cpu-variants MARK=GGML_CPU_ALL_VARIANTS=ON ;;
  avx2) PREFIX=$CACHE/$COMMIT MARK=GGML_NATIVE=OFF ;;
  native) PREFIX=$CACHE/$COMMIT-native MARK=GGML_NATIVE=ON ;;
  src) PREFIX=$CACHE/$COMMIT MARK="" ;;
esac
# a native build from before llama-server was part of it is rebuilt
[ $FLAVOR = native ] && [ ! -x "$PREFIX/bin/llama-server" ] && rm -f "$PREFIX/.complete"
JOBS=${JOBS:-$(nproc)}

if [ -n "$MARK" ] && grep -qs -- "$MARK" "$PREFIX/.complete" &&
   grep -qs -- "$PATCH_NAMES," "$PREFIX/.complete" && [ -f "$PREFIX/include/llama.h" ]; then
  echo "build-llama: $PREFIX is built ($(cat "$PREFIX/.complete"))" >&2
  echo "$PREFIX"
  exit 0
fi
for tool in git cmake; do
  command -v $tool >/dev/null || { echo "build-llama: $tool is needed" >&2; exit 1; }
done
mkdir -p "$PREFIX"
SRC=$CACHE/$COMMIT/src

have_src() { [ -d "$SRC/.git" ] && [ "$(git -C "$SRC" rev-parse HEAD 2>/dev/null)" = "$COMMIT" ]; }
if ! have_src; then
  rm -rf "$SRC"
  if [ -n "${LLAMA_SRC:-}" ]; then
    echo "build-llama: cloning $LLAMA_SRC" >&2
    git clone -q "$LLAMA_SRC" "$SRC"
  else
    command -v npm >/dev/null || { echo "build-llama: npm is needed (or LLAMA_SRC=DIR)" >&2; exit 1; }
    TMP=$(mktemp -d)
    trap 'rm -rf "$TMP"' EXIT
    echo "build-llama: npm pack $NPM_PKG" >&2
    (cd "$TMP" && npm pack --silent "$NPM_PKG" >/dev/null &&
     tar xzf node-llama-cpp-*.tgz package/llama/gitRelease.bundle)
    git clone -q "$TMP/package/llama/gitRelease.bundle" "$SRC"
  fi
  git -C "$SRC" checkout -q "$COMMIT" 2>/dev/null || true
  if ! have_src; then
    echo "build-llama: $SRC is not at commit $COMMIT ($(git -C "$SRC" rev-parse HEAD 2>/dev/null))" >&2
    exit 1
  fi
fi

# our patches, each applied once: a tree that has it already is left as it is
for p in $PATCHES; do
  if git -C "$SRC" apply --check "$p" 2>/dev/null; then
    echo "build-llama: applying $(basename "$p")" >&2
    git -C "$SRC" apply "$p"
  elif ! git -C "$SRC" apply --reverse --check "$p" 2>/dev/null; then
    echo "build-llama: $p applies neither way to $SRC (a changed tree: remove it to refetch)" >&2
    exit 1
  fi
done

if [ $FLAVOR = src ]; then
  echo "$SRC"
  exit 0
fi

# the installed libraries' tile configurations are all filled in, or the build is refused
check_tiles() {
  if ! python3 "$HERE/check-tile-config.py" "$1" >&2; then
    echo "build-llama: an AMX tile configuration in $1 is left empty: the patch did not take" >&2
    exit 1
  fi
}

if [ $FLAVOR = native ]; then
  # llama.cpp's own CLI and server need its common library and the tools; only these targets are
  # built and copied (a full install would build every tool). The server's web UI is left out:
  # its prebuilt assets would be downloaded at build time, and the benchmark needs only the API.
  BUILD=$CACHE/build-$COMMIT-native
  echo "build-llama: native build with llama-mtmd-cli and llama-server into $PREFIX ($JOBS jobs)" >&2
  cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_RPATH='$ORIGIN/../lib' \
    -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
    -DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_METAL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_SUBPROCESS=OFF \
    -DLLAMA_BUILD_MTMD=ON -DBUILD_SHARED_LIBS=ON >&2
  cmake --build "$BUILD" -j "$JOBS" --target llama mtmd llama-mtmd-cli llama-server >&2
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX/include" "$PREFIX/lib" "$PREFIX/bin"
  cp "$SRC"/include/llama*.h "$SRC"/ggml/include/*.h "$SRC"/tools/mtmd/mtmd*.h "$PREFIX/include/"
  cp -P "$BUILD"/bin/lib*.so* "$PREFIX/lib/"
  cp "$BUILD/bin/llama-mtmd-cli" "$BUILD/bin/llama-server" "$PREFIX/bin/"
  rm -rf "$BUILD"
  check_tiles "$PREFIX/lib"
  echo "commit $COMMIT, GGML_NATIVE=ON, tools, server, $PATCH_NAMES, $(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    > "$PREFIX/.complete"
  echo "$PREFIX"
  exit 0
fi

GEN=""
command -v ninja >/dev/null && GEN="-G Ninja"
BUILD=$CACHE/build-$COMMIT-$FLAVOR
if [ $FLAVOR = variants ]; then
  CPU_OPTS="-DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON"
  # aarch64's highest levels are Armv9.2-A with SME, which GCC < 14 (Debian 12's 12.2) rejects
  if [ "$(uname -m)" = aarch64 ] && ! echo 'int main(void){return 0;}' |
     ${CC:-cc} -march=armv9.2-a+dotprod+fp16+sve+i8mm+sve2+sme -x c -c -o /dev/null - 2>/dev/null; then
    echo "build-llama: ${CC:-cc} cannot compile llama.cpp's armv9.2-a+sme CPU variants: set CC and" \
         "CXX to GCC >= 14 or Clang, or build the baseline alone (--avx2)" >&2
    exit 1
  fi
else
  CPU_OPTS=""
fi
echo "build-llama: $FLAVOR build into $PREFIX ($JOBS jobs)" >&2
# shellcheck disable=SC2086
cmake -S "$SRC" -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_INSTALL_RPATH='$ORIGIN' \
  -DGGML_NATIVE=OFF $CPU_OPTS -DGGML_CUDA=OFF -DGGML_METAL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_SUBPROCESS=OFF \
  -DLLAMA_BUILD_MTMD=ON -DBUILD_SHARED_LIBS=ON >&2
cmake --build "$BUILD" -j "$JOBS" >&2
cmake --install "$BUILD" >&2
rm -rf "$BUILD"
if [ $FLAVOR = variants ]; then
  # ggml installs the backend modules with the executables; they belong beside libggml-base,
  # where their RUNPATH finds it and where chat_backend.c looks for them
  mv "$PREFIX"/bin/libggml-*.so "$PREFIX/lib/"
  rmdir "$PREFIX/bin" 2>/dev/null || true
  ln -sfn "../$COMMIT/src" "$PREFIX/src"
  OPTS="GGML_NATIVE=OFF, GGML_BACKEND_DL=ON, GGML_CPU_ALL_VARIANTS=ON"
else
  OPTS="GGML_NATIVE=OFF"
fi
check_tiles "$PREFIX/lib"
echo "commit $COMMIT, $OPTS, shared, $PATCH_NAMES, $(date -u +%Y-%m-%dT%H:%M:%SZ)" > "$PREFIX/.complete"
echo "$PREFIX"
