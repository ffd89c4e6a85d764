# Thin wrapper around CMake so that a new user types one command.
#   make            configure + build (build/)
#   make test       install test dependencies, build, run every test (CTest)
#   make demo       install, build, generate a synthetic e4b checkpoint (random weights, real
#                   layout; ~340 MB, a few seconds) into build/demo-model once, describe it
#   make asan       unit tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)
#   make tsan       the API tests (concurrent contexts on one model) under ThreadSanitizer
#   make fault      hostile-input tests: allocation-failure sweeps, bombs, fuzz regressions
#                   under ASan + UBSan with fault injection (build-fault/)
#   make fuzz       build the libFuzzer targets (clang, build-fuzz/) and fuzz each for SECONDS
#                   (default 60); make fuzz-smoke: FUZZ_SMOKE_SECONDS (30) each, 2 at a time
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PYTHON ?= /usr/bin/python3
DEMO_MODEL ?= $(BUILD)/demo-model

.PHONY: all deps test-deps build test demo asan tsan fault fuzz-build fuzz fuzz-smoke clean

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
	$(MAKE) tsan
	$(MAKE) fault fuzz-smoke

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
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DG4V_SANITIZE=ON -DG4V_FAULT_INJECTION=ON \
	  -DG4V_WERROR=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -L 'unit|fault'

# The public API's tests (incl. N threads over one shared model) under ThreadSanitizer.
tsan: test-deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_TSAN=ON -DG4V_WERROR=ON
	cmake --build build-tsan -j $(JOBS) --target test_api_threads
	cd build-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -L tsan

# Hostile input (docs/LIMITS.md): the N-th allocation fails for every N over load and encode,
# decompression bombs, and the fuzz regression replays, under ASan/LSan + UBSan. Optimised
# (RelWithDebInfo) so the sweeps stay fast.
FAULT_TESTS = test_fault_bombs test_fault_alloc fuzz_safetensors_replay fuzz_config_replay \
	fuzz_index_replay fuzz_image_replay fuzz_encode_replay
fault: test-deps
	cmake -S . -B build-fault -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_SANITIZE=ON \
	  -DG4V_FAULT_INJECTION=ON -DG4V_WERROR=ON
	cmake --build build-fault -j $(JOBS) --target $(FAULT_TESTS)
	cd build-fault && ctest --output-on-failure -j $(JOBS) -L fault

# libFuzzer targets (fuzz/README.md): clang, ASan + UBSan, library built with coverage.
SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 30
FUZZ_PARALLEL ?= 2
fuzz-build: test-deps
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DG4V_SANITIZE=ON -DG4V_FUZZ=ON -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link
	cmake --build build-fuzz -j $(JOBS) --target g4v_fuzz

fuzz: fuzz-build
	fuzz/run_fuzz.sh build-fuzz $(SECONDS) $(FUZZ_PARALLEL)

# The CI run: every target for FUZZ_SMOKE_SECONDS, FUZZ_PARALLEL at a time (5 targets, 2 at a
# time: 3 rounds, ~1.5 min at 30 s).
fuzz-smoke: fuzz-build
	fuzz/run_fuzz.sh build-fuzz $(FUZZ_SMOKE_SECONDS) $(FUZZ_PARALLEL)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fault build-fuzz
