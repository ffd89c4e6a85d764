# Thin wrapper around CMake so that a new user types one command.
#   make            configure + build (build/)
#   make test       install test dependencies, build, run every test (CTest)
#   make demo       install, build, generate a synthetic e4b checkpoint (random weights, real
#                   layout; ~340 MB, a few seconds) into build/demo-model once, describe it
#   make asan       unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PYTHON ?= /usr/bin/python3
DEMO_MODEL ?= $(BUILD)/demo-model

.PHONY: all deps test-deps build test demo asan clean

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

# The checkpoint is synthetic: no real Gemma 4 weights are downloaded or needed. config.json is
# written last, so an interrupted generation is redone.
demo: test-deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	@if [ ! -f $(DEMO_MODEL)/config.json ]; then \
	  echo "demo: generating a SYNTHETIC e4b checkpoint in $(DEMO_MODEL) (tools/gen_checkpoint.py)"; \
	  $(PYTHON) tools/gen_checkpoint.py $(DEMO_MODEL) --config e4b --seed 0; \
	fi
	@echo "demo: NOTE: $(DEMO_MODEL) is a SYNTHETIC checkpoint (random weights in the real e4b"
	@echo "demo:       layout and names), not Google's Gemma 4 weights."
	$(BUILD)/g4v info --model $(DEMO_MODEL)

asan: test-deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DG4V_SANITIZE=ON -DG4V_WERROR=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -L unit

clean:
	rm -rf $(BUILD) build-asan
