# Thin wrapper around CMake so that a new user types one command: make demo, make test.
# `make help` lists every target with one line (the "## " comment on its rule line);
# docs/TESTING.md says what the test targets run.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
PYTHON ?= /usr/bin/python3
DEMO_MODEL ?= $(BUILD)/demo-model

.PHONY: test-arm64 bench-arm64-mca help chat-test chat-demo load-chat hf-parity bench-mlx all deps test-deps load-deps bench-deps build load test check demo asan tsan fault fuzz-build fuzz fuzz-smoke fuzz-merge coverage soak soak-tsan clean bench bench-llama bench-report bench-python install unified-long accuracy-bf16 bench-int8 accuracy-int8 q8-granularity bench-tune

all: build ## configure + build into build/ (the default)

help: ## this list
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z0-9-]+):.*## /\1\t/' | \
	  awk -F'\t' '{ printf "  make %-14s %s\n", $$1, $$2 }'

deps: ## install the build dependencies from Debian (scripts/install-deps.sh)
	scripts/install-deps.sh

test-deps: ## install the build + test dependencies
	scripts/install-deps.sh --test

bench-deps: ## install the benchmark peers too (PyTorch, OpenBLAS, oneDNN)
	scripts/install-deps.sh --bench

load-deps: ## install wrk too, for make load
	scripts/install-deps.sh --load

build: ## configure + build into $(BUILD) (CMAKE_FLAGS, JOBS)
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# make test: everything CI runs. The default suite (ctest), the ARM64 build's tests under qemu
# (make test-arm64), the same unit and encoder tests again
# with the SIMD paths disabled (G4V_ISA=portable; the SIMDe tests emulate AVX-512 by design, so
# they are left out of that run), the unit + hostile-input tests under ASan/UBSan
# with allocation-failure injection, the API threads test under TSan, and a short fuzz run.
# make check: the default suite alone (a few minutes).
test: check ## everything CI runs (~25-35 min): check, chat-test, asan, tsan, fuzz-smoke, hf-parity
	$(MAKE) chat-test
	$(MAKE) test-arm64
	cd $(BUILD) && G4V_ISA=portable ctest --output-on-failure -j $(JOBS) -L 'unit|encoder' -FA '.*' \
	  -E '_simde$$'
	$(MAKE) asan
	$(MAKE) tsan
	$(MAKE) fuzz-smoke
	$(MAKE) hf-parity

# make test-arm64: the ARM64 build, cross-compiled (cmake/aarch64-linux-gnu.cmake: Debian's
# aarch64-linux-gnu toolchain and arm64 multiarch libraries) into $(ARM64_BUILD), and its kernel,
# unit, encoder and CLI tests run under qemu-aarch64 twice: -cpu max (NEON + BF16 + I8MM + SVE:
# the BFDOT GEMM is chosen) and -cpu cortex-a57 (ARMv8.0 NEON only); the CLI tests once (their
# kernels are the max run's). ctest prefixes the C tests with the emulator; the Python tests start
# the programs through wrappers (tests/CMakeLists.txt, g4v_tool). Emulation is ~10-50x slower than
# native, so the image decoder, Pillow and video suites (no ARM-specific code) and the G4V_ISA-capped
# reruns are left out, and the encoder reference test keeps its tiny checkpoints (G4V_EMULATED).
# Of the CLI tests, test_enc_cmd_encode (g4v encode end to end against the float64 reference)
# runs; test_cli_encode (front-end logic, ~100 g4v runs: over its 300 s limit under qemu) does not.
# Only the targets these tests need are built. Measured on the loaded 2-core machine (load ~10):
# the cross build ~1.5 min, the max run ~3 min, the cortex-a57 run ~1.5 min.
ARM64_BUILD ?= build-arm64
ARM64_KERNEL_TESTS = base|kernels|geglu|variants|gemm|gemm_q8|attention
ARM64_TESTS ?= ^test_($(ARM64_KERNEL_TESTS)|enc_encoder|enc_reference|enc_cmd_encode)$$
ARM64_TARGETS = g4v_cli encode_tool test_base test_kernels test_geglu test_variants test_gemm \
  test_gemm_q8 test_attention test_enc_encoder
ARM64_TESTS_A57 ?= ^test_($(ARM64_KERNEL_TESTS)|enc_encoder|enc_reference)$$
test-arm64: test-deps ## cross-build for ARM64, run kernel/encoder/CLI tests under qemu (max, A57)
	cmake -S . -B $(ARM64_BUILD) -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DG4V_WERROR=ON
	cmake --build $(ARM64_BUILD) -j $(JOBS) --target $(ARM64_TARGETS)
	cd $(ARM64_BUILD) && QEMU_CPU=max ctest --output-on-failure -j $(JOBS) -R '$(ARM64_TESTS)'
	cd $(ARM64_BUILD) && QEMU_CPU=cortex-a57 ctest --output-on-failure -j $(JOBS) \
	  -R '$(ARM64_TESTS_A57)'

# make bench-arm64-mca: llvm-mca's prediction of the ARM64 GEMM and attention inner loops on
# Neoverse V1, V2 and Apple M1 (cycles per iteration, bottleneck, share of the instruction's
# peak), compiled here with the cross compiler; bench/arm64_mca_results.md says how to read it.
bench-arm64-mca: ## llvm-mca predictions of the ARM64 kernels' inner loops (needs --bench deps)
	$(PYTHON) bench/arm64_mca.py

check: test-deps ## build with -Werror and run the default ctest suite (a few minutes)
	cmake -S . -B $(BUILD) -DG4V_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -LE chat $(CTEST_FLAGS)

# make chat-test: g4v chat against llama.cpp (docs/CHAT.md §5). scripts/build-llama.sh prints the
# install prefix (a cached build is reused); g4v is configured against it and the chat tests run.
chat-test: test-deps ## build llama.cpp once, then g4v chat's tests (ctest -L chat)
	@set -e; prefix=$$(scripts/build-llama.sh | tail -1); \
	cmake -S . -B $(BUILD) -DG4V_WERROR=ON -DG4V_LLAMA_DIR=$$prefix -DG4V_LLAMA_SRC=$$prefix/src \
	  $(CMAKE_FLAGS); \
	cmake --build $(BUILD) -j $(JOBS); \
	cd $(BUILD); ctest -N -L chat | grep -q chat_mtmd_ || \
	  { echo "chat-test: CMake did not pick up $$prefix (see cmake/Llama.cmake)"; exit 1; }; \
	ctest --output-on-failure -j $(JOBS) -L chat

# make chat-demo: one question about one image through g4v chat. Without LM=FILE a SYNTHETIC
# Gemma 4 text model (e2b width, 4 layers, random weights, the real tokenizer; ~290 MB) and a
# matching synthetic vision model are generated into $(CHAT_DEMO) once: the answer is
# gibberish, the path is real. With LM=gemma-4-E4B-it-Q4_K_M.gguf MODEL=gemma-4-e4b-it (or its
# mmproj .gguf) IMAGE=photo.jpg it answers for real.
LM ?=
PROMPT ?= Describe this image in one sentence.
CHAT_DEMO ?= $(BUILD)/chat-demo
chat-demo: test-deps ## g4v chat on synthetic models (LM=, MODEL=, IMAGE=, PROMPT= for real ones)
	@set -e; prefix=$$(scripts/build-llama.sh | tail -1); \
	cmake -S . -B $(BUILD) -DG4V_LLAMA_DIR=$$prefix -DG4V_LLAMA_SRC=$$prefix/src $(CMAKE_FLAGS); \
	cmake --build $(BUILD) -j $(JOBS) --target g4v_cli; \
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
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
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

# make install: ## install libg4v, g4v.h, g4v and the Python package under PREFIX (/usr/local) the library, header, CLI, CMake/pkg-config files and the gemma4_vision Python
# package (into lib/python3.X/dist-packages under PREFIX, where Debian's python3 finds it for
# /usr/local and /usr). Then checks that the installed package imports and loads the library.
PREFIX ?= /usr/local
install:
	scripts/install-deps.sh --python
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
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
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target g4v_cli image_tool
	@set -e; py=$$(scripts/hf-env.sh | tail -1); q=$${HF_QUICK:+--quick}; mkdir -p $(HF_OUT); \
	export G4V_BUILD_DIR=$(BUILD) G4V_BIN=$(BUILD)/g4v PYTHONDONTWRITEBYTECODE=1; \
	$$py tests/image/test_resize_torchvision.py $(BUILD)/tests/image/image_tool; \
	$$py tests/hf/test_hf_tower.py $$q --json $(HF_OUT)/tower.json; \
	$$py tests/hf/test_hf_preprocess.py $$q --json $(HF_OUT)/preprocess.json; \
	$$py tests/hf/test_hf_prompt_video.py --json $(HF_OUT)/prompt_video.json

# make bench-mlx: the mlx-vlm peer (bench/mlx_peer.py) on mlx's CPU backend beside ours, in one
# run: accuracy against float64 and encode seconds, e4b at 256 tokens (MLX_CKPT, MLX_IMAGE).
MLX_CKPT ?= $(HF_OUT)/ckpt/e4b-peer
bench-mlx: test-deps ## the mlx-vlm peer beside ours: accuracy and encode seconds
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target g4v_cli
	@set -e; py=$$(scripts/hf-env.sh --mlx | tail -1); hpy=$$(scripts/hf-env.sh | tail -1); \
	[ -f $(MLX_CKPT)/config.json ] || $(PYTHON) tools/gen_checkpoint.py $(MLX_CKPT) --config e4b; \
	img=$(HF_OUT)/mlx-768.png; \
	$$hpy -c "from PIL import Image; Image.open('$$HOME/.cache/g4v-hf/photos/astronaut.png').convert('RGB').resize((768, 768), Image.BICUBIC).save('$$img')"; \
	$$py bench/mlx_peer.py $(MLX_CKPT) $$img --tokens 280 --g4v $(BUILD)/g4v

# make unified-long: the 12B unified embedder against the float64 reference at the full target
# sizes of budgets 70, 280 and 1120 (the default suite runs budget 70 only). About a minute.
unified-long: test-deps ## the 12B unified embedder against float64 at full budgets 70/280/1120
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target encode_tool g4v_cli
	G4V_BUILD_DIR=$(BUILD) G4V_BIN=$(BUILD)/g4v G4V_ENCODE_TOOL=$(BUILD)/tests/encoder/encode_tool \
	  $(PYTHON) -m pytest -q -p no:cacheprovider -rfEs tests/encoder/test_unified_ref.py --arg=--long

# make load: the HTTP service under load (scripts/load.sh): loopback only, LOAD_SECONDS per wrk run.
LOAD_SECONDS ?= 10
load: load-deps ## g4v serve under wrk on 127.0.0.1 (LOAD_SECONDS per run)
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target g4v_cli
	PYTHON=$(PYTHON) scripts/load.sh $(BUILD) $(LOAD_SECONDS)

# make load-chat: g4v serve --lm under concurrent streaming chats (scripts/load_chat.sh; the
# OpenAI client for Node): requests/s, time to first token p50/p99, errors. Loopback only, synthetic
# models; LOAD_SECONDS per run, LOAD_STREAMS chats at once.
LOAD_STREAMS ?= 4
load-chat: test-deps ## g4v serve --lm under LOAD_STREAMS concurrent streaming chats (openai-node)
	@set -e; prefix=$$(scripts/build-llama.sh | tail -1); \
	cmake -S . -B $(BUILD) -DG4V_LLAMA_DIR=$$prefix -DG4V_LLAMA_SRC=$$prefix/src $(CMAKE_FLAGS); \
	cmake --build $(BUILD) -j $(JOBS) --target g4v_cli; \
	PYTHON=$(PYTHON) scripts/load_chat.sh $(BUILD) $$prefix $(LOAD_SECONDS) $(LOAD_STREAMS)

asan: test-deps ## unit + hostile-input tests under ASan + UBSan with fault injection (build-asan/)
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DG4V_SANITIZE=ON -DG4V_FAULT_INJECTION=ON \
	  -DG4V_WERROR=ON
	cmake --build build-asan -j $(JOBS)
	cd build-asan && ctest --output-on-failure -j $(JOBS) -L 'unit|fault'

# The public API's tests (incl. N threads over one shared model) under ThreadSanitizer.
# make tsan also runs g4v serve's chat test (tests/chat/test_chat_serve.py, whose section 7 has two
# slots answering six requests at once over a shared vision model and feature cache) with a
# ThreadSanitizer g4v; libllama itself is not instrumented. Any report fails the target.
tsan: test-deps ## the API thread tests and g4v serve's chat slots under ThreadSanitizer (build-tsan/)
	@set -e; prefix=$$(scripts/build-llama.sh | tail -1); \
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_TSAN=ON -DG4V_WERROR=ON \
	  -DG4V_LLAMA_DIR=$$prefix -DG4V_LLAMA_SRC=$$prefix/src; \
	cmake --build build-tsan -j $(JOBS) --target test_api_threads test_json_race g4v_cli; \
	cd build-tsan; TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -L tsan; \
	rm -rf tsan-logs; mkdir tsan-logs; \
	TSAN_OPTIONS="exitcode=66 log_path=$$PWD/tsan-logs/report" \
	  ctest --output-on-failure -R '^chat_serve$$'; \
	if ls tsan-logs/report* >/dev/null 2>&1; then cat tsan-logs/report*; \
	  echo "tsan: ThreadSanitizer reported races in g4v serve (above)"; exit 1; fi

# Hostile input (docs/LIMITS.md): the N-th allocation fails for every N over load and encode,
# decompression bombs, and the fuzz regression replays, under ASan/LSan + UBSan. Optimised
# (RelWithDebInfo) so the sweeps stay fast.
FAULT_TESTS = test_fault_bombs test_fault_alloc fuzz_safetensors_replay fuzz_gguf_replay fuzz_config_replay \
	fuzz_index_replay fuzz_image_replay fuzz_encode_replay fuzz_video_replay fuzz_serve_replay \
	fuzz_chat_request_replay
fault: test-deps ## allocation-failure sweeps, bombs, fuzz replays under ASan (build-fault/)
	cmake -S . -B build-fault -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_SANITIZE=ON \
	  -DG4V_FAULT_INJECTION=ON -DG4V_WERROR=ON
	cmake --build build-fault -j $(JOBS) --target $(FAULT_TESTS)
	cd build-fault && ctest --output-on-failure -j $(JOBS) -L fault

# libFuzzer targets (fuzz/README.md): clang, ASan + UBSan, library built with coverage.
SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 60
FUZZ_PARALLEL ?= 2
FUZZ_TARGETS ?=
fuzz-build: test-deps ## build the libFuzzer targets (clang, build-fuzz/)
	cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DG4V_SANITIZE=ON -DG4V_FUZZ=ON -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link
	cmake --build build-fuzz -j $(JOBS) --target g4v_fuzz

fuzz: fuzz-build ## fuzz each target for SECONDS (60; FUZZ_TARGETS picks some)
	fuzz/run_fuzz.sh build-fuzz $(SECONDS) $(FUZZ_PARALLEL) $(FUZZ_TARGETS)

# After `make fuzz`: fold the working corpora into fuzz/grown (minimized; commit it) so the next
# campaign, anywhere, continues from there (fuzz/merge_corpus.sh).
fuzz-merge: fuzz-build ## fold the fuzzing corpora into fuzz/grown (minimized, committed)
	fuzz/merge_corpus.sh build-fuzz $(FUZZ_TARGETS)

# The CI run: every target for FUZZ_SMOKE_SECONDS, FUZZ_PARALLEL at a time (6 targets, 2 at a
# time: 3 rounds, ~3 min at 60 s).
fuzz-smoke: fuzz-build ## every fuzz target for FUZZ_SMOKE_SECONDS (60), 2 at a time
	fuzz/run_fuzz.sh build-fuzz $(FUZZ_SMOKE_SECONDS) $(FUZZ_PARALLEL)

# Line and branch coverage per file of src/io and src/image over the unit tests, the fuzz
# corpora replays and the allocation-failure sweep (clang source-based coverage, build-cov/;
# scripts/coverage.sh; ~5 min on 2 cores).
coverage: test-deps ## line and branch coverage of src/io and src/image (build-cov/)
	PYTHON=$(PYTHON) scripts/coverage.sh build-cov $(JOBS)

# make soak: one shared model, SOAK_THREADS threads with their own contexts, a mixed stream of
# images, budgets, modes and bad inputs for SOAK_SECONDS (tests/soak/soak.c): every output
# bit-identical to a serial run, every bad input a clean error, RSS flat after the warm-up (the
# curve is printed). Then the same through `g4v serve` over HTTP with concurrent clients, some
# hanging up mid-request (scripts/soak_http.py, SOAK_HTTP_SECONDS). make soak-tsan: the library
# soak under ThreadSanitizer for SOAK_TSAN_SECONDS (build-tsan/).
SOAK_SECONDS ?= 600
SOAK_HTTP_SECONDS ?= $(SOAK_SECONDS)
SOAK_TSAN_SECONDS ?= 60
SOAK_THREADS ?= 2
SOAK_FIXTURES = $(BUILD)/soak-fixtures
soak: test-deps ## SOAK_SECONDS (600) of mixed load on one model, then through g4v serve
	cmake -S . -B $(BUILD) -DG4V_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target soak g4v_cli
	@[ -f $(SOAK_FIXTURES)/tiny/config.json ] || $(PYTHON) tests/api/make_fixtures.py $(SOAK_FIXTURES)
	$(BUILD)/tests/soak/soak $(SOAK_FIXTURES) $(SOAK_SECONDS) $(SOAK_THREADS)
	$(PYTHON) scripts/soak_http.py --g4v $(BUILD)/g4v --fixtures $(SOAK_FIXTURES) \
	  --seconds $(SOAK_HTTP_SECONDS)

soak-tsan: test-deps ## the library soak under ThreadSanitizer (SOAK_TSAN_SECONDS)
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_TSAN=ON -DG4V_WERROR=ON
	cmake --build build-tsan -j $(JOBS) --target soak
	@[ -f build-tsan/soak-fixtures/tiny/config.json ] || \
	  $(PYTHON) tests/api/make_fixtures.py build-tsan/soak-fixtures
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/soak/soak build-tsan/soak-fixtures \
	  $(SOAK_TSAN_SECONDS) $(SOAK_THREADS) --no-rss-check

clean: ## remove every build directory
	rm -rf $(BUILD) build-asan build-tsan build-fault build-fuzz build-cov

# make bench: whole-encoder table (bench/bench_encoder.c) vs the PyTorch peer (bench/torch_peer.py)
# on a synthetic e4b checkpoint ($(BENCH_MODEL), generated once). BENCH_ARGS picks budgets,
# threads and repetitions (e.g. BENCH_ARGS="--budgets 70,140,280 --threads 1,2"). bench-deps
# installs the peers (Debian's python3-torch and libopenblas0-pthread, libdnnl-dev for bench_gemm;
# never needed by the tests). OpenBLAS is loaded for the peer via LD_LIBRARY_PATH, and the
# environment's OpenBLAS caps are unset for it (bench/README.md, "The PyTorch peer").
# Without torch the peer columns read "-". Then bench-llama (llama.cpp's encoder on the same
# checkpoint; BENCH_LLAMA=0 skips it) and bench-chat (BENCH_CHAT=0 skips it).
BENCH_MODEL ?= $(BUILD)/bench-e4b
BENCH_ARGS ?=
BENCH_PEER ?= env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE GLIBC_TUNABLES=glibc.malloc.hugetlb=1 \
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread $(PYTHON) bench/torch_peer.py
bench: bench-deps ## whole-encoder table vs PyTorch (BENCH_ARGS), then bench-llama, bench-chat
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target bench_encoder
	@if [ ! -f $(BENCH_MODEL)/config.json ]; then \
	  $(PYTHON) tools/gen_checkpoint.py $(BENCH_MODEL) --config e4b --seed 0; fi
	@uptime
	@peer=""; if $(PYTHON) -c "import torch" 2>/dev/null; then peer="$(BENCH_PEER)"; \
	  else echo "bench: python3-torch not installed: no peer columns"; fi; \
	  $(BUILD)/bench/bench_encoder --model $(BENCH_MODEL) $(BENCH_ARGS) $${peer:+--peer "$$peer"}
	@if [ "$(BENCH_LLAMA)" != 0 ]; then $(MAKE) bench-llama; fi
	@if [ "$(BENCH_CHAT)" != 0 ]; then $(MAKE) bench-chat; fi

# make bench-llama (part of make bench; BENCH_LLAMA=0 leaves it out): llama.cpp's gemma4v encoder
# (llama-mtmd-cli, native build of scripts/build-llama.sh --bench, ~10 min once) against ours on
# the same synthetic checkpoint ($(BENCH_MODEL), converted to a bf16 mmproj GGUF) and a 768x768
# PNG, alternately in the same run, 1 and 2 threads; prints the ratio (bench/llama_peer.sh).
BENCH_LLAMA_THREADS ?= 1,2
BENCH_LLAMA_REPS ?= 3
bench-llama: test-deps ## ours vs llama.cpp's gemma4v encoder, same checkpoint (BENCH_LLAMA=0 skips)
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target g4v_cli
	@if [ ! -f $(BENCH_MODEL)/config.json ]; then \
	  $(PYTHON) tools/gen_checkpoint.py $(BENCH_MODEL) --config e4b --seed 0; fi
	@uptime
	PYTHON=$(PYTHON) bench/llama_peer.sh $(BUILD) $(BENCH_MODEL) $(BENCH_LLAMA_THREADS) $(BENCH_LLAMA_REPS)

# make bench-chat (part of make bench; BENCH_CHAT=0 leaves it out): time to first token of
# g4v chat against llama.cpp's own llama-mtmd-cli on the same files (bench/chat_ttft.py,
# docs/CHAT.md §7). Both link one native libllama (scripts/build-llama.sh --bench, ~10 min once);
# the text model has the real E2B shapes with random Q4_0 weights (2.6 GB, generated once into
# $(CHAT_BENCH)), the vision model is a synthetic e2b tower as an F16 mmproj, the image 768x768.
CHAT_BENCH ?= $(BUILD)/bench-chat
CHAT_BENCH_REPS ?= 5
bench-chat: test-deps ## time to first token: g4v chat vs llama-mtmd-cli, same files (BENCH_CHAT=0 skips)
	@set -e; prefix=$$(scripts/build-llama.sh --bench | tail -1); \
	src=$$(scripts/build-llama.sh | tail -1)/src; \
	cmake -S . -B $(BUILD)-chatbench -DG4V_LLAMA_DIR=$$prefix -DG4V_LLAMA_SRC=$$src $(CMAKE_FLAGS); \
	cmake --build $(BUILD)-chatbench -j $(JOBS) --target g4v_cli; \
	mkdir -p $(CHAT_BENCH); d=$(CHAT_BENCH); \
	[ -f $$d/lm-e2b-full.gguf ] || $(PYTHON) tools/gen_lm_gguf.py $$d/lm-e2b-full.gguf \
	  --config e2b-full --layers 35 --quant q4_0 --gguf-py $$src/gguf-py \
	  --vocab $$src/models/ggml-vocab-gemma-4.gguf; \
	[ -f $$d/vis-e2b/config.json ] || $(PYTHON) tools/gen_checkpoint.py $$d/vis-e2b --config e2b \
	  --seed 1 --no-decoys; \
	[ -f $$d/mmproj-e2b-f16.gguf ] || $(PYTHON) tools/gguf_from_checkpoint.py $$d/vis-e2b \
	  $$d/mmproj-e2b-f16.gguf --outtype f16; \
	[ -f $$d/photo-768.jpg ] || $(PYTHON) examples/make_demo_image.py $$d/photo-768.jpg 768; \
	uptime; \
	$(PYTHON) bench/chat_ttft.py --g4v $(BUILD)-chatbench/g4v --mtmd-cli $$prefix/bin/llama-mtmd-cli \
	  --lm $$d/lm-e2b-full.gguf --mmproj $$d/mmproj-e2b-f16.gguf --image $$d/photo-768.jpg \
	  --reps $(CHAT_BENCH_REPS) --threads $(JOBS) --json $$d/ttft.json

# make bench-report: one markdown report of this machine (bench/report.sh): CPU flags, kernel
# table, GEMM per ISA level and attention per variant against measured peaks, encoder seconds,
# RSS and load time at 70/280/1120 tokens on 1 and 2 threads, accuracy of both modes against the
# float64 reference, and the speed and memory targets with their floors at 100% of the measured
# peak (bench/check_speed_targets.py). ~10 minutes on a 2-core Zen 4 (longer without AVX512-BF16);
# REPORT_QUICK=1 for a few minutes.
bench-report: test-deps ## one markdown report of this machine (bench/report.sh; REPORT_QUICK=1)
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	BUILD=$(BUILD) PYTHON=$(PYTHON) BENCH_MODEL=$(BENCH_MODEL) BENCH_LLAMA=$(BENCH_LLAMA) bench/report.sh

# make accuracy-bf16: FAST on the AVX512_BF16 kernels (bf16 GEMM and attention), emulated through
# SIMDe so it runs on any x86-64, against the native FAST and the float64 reference: e4b and the
# 31B shape at 256 and 1120 tokens, and sharper attention (--qk-scale 2). Emulation is ~30x slower
# than native: about an hour on 2 cores. ACC_BF16_CASES overrides the cases.
ACC_BF16_CASES ?= e4b:16:768x768 e4b:2:768x768:qk=2 31b:2:768x768 31b:2:768x768:qk=2 \
  e4b:2:1680x1536 31b:2:1680x1536
accuracy-bf16: test-deps ## the AVX512-BF16 paths emulated through SIMDe against float64 (~1 h)
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target encode_tool encode_tool_simde
	$(PYTHON) bench/accuracy.py --encode-tool $(BUILD)/tests/encoder/encode_tool \
	  --encode-tool $(BUILD)/tests/encoder/encode_tool_simde --modes fast \
	  --work $(BUILD)/accuracy-bf16 $(ACC_BF16_CASES)

# make bench-tune: the GEMM driver's blocking variants side by side (bench/bench_gemm_tune.c: %
# of the peak of the same run, wall and CPU time, the micro-kernel's ceiling, the pool's wake-up;
# TUNE_ARGS overrides the variants) and the attention kernels at L = 2304 and 10,080 on 1 and 2
# threads. To compare two builds alternately (GEMM, attention, encoder): bench/ab_bench.sh.
TUNE_ARGS ?= --threads 1,2 --reps 9 --var pf=-1 --var pf=1 --var kc=24
bench-tune: ## GEMM blocking variants and attention in % of the measured peak (TUNE_ARGS)
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target bench_gemm_tune bench_attention
	$(BUILD)/bench/bench_gemm_tune $(TUNE_ARGS)
	$(BUILD)/bench/bench_attention --L 2304,10080 --threads 1
	$(BUILD)/bench/bench_attention --L 2304,10080 --threads 2

# make bench-int8: the INT8 modes against FAST in one run (bench/int8_speed.py: 256 and 1120 soft
# tokens, 2 threads, FAST / INT8 and FAST / INT8 per 32-block as ratios) on the synthetic e4b of
# `make bench`; make accuracy-int8: both INT8 modes and FAST against float64 (bench/accuracy.py;
# minutes per case at 256 tokens, ACC_INT8_CASES overrides the cases; the last one is sharper
# attention). make q8-granularity: the per-GEMM error of the four scale granularities (numpy).
ACC_INT8_CASES ?= e4b:16:768x768 e2b:0:768x768 31b:2:768x768 e4b:2:768x768:qk=2
bench-int8: test-deps ## INT8 (per channel, per block) vs FAST speed, one run, 256/1120 tokens
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target encode_tool
	@if [ ! -f $(BENCH_MODEL)/config.json ]; then \
	  $(PYTHON) tools/gen_checkpoint.py $(BENCH_MODEL) --config e4b --seed 0; fi
	$(PYTHON) bench/int8_speed.py --encode-tool $(BUILD)/tests/encoder/encode_tool \
	  --model $(BENCH_MODEL)
accuracy-int8: test-deps ## INT8 (default, all-int8, per block) and FAST vs float64 (~40 min)
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS) --target encode_tool
	$(PYTHON) bench/accuracy.py --encode-tool $(BUILD)/tests/encoder/encode_tool \
	  --modes fast,int8,int8+none,int8b --work $(BUILD)/accuracy-int8 $(ACC_INT8_CASES)
q8-granularity: test-deps ## int8 error per GEMM: per channel/row vs per 32-block (numpy, ~20 s)
	$(PYTHON) bench/q8_granularity.py

# make bench-python: bulk encoding (gemma4_vision.bulk on a Dask LocalCluster, 1 and 2 workers x
# 1 and 2 threads) against a loop of `g4v encode` over the same mixed images, in one run
# (bench/bench_bulk.py; a few minutes on 2 cores). The checkpoint is a SYNTHETIC e2b cut to
# BENCH_PY_LAYERS encoder layers (generated once into $(BENCH_PY_MODEL)); MODEL=DIR uses another.
BENCH_PY_LAYERS ?= 4
BENCH_PY_MODEL ?= $(BUILD)/bench-e2b-l$(BENCH_PY_LAYERS)
BENCH_PY_IMAGES ?= $(BUILD)/bench-images
BENCH_PY_ARGS ?= --tokens 140
bench-python: test-deps ## bulk encoding on Dask against a loop of g4v encode
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	@model="$(MODEL)"; if [ -z "$$model" ]; then model=$(BENCH_PY_MODEL); \
	  if [ ! -f $$model/config.json ]; then \
	    $(PYTHON) tools/gen_checkpoint.py $$model --config e2b --layers $(BENCH_PY_LAYERS) --seed 0; fi; \
	fi; \
	PYTHONPATH=python G4V_LIBRARY=$(BUILD)/libg4v.so $(PYTHON) bench/bench_bulk.py --model $$model \
	  --images $(BENCH_PY_IMAGES) --g4v $(BUILD)/g4v $(BENCH_PY_ARGS)
