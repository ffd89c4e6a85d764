# Thin wrapper around CMake so that a new user types one command: make demo, make test.
# Each target is one line that runs a script: scripts/make/<target>.sh (what the target does, and
# the settings it reads, is said at the top of its script) or a script of scripts/, fuzz/ or
# bench/. `make help` lists every target with one line (the "## " comment on its rule line; a
# test, tests/docs/test_makefile.py, keeps every target in it and every recipe one script call).
# This file holds building, the tests CI runs, the demos and installing; the measurements (speed,
# accuracy) are in mk/bench.mk, the long-running reliability targets (load, soak, coverage) in
# mk/reliability.mk. docs/TESTING.md says what the test targets run.
#
# Settings are make variables (make demo MODEL=DIR) or the environment; the scripts read them
# from their environment. RUN passes the four every script uses, with these defaults.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PYTHON ?= /usr/bin/python3
RUN = BUILD='$(BUILD)' JOBS='$(JOBS)' CMAKE_FLAGS='$(CMAKE_FLAGS)' PYTHON='$(PYTHON)' MAKE='$(MAKE)'

.PHONY: all help deps test-deps bench-deps load-deps build test check test-arm64 chat-test \
  chat-compat webui-shots chat-demo demo install hf-parity asan tsan fault fuzz-build fuzz fuzz-merge fuzz-smoke clean

all: build ## configure + build into build/ (the default)

help: ## this list
	@scripts/make/help.sh $(MAKEFILE_LIST)

deps: ## install the build dependencies from Debian (scripts/install-deps.sh)
	scripts/install-deps.sh

test-deps: ## install the build + test dependencies
	scripts/install-deps.sh --test

bench-deps: ## install the benchmark peers too (PyTorch, OpenBLAS, oneDNN)
	scripts/install-deps.sh --bench

load-deps: ## install wrk too, for make load
	scripts/install-deps.sh --load

build: ## configure + build into $(BUILD) (CMAKE_FLAGS, JOBS)
	$(RUN) scripts/make/build.sh

test: check ## everything CI runs (~25-35 min): check, chat-test, chat-compat, test-arm64, asan, tsan, fuzz-smoke, hf-parity
	$(RUN) scripts/make/test-all.sh

check: test-deps ## build with -Werror and run the default ctest suite (a few minutes)
	$(RUN) scripts/make/check.sh

test-arm64: test-deps ## cross-build for ARM64, run kernel/encoder/CLI tests under qemu (max, A57)
	$(RUN) scripts/make/test-arm64.sh

chat-test: test-deps ## build llama.cpp once, then g4v chat's tests (ctest -L chat)
	@$(RUN) scripts/make/chat-test.sh

chat-compat: test-deps ## llama.cpp's own server tests against g4v serve --lm (tests/chat/compat)
	@$(RUN) scripts/make/chat-compat.sh

webui-shots: test-deps ## screenshots of g4v serve --lm's chat page into build/webui-shots
	@$(RUN) scripts/make/webui-shots.sh

chat-demo: test-deps ## g4v chat on synthetic models (LM=, MODEL=, IMAGE=, PROMPT= for real ones)
	@$(RUN) scripts/make/chat-demo.sh

demo: test-deps ## build, then encode an image with g4v encode (MODEL=DIR IMAGE=FILE, else synthetic)
	@$(RUN) scripts/make/demo.sh

install: ## install libg4v, g4v.h, g4v and the Python package under PREFIX (/usr/local)
	$(RUN) scripts/make/install.sh

hf-parity: test-deps ## against transformers itself in a pinned venv (HF_QUICK=1 for small shapes)
	$(RUN) scripts/make/hf-parity.sh

asan: test-deps ## unit + hostile-input tests under ASan + UBSan with fault injection (build-asan/)
	$(RUN) scripts/make/asan.sh

tsan: test-deps ## the API thread tests and g4v serve's chat slots under ThreadSanitizer (build-tsan/)
	@$(RUN) scripts/make/tsan.sh

fault: test-deps ## allocation-failure sweeps, bombs, fuzz replays under ASan (build-fault/)
	$(RUN) scripts/make/fault.sh

# libFuzzer targets (fuzz/README.md). make fuzz-smoke (CI): every target for FUZZ_SMOKE_SECONDS,
# FUZZ_PARALLEL at a time. make fuzz: a longer campaign (SECONDS each; FUZZ_TARGETS picks some).
# After it, make fuzz-merge folds the working corpora into fuzz/grown (minimized; commit it) so
# the next campaign, anywhere, continues from there (fuzz/merge_corpus.sh).
SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 60
FUZZ_PARALLEL ?= 2
FUZZ_TARGETS ?=
fuzz-build: test-deps ## build the libFuzzer targets (clang, build-fuzz/)
	$(RUN) scripts/make/fuzz-build.sh

fuzz: fuzz-build ## fuzz each target for SECONDS (60; FUZZ_TARGETS picks some)
	fuzz/run_fuzz.sh build-fuzz $(SECONDS) $(FUZZ_PARALLEL) $(FUZZ_TARGETS)

fuzz-merge: fuzz-build ## fold the fuzzing corpora into fuzz/grown (minimized, committed)
	fuzz/merge_corpus.sh build-fuzz $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build ## every fuzz target for FUZZ_SMOKE_SECONDS (60), FUZZ_PARALLEL (2) at a time
	fuzz/run_fuzz.sh build-fuzz $(FUZZ_SMOKE_SECONDS) $(FUZZ_PARALLEL)

clean: ## remove every build directory
	scripts/make/clean.sh $(BUILD)

include mk/bench.mk mk/reliability.mk
