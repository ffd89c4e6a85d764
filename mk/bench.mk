# bench.mk - the measurement targets of the Makefile (included by it; `make help` lists them):
# speed against the peers (PyTorch, llama.cpp, mlx-vlm), the kernels against the machine's peak,
# accuracy against the float64 reference and transformers. None is part of `make test`.
# bench/README.md says how to read the results; bench/RESULTS.md holds them per machine kind.

.PHONY: bench bench-llama bench-chat bench-report bench-tune bench-int8 bench-python bench-mlx \
  bench-arm64-mca accuracy-bf16 accuracy-int8 q8-granularity unified-long bench-load

# make bench: whole-encoder table (bench/bench_encoder.c) vs the PyTorch peer (bench/torch_peer.py)
# on a synthetic e4b checkpoint ($(BENCH_MODEL), generated once). BENCH_ARGS picks budgets,
# threads and repetitions (e.g. BENCH_ARGS="--budgets 70,140,280 --threads 1,2"). bench-deps
# installs the peers (Debian's python3-torch and libopenblas0-pthread, libdnnl-dev for bench_gemm;
# never needed by the tests). OpenBLAS is loaded for the peer via LD_LIBRARY_PATH, and the
# environment's OpenBLAS caps are unset for it (bench/README.md, "The PyTorch peer").
# Without torch the peer columns read "-". Beside it, in the same run, the PyPI PyTorch peer
# (bench/hf_peer.py: transformers' own Gemma4VisionModel, bf16 and f32, sdpa, the PyPI wheel with
# oneDNN, in the venv of scripts/hf-env.sh, made once: ~5 GB), as a Hugging Face user runs the
# tower: its "HF" columns are the ratio we publish (BENCH_HF=0 leaves it out; malloc on huge
# pages for it too, as for the Debian peer). Then bench-llama
# (llama.cpp's encoder on the same checkpoint; BENCH_LLAMA=0 skips it) and bench-chat
# (BENCH_CHAT=0 skips it).
BENCH_MODEL ?= $(BUILD)/bench-e4b
BENCH_ARGS ?=
BENCH_PEER ?= env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE GLIBC_TUNABLES=glibc.malloc.hugetlb=1 \
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread $(PYTHON) bench/torch_peer.py
BENCH_HF ?= 1
# The synthetic e4b checkpoint of the benchmarks, generated on first use (a recipe line).
BENCH_MODEL_GEN = @if [ ! -f $(BENCH_MODEL)/config.json ]; then \
  $(PYTHON) tools/gen_checkpoint.py $(BENCH_MODEL) --config e4b --seed 0; fi
bench: bench-deps ## whole-encoder table vs PyTorch (BENCH_ARGS), then bench-llama, bench-chat
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),bench_encoder)
	$(BENCH_MODEL_GEN)
	@uptime
	@peer=""; if $(PYTHON) -c "import torch" 2>/dev/null; then peer="$(BENCH_PEER)"; \
	  else echo "bench: python3-torch not installed: no peer columns"; fi; \
	  hf=""; if [ "$(BENCH_HF)" != 0 ]; then hfpy=$$(scripts/hf-env.sh | tail -1) && \
	  hf="env GLIBC_TUNABLES=glibc.malloc.hugetlb=1 $$hfpy bench/hf_peer.py" || \
	  echo "bench: no hf venv (scripts/hf-env.sh): no HF columns"; fi; \
	  $(BUILD)/bench/bench_encoder --model $(BENCH_MODEL) $(BENCH_ARGS) $${peer:+--peer "$$peer"} \
	  $${hf:+--hf-peer "$$hf"}
	@if [ "$(BENCH_LLAMA)" != 0 ]; then $(MAKE) bench-llama; fi
	@if [ "$(BENCH_CHAT)" != 0 ]; then $(MAKE) bench-chat; fi

# make bench-llama (part of make bench; BENCH_LLAMA=0 leaves it out): llama.cpp's gemma4v encoder
# (llama-mtmd-cli, native build of scripts/build-llama.sh --bench, ~10 min once) against ours on
# the same synthetic checkpoint ($(BENCH_MODEL), converted to a bf16 mmproj GGUF) and a 768x768
# PNG, alternately in the same run, 1 and 2 threads; prints the ratio (bench/llama_peer.sh).
BENCH_LLAMA_THREADS ?= 1,2
BENCH_LLAMA_REPS ?= 3
bench-llama: test-deps ## ours vs llama.cpp's gemma4v encoder, same checkpoint (BENCH_LLAMA=0 skips)
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),g4v_cli)
	$(BENCH_MODEL_GEN)
	@uptime
	PYTHON=$(PYTHON) bench/llama_peer.sh $(BUILD) $(BENCH_MODEL) $(BENCH_LLAMA_THREADS) $(BENCH_LLAMA_REPS)

# make bench-chat (part of make bench; BENCH_CHAT=0 leaves it out): time to first token against
# llama.cpp's own programs on the same files (docs/CHAT.md §5.4). First a 5-turn conversation about
# one image through the official OpenAI Python client (bench/chat_turns.py; the client in a venv of
# scripts/openai-env.sh): g4v serve --lm with prompt reuse, without it (--no-prompt-reuse, when the
# binary has it) and llama-server with its prompt cache, one at a time, CHAT_TURNS_REPS
# conversations each in turn, and each turn against the time to prefill its new text alone. Then
# four conversations at once, --lm-slots 4 against llama-server -np 4 (bench/chat_batch.py:
# aggregate tokens/s, time between tokens, a late arrival's TTFT; CHAT_BENCH_BATCH=0 skips it).
# Then the one-shot g4v chat against llama-mtmd-cli (bench/chat_ttft.py; CHAT_BENCH_ONESHOT=0
# skips it).
# All link one native libllama (scripts/build-llama.sh --bench, ~15 min once, which also builds
# both llama.cpp programs); the text model has the real E2B shapes with random Q4_0 weights
# (generated once into $(CHAT_BENCH)), the vision model is a synthetic e2b tower as an F16 mmproj,
# the image 768x768 (256 rows on both sides), CHAT_BENCH_THREADS threads everywhere.
CHAT_BENCH ?= $(BUILD)/bench-chat
CHAT_BENCH_REPS ?= 5
CHAT_BENCH_THREADS ?= 2
CHAT_BENCH_ONESHOT ?= 1
CHAT_BENCH_BATCH ?= 1
CHAT_BATCH_REPS ?= 3
CHAT_TURNS_REPS ?= 3
CHAT_TURNS_MAX_TOKENS ?= 32
bench-chat: test-deps ## TTFT per turn of a chat vs llama-server, one-shot vs llama-mtmd-cli
	@set -e; prefix=$$(scripts/build-llama.sh --bench | tail -1); \
	src=$$(scripts/build-llama.sh --src | tail -1); \
	py=$$(scripts/openai-env.sh | tail -1); \
	$(call configure,$(BUILD)-chatbench,-DG4V_LLAMA_DIR=$$prefix -DG4V_LLAMA_SRC=$$src $(CMAKE_FLAGS)); \
	$(call compile,$(BUILD)-chatbench,g4v_cli); \
	mkdir -p $(CHAT_BENCH); d=$(CHAT_BENCH); \
	[ -f $$d/lm-e2b-full.gguf ] || $(PYTHON) tools/gen_lm_gguf.py $$d/lm-e2b-full.gguf \
	  --config e2b-full --layers 35 --quant q4_0 --gguf-py $$src/gguf-py \
	  --vocab $$src/models/ggml-vocab-gemma-4.gguf; \
	[ -f $$d/vis-e2b/config.json ] || $(PYTHON) tools/gen_checkpoint.py $$d/vis-e2b --config e2b \
	  --seed 1 --no-decoys; \
	[ -f $$d/mmproj-e2b-f16.gguf ] || $(PYTHON) tools/gguf_from_checkpoint.py $$d/vis-e2b \
	  $$d/mmproj-e2b-f16.gguf --outtype f16; \
	[ -f $$d/photo-768.jpg ] || $(PYTHON) examples/make_demo_image.py $$d/photo-768.jpg 768; \
	[ -f $$d/warm-640.jpg ] || $(PYTHON) examples/make_demo_image.py $$d/warm-640.jpg 640; \
	uptime; \
	$$py bench/chat_turns.py --g4v $(BUILD)-chatbench/g4v --llama-server $$prefix/bin/llama-server \
	  --lm $$d/lm-e2b-full.gguf --mmproj $$d/mmproj-e2b-f16.gguf --image $$d/photo-768.jpg \
	  --warmup-image $$d/warm-640.jpg --reps $(CHAT_TURNS_REPS) --threads $(CHAT_BENCH_THREADS) \
	  --max-tokens $(CHAT_TURNS_MAX_TOKENS) --json $$d/turns.json; \
	if [ "$(CHAT_BENCH_BATCH)" != 0 ]; then uptime; \
	  $(PYTHON) bench/chat_batch.py make-images $$d/photo-768.jpg $$d/batch-images; \
	  $$py bench/chat_batch.py --g4v $(BUILD)-chatbench/g4v --llama-server $$prefix/bin/llama-server \
	  --lm $$d/lm-e2b-full.gguf --mmproj $$d/mmproj-e2b-f16.gguf --images $$d/batch-images \
	  --warmup-image $$d/warm-640.jpg --slots 4 --reps $(CHAT_BATCH_REPS) \
	  --threads $(CHAT_BENCH_THREADS) --max-tokens 128 --json $$d/batch.json; fi; \
	if [ "$(CHAT_BENCH_ONESHOT)" != 0 ]; then uptime; \
	  $(PYTHON) bench/chat_ttft.py --g4v $(BUILD)-chatbench/g4v \
	  --mtmd-cli $$prefix/bin/llama-mtmd-cli --lm $$d/lm-e2b-full.gguf \
	  --mmproj $$d/mmproj-e2b-f16.gguf --image $$d/photo-768.jpg --reps $(CHAT_BENCH_REPS) \
	  --threads $(CHAT_BENCH_THREADS) --json $$d/ttft.json; fi

# make bench-report: one markdown report of this machine (bench/report.sh): CPU flags, kernel
# table, GEMM per ISA level and attention per variant against measured peaks, encoder seconds,
# RSS and load time at 70/280/1120 tokens on 1 and 2 threads, accuracy of both modes against the
# float64 reference, and the speed and memory targets with their floors at 100% of the measured
# peak (bench/check_speed_targets.py). ~10 minutes on a 2-core Zen 4 (longer without AVX512-BF16);
# REPORT_QUICK=1 for a few minutes.
bench-report: test-deps ## one markdown report of this machine (bench/report.sh; REPORT_QUICK=1)
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS))
	BUILD=$(BUILD) PYTHON=$(PYTHON) BENCH_MODEL=$(BENCH_MODEL) BENCH_LLAMA=$(BENCH_LLAMA) bench/report.sh

# make bench-llama-backends: the text model's prefill of one image (256 rows) under the three
# builds of scripts/build-llama.sh, alternately in the same run (bench/llama_backends.py,
# docs/CHAT.md §6): the default (CPU backend variants chosen at run time), --bench (native) and
# --avx2 (the former default). One g4v, linked against the default, runs against each through
# LD_LIBRARY_PATH. The files are bench-chat's ($(CHAT_BENCH): the real-shaped E2B text model,
# Q4_0, 2.6 GB, and a synthetic e2b vision tower, generated once). Builds each library the first
# time (~30 + 10 + 8 minutes on 2 cores).
.PHONY: bench-llama-backends
LLAMA_BACKENDS_REPS ?= 5
bench-llama-backends: test-deps ## LM prefill: run-time CPU variants vs native vs AVX2 libllama
	@set -e; $(LLAMA_PREFIX); native=$$(scripts/build-llama.sh --bench | tail -1); \
	avx2=$$(scripts/build-llama.sh --avx2 | tail -1); \
	$(call configure,$(BUILD),$(LLAMA_FLAGS) $(CMAKE_FLAGS)); \
	$(call compile,$(BUILD),g4v_cli); \
	mkdir -p $(CHAT_BENCH); d=$(CHAT_BENCH); \
	[ -f $$d/lm-e2b-full.gguf ] || $(PYTHON) tools/gen_lm_gguf.py $$d/lm-e2b-full.gguf \
	  --config e2b-full --layers 35 --quant q4_0 --gguf-py $$prefix/src/gguf-py \
	  --vocab $$prefix/src/models/ggml-vocab-gemma-4.gguf; \
	[ -f $$d/vis-e2b/config.json ] || $(PYTHON) tools/gen_checkpoint.py $$d/vis-e2b --config e2b \
	  --seed 1 --no-decoys; \
	[ -f $$d/photo-768.jpg ] || $(PYTHON) examples/make_demo_image.py $$d/photo-768.jpg 768; \
	uptime; \
	$(PYTHON) bench/llama_backends.py --g4v $(BUILD)/g4v --lib variants=$$prefix/lib \
	  --lib native=$$native/lib --lib avx2=$$avx2/lib --lm $$d/lm-e2b-full.gguf \
	  --model $$d/vis-e2b --image $$d/photo-768.jpg --reps $(LLAMA_BACKENDS_REPS) \
	  --threads $(JOBS) --json $$d/llama-backends.json

# make bench-tune: the GEMM driver's blocking variants side by side (bench/bench_gemm_tune.c: %
# of the peak of the same run, wall and CPU time, the micro-kernel's ceiling, the pool's wake-up;
# TUNE_ARGS overrides the variants) and the attention kernels at L = 2304 and 10,080 on 1 and 2
# threads. To compare two builds alternately (GEMM, attention, encoder): bench/ab_bench.sh.
TUNE_ARGS ?= --threads 1,2 --reps 9 --var pf=-1 --var pf=1 --var kc=24
bench-tune: ## GEMM blocking variants and attention in % of the measured peak (TUNE_ARGS)
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),bench_gemm_tune bench_attention)
	$(BUILD)/bench/bench_gemm_tune $(TUNE_ARGS)
	$(BUILD)/bench/bench_attention --L 2304,10080 --threads 1
	$(BUILD)/bench/bench_attention --L 2304,10080 --threads 2

# make bench-load: what a process pays to start, on the synthetic e4b of `make bench`
# (bench/bench_load.c): model load time, peak RSS against the mapped weights, a one-shot
# `g4v encode` against a warm encode, two processes' PSS on one checkpoint; each against its
# target (issue 37: BF16 weights used in place). LOAD_ARGS: --threads, --reps, --budget.
LOAD_ARGS ?= --threads 2 --reps 5
bench-load: test-deps ## load time, peak RSS, one-shot encode, shared pages (LOAD_ARGS)
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),bench_load g4v_cli)
	$(BENCH_MODEL_GEN)
	$(BUILD)/bench/bench_load $(BENCH_MODEL) $(BUILD)/g4v $(LOAD_ARGS)

# make bench-arm64-mca: llvm-mca's prediction of the ARM64 GEMM and attention inner loops on
# Neoverse V1, V2 and Apple M1 (cycles per iteration, bottleneck, share of the instruction's
# peak), compiled here with the cross compiler; bench/arm64_mca_results.md says how to read it.
bench-arm64-mca: ## llvm-mca predictions of the ARM64 kernels' inner loops (needs --bench deps)
	$(PYTHON) bench/arm64_mca.py

# make bench-int8: the INT8 modes against FAST in one run (bench/int8_speed.py: 256 and 1120 soft
# tokens, 2 threads, FAST / INT8 and FAST / INT8 per 32-block as ratios) on the synthetic e4b of
# `make bench`.
bench-int8: test-deps ## INT8 (per channel, per block) vs FAST speed, one run, 256/1120 tokens
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),encode_tool)
	$(BENCH_MODEL_GEN)
	$(PYTHON) bench/int8_speed.py --encode-tool $(BUILD)/tests/encoder/encode_tool \
	  --model $(BENCH_MODEL)

# make bench-python: bulk encoding (gemma4_vision.bulk on a Dask LocalCluster, 1 and 2 workers x
# 1 and 2 threads) against a loop of `g4v encode` over the same mixed images, in one run
# (bench/bench_bulk.py; a few minutes on 2 cores). The checkpoint is a SYNTHETIC e2b cut to
# BENCH_PY_LAYERS encoder layers (generated once into $(BENCH_PY_MODEL)); MODEL=DIR uses another.
BENCH_PY_LAYERS ?= 4
BENCH_PY_MODEL ?= $(BUILD)/bench-e2b-l$(BENCH_PY_LAYERS)
BENCH_PY_IMAGES ?= $(BUILD)/bench-images
BENCH_PY_ARGS ?= --tokens 140
bench-python: test-deps ## bulk encoding on Dask against a loop of g4v encode
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS))
	@model="$(MODEL)"; if [ -z "$$model" ]; then model=$(BENCH_PY_MODEL); \
	  if [ ! -f $$model/config.json ]; then \
	    $(PYTHON) tools/gen_checkpoint.py $$model --config e2b --layers $(BENCH_PY_LAYERS) --seed 0; fi; \
	fi; \
	PYTHONPATH=python G4V_LIBRARY=$(BUILD)/libg4v.so $(PYTHON) bench/bench_bulk.py --model $$model \
	  --images $(BENCH_PY_IMAGES) --g4v $(BUILD)/g4v $(BENCH_PY_ARGS)

# make bench-mlx: the mlx-vlm peer (bench/mlx_peer.py) on mlx's CPU backend beside ours, in one
# run: accuracy against float64 and encode seconds, e4b at 256 tokens (MLX_CKPT, MLX_IMAGE).
MLX_CKPT ?= $(HF_OUT)/ckpt/e4b-peer
bench-mlx: test-deps ## the mlx-vlm peer beside ours: accuracy and encode seconds
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),g4v_cli)
	@set -e; py=$$(scripts/hf-env.sh --mlx | tail -1); hpy=$$(scripts/hf-env.sh | tail -1); \
	[ -f $(MLX_CKPT)/config.json ] || $(PYTHON) tools/gen_checkpoint.py $(MLX_CKPT) --config e4b; \
	img=$(HF_OUT)/mlx-768.png; \
	$$hpy -c "from PIL import Image; Image.open('$$HOME/.cache/g4v-hf/photos/astronaut.png').convert('RGB').resize((768, 768), Image.BICUBIC).save('$$img')"; \
	$$py bench/mlx_peer.py $(MLX_CKPT) $$img --tokens 280 --g4v $(BUILD)/g4v

# Accuracy. make accuracy-bf16: FAST on the AVX512_BF16 kernels (bf16 GEMM and attention),
# emulated through SIMDe so it runs on any x86-64, against the native FAST and the float64
# reference: e4b and the 31B shape at 256 and 1120 tokens, and sharper attention (--qk-scale 2).
# Emulation is ~30x slower than native: about an hour on 2 cores. ACC_BF16_CASES overrides the
# cases.
ACC_BF16_CASES ?= e4b:16:768x768 e4b:2:768x768:qk=2 31b:2:768x768 31b:2:768x768:qk=2 \
  e4b:2:1680x1536 31b:2:1680x1536
accuracy-bf16: test-deps ## the AVX512-BF16 paths emulated through SIMDe against float64 (~1 h)
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),encode_tool encode_tool_simde)
	$(PYTHON) bench/accuracy.py --encode-tool $(BUILD)/tests/encoder/encode_tool \
	  --encode-tool $(BUILD)/tests/encoder/encode_tool_simde --modes fast \
	  --work $(BUILD)/accuracy-bf16 $(ACC_BF16_CASES)

# make accuracy-int8: both INT8 modes and FAST against float64 (bench/accuracy.py; minutes per
# case at 256 tokens, ACC_INT8_CASES overrides the cases; the last one is sharper attention).
# make q8-granularity: the per-GEMM error of the four scale granularities (numpy).
ACC_INT8_CASES ?= e4b:16:768x768 e2b:0:768x768 31b:2:768x768 e4b:2:768x768:qk=2
accuracy-int8: test-deps ## INT8 (default, all-int8, per block) and FAST vs float64 (~40 min)
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),encode_tool)
	$(PYTHON) bench/accuracy.py --encode-tool $(BUILD)/tests/encoder/encode_tool \
	  --modes fast,int8,int8+none,int8b --work $(BUILD)/accuracy-int8 $(ACC_INT8_CASES)
q8-granularity: test-deps ## int8 error per GEMM: per channel/row vs per 32-block (numpy, ~20 s)
	$(PYTHON) bench/q8_granularity.py

# make unified-long: the 12B unified embedder against the float64 reference at the full target
# sizes of budgets 70, 280 and 1120 (the default suite runs budget 70 only). About a minute.
unified-long: test-deps ## the 12B unified embedder against float64 at full budgets 70/280/1120
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),encode_tool g4v_cli)
	G4V_BUILD_DIR=$(BUILD) G4V_BIN=$(BUILD)/g4v G4V_ENCODE_TOOL=$(BUILD)/tests/encoder/encode_tool \
	  $(PYTHON) -m pytest -q -p no:cacheprovider -rfEs tests/encoder/test_unified_ref.py --arg=--long
