#!/bin/sh
# install.sh - make install: the library, header, CLI, CMake/pkg-config files and the
# gemma4_vision Python package under $PREFIX (into lib/python3.X/dist-packages, where Debian's
# python3 finds it for /usr/local and /usr). Then checks that the installed package imports and
# loads the library.
. scripts/make/lib.sh
PREFIX=${PREFIX:-/usr/local}
scripts/install-deps.sh --python
configure "$BUILD" $CMAKE_FLAGS
compile "$BUILD"
cmake --install "$BUILD" --prefix "$PREFIX"
cd / && env -u PYTHONPATH -u G4V_LIBRARY $PYTHON -c "import gemma4_vision as g; \
print('install: gemma4_vision', g.__file__, '->', g.library_path(), g.library_version())" ||
    echo "install: $PYTHON does not search $PREFIX; add its lib/python3.X/dist-packages to PYTHONPATH"
