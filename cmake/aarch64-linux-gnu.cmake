# aarch64-linux-gnu.cmake - cross build for 64-bit ARM Linux with Debian's toolchain
# (gcc-aarch64-linux-gnu) and the arm64 multiarch libraries (libjpeg62-turbo-dev:arm64 ...), as
# `make test-arm64` does (scripts/install-deps.sh --test installs both):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# Test programs run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR: ctest prefixes every C test
# with it; tests/CMakeLists.txt wraps the binaries the Python tests start). qemu-aarch64 reads its
# CPU model from QEMU_CPU (make test-arm64 runs the suite with "max" and "cortex-a57").
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Libraries and headers: the multiarch paths (/usr/lib/aarch64-linux-gnu) and the cross libc;
# programs (python3, pkg-config) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config answers for the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
find_program(G4V_QEMU_AARCH64 qemu-aarch64)
if(G4V_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${G4V_QEMU_AARCH64})
endif()
# g4v chat links llama.cpp, whose cached build (scripts/build-llama.sh) is the host's: off here.
set(G4V_CHAT OFF CACHE BOOL "Build g4v chat when libllama is found")
