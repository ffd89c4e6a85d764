#!/bin/sh
# test_install.sh BUILD_DIR SOURCE_DIR FIXTURES - installs the built library into a temporary
# prefix with `cmake --install` and builds examples/splice.c against it as an outside project:
# (1) CMake find_package(g4v) -> g4v::g4v (shared), (2) the same with g4v::g4v_static,
# (3) CMake + pkg-config (g4v.pc), (4) plain cc with `pkg-config --cflags --libs g4v`.
# Each binary is run on the API fixtures' tiny model and an image and must report "splice check: ok".
set -eu
BUILD=$1 SRC=$2 FIX=$3
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
P=$T/prefix
cmake --install "$BUILD" --prefix "$P" >/dev/null
for f in include/g4v.h bin/g4v; do test -f "$P/$f" || { echo "missing $f"; exit 1; }; done
LIB=$(dirname "$(find "$P" -name g4v.pc)")/..
test -f "$LIB/libg4v.a" && test -e "$LIB/libg4v.so" && test -f "$LIB/cmake/g4v/g4vConfig.cmake" \
  && test -f "$LIB/cmake/g4v/g4vConfigVersion.cmake" || { echo "missing library/package files"; exit 1; }
export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PKG_CONFIG_PATH="$LIB/pkgconfig"
run() { # name binary
  out=$("$2" "$FIX/tiny" "$FIX/img1.png" 4) || { echo "$1: splice failed: $out"; exit 1; }
  echo "$out" | grep -q "splice check: ok" || { echo "$1: $out"; exit 1; }
  echo "ok   $1: $(echo "$out" | head -1)"
}
cmake -S "$SRC/examples" -B "$T/b1" -DCMAKE_PREFIX_PATH="$P" >/dev/null
cmake --build "$T/b1" >/dev/null
run "find_package(g4v), g4v::g4v" "$T/b1/splice"
cmake -S "$SRC/examples" -B "$T/b2" -DCMAKE_PREFIX_PATH="$P" -DG4V_STATIC=ON >/dev/null
cmake --build "$T/b2" >/dev/null
run "find_package(g4v), g4v::g4v_static" "$T/b2/splice"
if ldd "$T/b2/splice" | grep -q libg4v; then echo "static build links libg4v.so"; exit 1; fi
cmake -S "$SRC/examples" -B "$T/b3" -DG4V_USE_PKGCONFIG=ON >/dev/null
cmake --build "$T/b3" >/dev/null
run "CMake + pkg-config g4v.pc" "$T/b3/splice"
cc -o "$T/splice_cc" "$SRC/examples/splice.c" $(pkg-config --cflags --libs g4v) -lm
run "cc \$(pkg-config --cflags --libs g4v)" "$T/splice_cc"
"$P/bin/g4v" --version | grep -q "g4v 0.2.0"
echo "test_install: all passed"
