# bench.mk - the measurement targets of the Makefile (included by it; `make help` lists them):
# speed against the peers (PyTorch, llama.cpp, mlx-vlm), the kernels against the machine's peak,
# accuracy against the float64 reference and transformers. None is part of `make test`. Each is one
# line running its script (scripts/make/<target>.sh says what it measures and which settings it
# reads: BENCH_ARGS, BENCH_HF, BENCH_LLAMA, BENCH_CHAT, CHAT_BENCH_*, TUNE_ARGS, LOAD_ARGS, ...).
# bench/README.md says how to read the results; bench/RESULTS.md holds them per machine kind.

.PHONY: bench bench-llama bench-chat bench-report bench-tune bench-int8 bench-python bench-mlx \
  bench-arm64-mca accuracy-bf16 accuracy-int8 q8-granularity unified-long bench-load \
  bench-llama-backends bench-serve-batch bench-chat-vision bench-amx accuracy-amx

bench: bench-deps ## whole-encoder table vs PyTorch (BENCH_ARGS), then bench-llama, bench-chat
	@$(RUN) scripts/make/bench.sh

bench-llama: test-deps ## ours vs llama.cpp's gemma4v encoder, same checkpoint (BENCH_LLAMA=0 skips)
	$(RUN) scripts/make/bench-llama.sh

bench-chat: test-deps ## TTFT per turn of a chat vs llama-server, one-shot vs llama-mtmd-cli
	@$(RUN) scripts/make/bench-chat.sh

bench-report: test-deps ## one markdown report of this machine (bench/report.sh; REPORT_QUICK=1)
	$(RUN) scripts/make/bench-report.sh

bench-llama-backends: test-deps ## LM prefill: run-time CPU variants vs native vs AVX2 libllama
	@$(RUN) scripts/make/bench-llama-backends.sh

bench-amx: test-deps ## AMX: hardware vs emulator bit for bit, tile % of peak, encode vs torch/AVX-512
	$(RUN) scripts/make/bench-amx.sh

bench-tune: ## GEMM blocking variants and attention in % of the measured peak (TUNE_ARGS)
	$(RUN) scripts/make/bench-tune.sh

bench-load: test-deps ## load time, peak RSS, one-shot encode, shared pages (LOAD_ARGS)
	$(RUN) scripts/make/bench-load.sh

bench-serve-batch: test-deps ## g4v serve --batch vs one at a time, 8 clients (SERVE_BATCH_ARGS)
	$(RUN) scripts/make/bench-serve-batch.sh

bench-chat-vision: test-deps ## serve --lm: 4 image chats at once vs alone, vs a baseline commit
	$(RUN) scripts/make/bench-chat-vision.sh

# llvm-mca's prediction of the ARM64 GEMM and attention inner loops on Neoverse V1, V2 and Apple
# M1 (cycles per iteration, bottleneck, share of the instruction's peak), compiled here with the
# cross compiler; bench/arm64_mca_results.md says how to read it.
bench-arm64-mca: ## llvm-mca predictions of the ARM64 kernels' inner loops (needs --bench deps)
	$(PYTHON) bench/arm64_mca.py

bench-int8: test-deps ## INT8 (per channel, per block) vs FAST speed, one run, 256/1120 tokens
	$(RUN) scripts/make/bench-int8.sh

bench-python: test-deps ## bulk encoding on Dask against a loop of g4v encode
	$(RUN) scripts/make/bench-python.sh

bench-mlx: test-deps ## the mlx-vlm peer beside ours: accuracy and encode seconds
	$(RUN) scripts/make/bench-mlx.sh

accuracy-bf16: test-deps ## the AVX512-BF16 paths emulated through SIMDe against float64 (~1 h)
	$(RUN) scripts/make/accuracy-bf16.sh

accuracy-amx: test-deps ## FAST on the AMX tiles (emulated) against float64, 70 and 1120 tokens
	$(RUN) scripts/make/accuracy-amx.sh

accuracy-int8: test-deps ## INT8 (default, all-int8, per block) and FAST vs float64 (~40 min)
	$(RUN) scripts/make/accuracy-int8.sh

# The per-GEMM error of the four scale granularities (numpy).
q8-granularity: test-deps ## int8 error per GEMM: per channel/row vs per 32-block (numpy, ~20 s)
	$(PYTHON) bench/q8_granularity.py

unified-long: test-deps ## the 12B unified embedder against float64 at full budgets 70/280/1120
	$(RUN) scripts/make/unified-long.sh
