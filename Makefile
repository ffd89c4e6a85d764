# Thin wrapper around CMake so that a new user types one command: make demo, make test.
# `make help` lists every target with one line (the "## " comment on its rule line; a test,
# tests/docs/test_makefile.py, keeps every target in it). This file holds building, the tests CI
# runs, the demos and installing; the measurements (speed, accuracy) are in mk/bench.mk, the
# long-running reliability targets (load, soak, coverage) in mk/reliability.mk. docs/TESTING.md
# says what the test targets run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PYTHON ?= /usr/bin/python3
DEMO_MODEL ?= $(BUILD)/demo-model

# $(call configure,DIR,FLAGS): configure a build directory (every target configures through it).
# $(call compile,DIR[,TARGETS]): build it, or only TARGETS.
# $(call configure-build,DIR,FLAGS[,TARGETS]): both, as two recipe lines.
configure = cmake -S . -B $(1) $(2)
compile = cmake --build $(1) -j $(JOBS)$(if $(strip $(2)), --target $(strip $(2)))
define configure-build
$(call configure,$(1),$(2))
$(call compile,$(1),$(3))
endef
# Inside a recipe's shell: the llama.cpp build (scripts/build-llama.sh prints its install prefix;
# a cached build is reused) as $$prefix, and the CMake flags that link g4v against it.
LLAMA_PREFIX = prefix=$$(scripts/build-llama.sh | tail -1)
LLAMA_FLAGS = -DG4V_LLAMA_DIR=$$prefix -DG4V_LLAMA_SRC=$$prefix/src

.PHONY: all help deps test-deps bench-deps load-deps build test check test-arm64 chat-test \
  webui-shots chat-demo demo install hf-parity asan tsan fault fuzz-build fuzz fuzz-merge fuzz-smoke clean

all: build ## configure + build into build/ (the default)

help: ## this list
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z0-9-]+):.*## /\1\t/' | \
	  awk -F'\t' '{ printf "  make %-15s %s\n", $$1, $$2 }'

deps: ## install the build dependencies from Debian (scripts/install-deps.sh)
	scripts/install-deps.sh

test-deps: ## install the build + test dependencies
	scripts/install-deps.sh --test

bench-deps: ## install the benchmark peers too (PyTorch, OpenBLAS, oneDNN)
	scripts/install-deps.sh --bench

load-deps: ## install wrk too, for make load
	scripts/install-deps.sh --load

build: ## configure + build into $(BUILD) (CMAKE_FLAGS, JOBS)
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS))

# make test: everything CI runs. The default suite (make check), the chat tests (make chat-test),
# the ARM64 build's tests under qemu (make test-arm64), the unit and encoder tests again with the
# SIMD paths disabled (G4V_ISA=portable; the SIMDe tests emulate AVX-512 by design, so they are
# left out of that run), the unit + hostile-input tests under ASan/UBSan with allocation-failure
# injection (make asan), the thread tests under TSan (make tsan), a short fuzz run (make
# fuzz-smoke) and the transformers comparison (make hf-parity).
test: check ## everything CI runs (~25-35 min): check, chat-test, test-arm64, asan, tsan, fuzz-smoke, hf-parity
	$(MAKE) chat-test
	$(MAKE) test-arm64
	cd $(BUILD) && G4V_ISA=portable ctest --output-on-failure -j $(JOBS) -L 'unit|encoder' -FA '.*' \
	  -E '_simde$$'
	$(MAKE) asan
	$(MAKE) tsan
	$(MAKE) fuzz-smoke
	$(MAKE) hf-parity

check: test-deps ## build with -Werror and run the default ctest suite (a few minutes)
	$(call configure-build,$(BUILD),-DG4V_WERROR=ON $(CMAKE_FLAGS))
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE chat $(CTEST_FLAGS)

# make test-arm64: the ARM64 build, cross-compiled (cmake/aarch64-linux-gnu.cmake: Debian's
# aarch64-linux-gnu toolchain and arm64 multiarch libraries) into $(ARM64_BUILD), and the tests
# labelled where they are registered (tests/**/CMakeLists.txt) run under qemu-aarch64: label
# arm64 as -cpu max (NEON + BF16 + I8MM + DotProd: the BFDOT GEMM is chosen), label arm64-a57
# again as -cpu cortex-a57 (ARMv8.0 NEON only). The labelled tests are the kernel, unit and encoder
# tests and `g4v encode` against the float64 reference (the last under -cpu max only: its kernels
# are that run's). ctest prefixes the C tests with the emulator; the Python tests start the
# programs through wrappers (tests/CMakeLists.txt, g4v_tool). Emulation is ~10-50x slower than
# native, so the image decoder, Pillow and video suites (no ARM-specific code), the long CLI
# front-end tests and the G4V_ISA-capped reruns carry no arm64 label, and the encoder reference
# test keeps its tiny checkpoints (G4V_EMULATED). Only the programs those tests need are built
# (the g4v_arm64_tests target, tests/CMakeLists.txt).
ARM64_BUILD ?= build-arm64
test-arm64: test-deps ## cross-build for ARM64, run kernel/encoder/CLI tests under qemu (max, A57)
	$(call configure-build,$(ARM64_BUILD),-DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
	  -DG4V_WERROR=ON,g4v_arm64_tests)
	cd $(ARM64_BUILD) && QEMU_CPU=max ctest --output-on-failure -j $(JOBS) -L '^arm64$$'
	cd $(ARM64_BUILD) && QEMU_CPU=cortex-a57 ctest --output-on-failure -j $(JOBS) -L '^arm64-a57$$'

# make chat-test: g4v chat against llama.cpp (docs/CHAT.md §5): g4v is configured against the
# llama.cpp build and the chat tests run.
chat-test: test-deps ## build llama.cpp once, then g4v chat's tests (ctest -L chat)
	@set -e; $(LLAMA_PREFIX); \
	$(call configure,$(BUILD),-DG4V_WERROR=ON $(LLAMA_FLAGS) $(CMAKE_FLAGS)); \
	$(call compile,$(BUILD)); \
	cd $(BUILD); ctest -N -L chat | grep -q chat_mtmd_ || \
	  { echo "chat-test: CMake did not pick up $$prefix (see cmake/Llama.cmake)"; exit 1; }; \
	ctest --output-on-failure -j $(JOBS) -L chat

# make webui-shots: screenshots of the chat page of g4v serve --lm (docs/WEBUI.md) in its main
# states (empty, attachments with budgets, streaming, an answer with its figures, a thought, an
# error, the API key, 390 px wide, a conversation back after a reload, the list of conversations,
# limits refused with the context meter, coloured code), taken by its browser test (ctest
# chat_webui, synthetic models).
webui-shots: test-deps ## screenshots of g4v serve --lm's chat page into build/webui-shots
	@set -e; $(LLAMA_PREFIX); \
	$(call configure,$(BUILD),-DG4V_WERROR=ON $(LLAMA_FLAGS) $(CMAKE_FLAGS)); \
	$(call compile,$(BUILD)); \
	shots=$(abspath $(BUILD))/webui-shots; rm -rf $$shots; \
	cd $(BUILD); ctest -N -R '^chat_webui$$' | grep -q chat_webui || \
	  { echo "webui-shots: CMake did not pick up $$prefix (see cmake/Llama.cmake)"; exit 1; }; \
	G4V_WEBUI_SHOTS=$$shots ctest --output-on-failure -R '^chat_webui$$'; \
	echo "webui-shots: the screenshots are in $$shots"; ls $$shots

# make chat-demo: one question about one image through g4v chat. Without LM=FILE a SYNTHETIC
# Gemma 4 text model (e2b width, 4 layers, random weights, the real tokenizer) and a matching
# synthetic vision model are generated into $(CHAT_DEMO) once: the answer is gibberish, the path
# is real. With LM=gemma-4-E4B-it-Q4_K_M.gguf MODEL=gemma-4-e4b-it (or its mmproj .gguf)
# IMAGE=photo.jpg it answers for real.
LM ?=
PROMPT ?= Describe this image in one sentence.
CHAT_DEMO ?= $(BUILD)/chat-demo
chat-demo: test-deps ## g4v chat on synthetic models (LM=, MODEL=, IMAGE=, PROMPT= for real ones)
	@set -e; $(LLAMA_PREFIX); \
	$(call configure,$(BUILD),$(LLAMA_FLAGS) $(CMAKE_FLAGS)); \
	$(call compile,$(BUILD),g4v_cli); \
	lm="$(LM)"; model="$(MODEL)"; image="$(IMAGE)"; \
	if [ -z "$$lm" ]; then \
	  mkdir -p $(CHAT_DEMO); lm=$(CHAT_DEMO)/lm-e2b.gguf; model=$(CHAT_DEMO)/vision; \
	  [ -f $$lm ] || $(PYTHON) tools/gen_lm_gguf.py $$lm --config e2b --gguf-py $$prefix/src/gguf-py \
	    --vocab $$prefix/src/models/ggml-vocab-gemma-4.gguf; \
	  [ -f $$model/config.json ] || $(PYTHON) tools/gen_checkpoint.py $$model --config tiny \
	    --text-hidden 1536; \
	fi; \
	if [ -z "$$image" ]; then image=$(BUILD)/demo-image.png; \
	  $(PYTHON) examples/make_demo_image.py $$image; fi; \
	echo "chat-demo: $(BUILD)/g4v chat --lm $$lm --model $$model --image $$image -p '$(PROMPT)'"; \
	$(BUILD)/g4v chat --lm $$lm --model $$model --image $$image -p "$(PROMPT)" --max-tokens 48 \
	  --seed 1; \
	if [ -z "$(LM)" ]; then \
	  echo "chat-demo: NOTE: SYNTHETIC models (random weights): the answer is gibberish. Use"; \
	  echo "chat-demo:       make chat-demo LM=gemma-4-E4B-it.gguf MODEL=DIR IMAGE=photo.jpg"; \
	fi

# make demo: the main job end to end -- load a checkpoint, encode an image, write soft tokens.
# Without MODEL=DIR it generates a SYNTHETIC e4b checkpoint (random weights in the real layout;
# config.json is written last, so an interrupted generation is redone) and a drawn test image:
# the outputs then have the right shape and prompt span but are NOT meaningful embeddings.
# make demo MODEL=path/to/gemma-4-e4b-it IMAGE=photo.jpg uses a real checkpoint and image.
MODEL ?=
IMAGE ?=
DEMO_OUT ?= $(BUILD)/demo-out.npy
demo: test-deps ## build, then encode an image with g4v encode (MODEL=DIR IMAGE=FILE, else synthetic)
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS))
	@set -e; model="$(MODEL)"; image="$(IMAGE)"; \
	if [ -z "$$model" ]; then \
	  model=$(DEMO_MODEL); \
	  if [ ! -f $$model/config.json ]; then \
	    echo "demo: generating a SYNTHETIC e4b checkpoint in $$model (tools/gen_checkpoint.py)"; \
	    $(PYTHON) tools/gen_checkpoint.py $$model --config e4b --seed 0; \
	  fi; \
	fi; \
	if [ -z "$$image" ]; then \
	  image=$(BUILD)/demo-image.png; $(PYTHON) examples/make_demo_image.py $$image; \
	fi; \
	$(BUILD)/g4v info --model $$model; echo; \
	echo "demo: $(BUILD)/g4v encode --model $$model $$image --json -o $(DEMO_OUT)"; \
	$(BUILD)/g4v encode --model $$model $$image --json -o $(DEMO_OUT); \
	$(PYTHON) -c "import numpy as np; a = np.load('$(DEMO_OUT)'); \
	print('demo: %s: %s %s, mean %.4f, std %.4f' % ('$(DEMO_OUT)', a.dtype, a.shape, a.mean(), a.std()))"; \
	if [ -z "$(MODEL)" ]; then \
	  echo "demo: NOTE: $$model is a SYNTHETIC checkpoint (random weights in the real e4b layout),"; \
	  echo "demo:       not Google's Gemma 4 weights: the shapes and the prompt span are real, the"; \
	  echo "demo:       numbers are NOT meaningful embeddings. Use make demo MODEL=DIR [IMAGE=FILE]."; \
	fi

# make install: the library, header, CLI, CMake/pkg-config files and the gemma4_vision Python
# package (into lib/python3.X/dist-packages under PREFIX, where Debian's python3 finds it for
# /usr/local and /usr). Then checks that the installed package imports and loads the library.
PREFIX ?= /usr/local
install: ## install libg4v, g4v.h, g4v and the Python package under PREFIX (/usr/local)
	scripts/install-deps.sh --python
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS))
	cmake --install $(BUILD) --prefix $(PREFIX)
	@cd / && env -u PYTHONPATH -u G4V_LIBRARY $(PYTHON) -c "import gemma4_vision as g; \
	print('install: gemma4_vision', g.__file__, '->', g.library_path(), g.library_version())" \
	|| echo "install: $(PYTHON) does not search $(PREFIX); add its lib/python3.X/dist-packages to PYTHONPATH"

# make hf-parity: our outputs against transformers' own code (tests/hf). The venv and the sample
# photos are made once by scripts/hf-env.sh (PyPI), then reused; each script prints its table and
# ends with "N passed, M failed". HF_QUICK=1: the small shapes and one real one (a few minutes).
HF_QUICK ?=
HF_OUT ?= $(BUILD)/hf-parity
hf-parity: test-deps ## against transformers itself in a pinned venv (HF_QUICK=1 for small shapes)
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),g4v_cli image_tool)
	@set -e; py=$$(scripts/hf-env.sh | tail -1); q=$${HF_QUICK:+--quick}; mkdir -p $(HF_OUT); \
	export G4V_BUILD_DIR=$(BUILD) G4V_BIN=$(BUILD)/g4v PYTHONDONTWRITEBYTECODE=1; \
	$$py tests/image/test_resize_torchvision.py $(BUILD)/tests/image/image_tool; \
	$$py tests/hf/test_hf_tower.py $$q --json $(HF_OUT)/tower.json; \
	$$py tests/hf/test_hf_preprocess.py $$q --json $(HF_OUT)/preprocess.json; \
	$$py tests/hf/test_hf_prompt_video.py --json $(HF_OUT)/prompt_video.json

asan: test-deps ## unit + hostile-input tests under ASan + UBSan with fault injection (build-asan/)
	$(call configure-build,build-asan,-DCMAKE_BUILD_TYPE=Debug -DG4V_SANITIZE=ON \
	  -DG4V_FAULT_INJECTION=ON -DG4V_WERROR=ON)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -L 'unit|fault'

# The public API's tests (incl. N threads over one shared model), the chat prompt cache's store
# (tests/chat/test_prompt_cache.c), four conversations on one chat engine (test_chat_engine) and
# concurrent chat template renders (chat_jinja_threads)
# under ThreadSanitizer.
# make tsan also runs g4v serve's chat tests (tests/chat/test_chat_serve.py, whose section 7 has
# two slots answering six requests at once over a shared vision model and feature cache, and
# tests/chat/test_chat_reuse_serve.py: prompt reuse, two slots, the prompt cache) with a
# ThreadSanitizer g4v; libllama itself is not instrumented. Any report fails the target.
tsan: test-deps ## the API thread tests and g4v serve's chat slots under ThreadSanitizer (build-tsan/)
	@set -e; $(LLAMA_PREFIX); \
	$(call configure,build-tsan,-DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_TSAN=ON -DG4V_WERROR=ON \
	  $(LLAMA_FLAGS)); \
	$(call compile,build-tsan,test_api_threads test_json_race test_prompt_cache test_chat_engine chat_jinja_render g4v_cli); \
	cd build-tsan; TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -L tsan; \
	rm -rf tsan-logs; mkdir tsan-logs; \
	TSAN_OPTIONS="exitcode=66 log_path=$$PWD/tsan-logs/report" \
	  ctest --output-on-failure -R '^chat_(serve|reuse_serve)$$'; \
	if ls tsan-logs/report* >/dev/null 2>&1; then cat tsan-logs/report*; \
	  echo "tsan: ThreadSanitizer reported races in g4v serve (above)"; exit 1; fi

# Hostile input (docs/LIMITS.md): the N-th allocation fails for every N over load and encode,
# decompression bombs, and the fuzz regression replays, under ASan/LSan + UBSan. Optimised
# (RelWithDebInfo) so the sweeps stay fast.
FAULT_TESTS = test_fault_bombs test_fault_alloc fuzz_safetensors_replay fuzz_gguf_replay fuzz_config_replay \
	fuzz_index_replay fuzz_image_replay fuzz_encode_replay fuzz_video_replay fuzz_serve_replay \
	fuzz_chat_request_replay
fault: test-deps ## allocation-failure sweeps, bombs, fuzz replays under ASan (build-fault/)
	$(call configure-build,build-fault,-DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_SANITIZE=ON \
	  -DG4V_FAULT_INJECTION=ON -DG4V_WERROR=ON,$(FAULT_TESTS))
	cd build-fault && ctest --output-on-failure -j $(JOBS) -L fault

# libFuzzer targets (fuzz/README.md): clang, ASan + UBSan, library built with coverage; one per
# fuzz/fuzz_*.c. make fuzz-smoke (CI): every target for FUZZ_SMOKE_SECONDS, FUZZ_PARALLEL at a
# time. make fuzz: a longer campaign (SECONDS each; FUZZ_TARGETS picks some). After it, make
# fuzz-merge folds the working corpora into fuzz/grown (minimized; commit it) so the next
# campaign, anywhere, continues from there (fuzz/merge_corpus.sh).
SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 60
FUZZ_PARALLEL ?= 2
FUZZ_TARGETS ?=
fuzz-build: test-deps ## build the libFuzzer targets (clang, build-fuzz/)
	$(call configure-build,build-fuzz,-DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DG4V_SANITIZE=ON -DG4V_FUZZ=ON -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link,g4v_fuzz)

fuzz: fuzz-build ## fuzz each target for SECONDS (60; FUZZ_TARGETS picks some)
	fuzz/run_fuzz.sh build-fuzz $(SECONDS) $(FUZZ_PARALLEL) $(FUZZ_TARGETS)

fuzz-merge: fuzz-build ## fold the fuzzing corpora into fuzz/grown (minimized, committed)
	fuzz/merge_corpus.sh build-fuzz $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build ## every fuzz target for FUZZ_SMOKE_SECONDS (60), FUZZ_PARALLEL (2) at a time
	fuzz/run_fuzz.sh build-fuzz $(FUZZ_SMOKE_SECONDS) $(FUZZ_PARALLEL)

clean: ## remove every build directory
	rm -rf $(BUILD) build-asan build-tsan build-fault build-fuzz build-cov

include mk/bench.mk mk/reliability.mk
