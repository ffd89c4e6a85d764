# reliability.mk - the long-running reliability targets of the Makefile (included by it; `make
# help` lists them): the HTTP service under load, the soak tests and coverage. None is part of
# `make test`; docs/TESTING.md and fuzz/CAMPAIGNS.md say what they show.

.PHONY: load load-chat soak soak-tsan coverage

# make load: the HTTP service under load (scripts/load.sh): loopback only, LOAD_SECONDS per wrk run.
LOAD_SECONDS ?= 10
load: load-deps ## g4v serve under wrk on 127.0.0.1 (LOAD_SECONDS per run)
	$(call configure-build,$(BUILD),$(CMAKE_FLAGS),g4v_cli)
	PYTHON=$(PYTHON) scripts/load.sh $(BUILD) $(LOAD_SECONDS)

# make load-chat: g4v serve --lm under concurrent streaming chats (scripts/load_chat.sh; the
# OpenAI client for Node): requests/s, time to first token p50/p99, errors. Loopback only, synthetic
# models; LOAD_SECONDS per run, LOAD_STREAMS chats at once.
LOAD_STREAMS ?= 4
load-chat: test-deps ## g4v serve --lm under LOAD_STREAMS concurrent streaming chats (openai-node)
	@set -e; $(LLAMA_PREFIX); \
	$(call configure,$(BUILD),$(LLAMA_FLAGS) $(CMAKE_FLAGS)); \
	$(call compile,$(BUILD),g4v_cli); \
	PYTHON=$(PYTHON) scripts/load_chat.sh $(BUILD) $$prefix $(LOAD_SECONDS) $(LOAD_STREAMS)

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
	$(call configure-build,$(BUILD),-DG4V_WERROR=ON $(CMAKE_FLAGS),soak g4v_cli)
	@[ -f $(SOAK_FIXTURES)/tiny/config.json ] || $(PYTHON) tests/api/make_fixtures.py $(SOAK_FIXTURES)
	$(BUILD)/tests/soak/soak $(SOAK_FIXTURES) $(SOAK_SECONDS) $(SOAK_THREADS)
	$(PYTHON) scripts/soak_http.py --g4v $(BUILD)/g4v --fixtures $(SOAK_FIXTURES) \
	  --seconds $(SOAK_HTTP_SECONDS)

soak-tsan: test-deps ## the library soak under ThreadSanitizer (SOAK_TSAN_SECONDS)
	$(call configure-build,build-tsan,-DCMAKE_BUILD_TYPE=RelWithDebInfo -DG4V_TSAN=ON \
	  -DG4V_WERROR=ON,soak)
	@[ -f build-tsan/soak-fixtures/tiny/config.json ] || \
	  $(PYTHON) tests/api/make_fixtures.py build-tsan/soak-fixtures
	TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/soak/soak build-tsan/soak-fixtures \
	  $(SOAK_TSAN_SECONDS) $(SOAK_THREADS) --no-rss-check

# Line and branch coverage per file of src/io and src/image over the unit tests, the fuzz
# corpora replays and the allocation-failure sweep (clang source-based coverage, build-cov/;
# scripts/coverage.sh, which configures its own build).
coverage: test-deps ## line and branch coverage of src/io and src/image (build-cov/)
	PYTHON=$(PYTHON) scripts/coverage.sh build-cov $(JOBS)
