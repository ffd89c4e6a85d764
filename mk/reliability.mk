# reliability.mk - the long-running reliability targets of the Makefile (included by it; `make
# help` lists them): the HTTP service under load, the soak tests and coverage, each one line
# running its script (scripts/make/<target>.sh says what it does and which settings it reads).
# None is part of `make test`; docs/TESTING.md and fuzz/CAMPAIGNS.md say what they show.

.PHONY: load load-chat soak soak-tsan coverage

load: load-deps ## g4v serve under wrk on 127.0.0.1 (LOAD_SECONDS per run)
	$(RUN) scripts/make/load.sh

load-chat: test-deps ## g4v serve --lm under LOAD_STREAMS concurrent streaming chats (openai-node)
	@$(RUN) scripts/make/load-chat.sh

soak: test-deps ## SOAK_SECONDS (600) of mixed load on one model, then through g4v serve
	$(RUN) scripts/make/soak.sh

soak-tsan: test-deps ## the library soak under ThreadSanitizer (SOAK_TSAN_SECONDS)
	$(RUN) scripts/make/soak-tsan.sh

# Line and branch coverage per file of src/io and src/image over the unit tests, the fuzz
# corpora replays and the allocation-failure sweep (clang source-based coverage, build-cov/;
# scripts/coverage.sh, which configures its own build).
coverage: test-deps ## line and branch coverage of src/io and src/image (build-cov/)
	PYTHON=$(PYTHON) scripts/coverage.sh build-cov $(JOBS)
