# Thin wrapper around CMake so that a new user types one command.
#   make            configure + build (build/)
#   make test       install test dependencies, build, run every test (CTest)
#   make demo       install, build, encode an image with a generated checkpoint
#   make asan       unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps test-deps build test asan clean

all: build

deps:
	scripts/install-deps.sh

test-deps:
	scripts/install-deps.sh --test

build:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

test: test-deps
	cmake -S . -B $(BUILD) -DG4V_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

asan: test-deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DG4V_SANITIZE=ON -DG4V_WERROR=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -L unit

clean:
	rm -rf $(BUILD) build-asan
