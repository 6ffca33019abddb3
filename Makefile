# The README's two commands. Both install what they need (Debian packages), build and run.
#   make demo   release build, then the default pair through sweep, scoring and analysis
#   make paper  release build, then the authors'-code protocol beside the sound one on the regime
#               pair (scripts/paper.sh; results/paper/report/FINDINGS.md; under 60 min on 2 cores)
#   make lossy  release build, then SPRINTER beside its lossy peers (scripts/lossy.sh: experiments/lossy.ini,
#               exact d_TV per lossy configuration, the Pareto tables and FINDINGS row 9)
#   make specbench  release build, then Spec-Bench's layout on the regime pair (scripts/specbench.sh:
#               experiments/specbench.ini, multi-turn conversations, the task-group table; ~8 min)
#   make test   sanitizer build (ASan + UBSan) and the whole CTest suite, then
#               - the fuzz pass: every libFuzzer target for 30 s, FUZZ_JOBS (2) at a time, fixed
#                 seed (fuzz/Makefile fuzz-ci; output in build-fuzz/ci/, summary table at the end)
#               - the valgrind memcheck subset on a build without sanitizers (build-memcheck/,
#                 tests/memcheck.sh)
#               Each step prints how long it took. `make test-fuzz` and `make test-memcheck` run one.
JOBS ?= $(shell nproc)
FUZZ_JOBS ?= 2

.PHONY: all build demo paper specbench lossy test test-fuzz test-memcheck deps deps-test clean

all: build

deps:
	bash scripts/install-deps.sh

deps-test:
	bash scripts/install-deps.sh --test

build: deps
	cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
	cmake --build build -j $(JOBS)

demo: build
	bash scripts/demo.sh build/sprinter

paper: build
	bash scripts/paper.sh build/sprinter results/paper $(JOBS)

specbench: build
	bash scripts/specbench.sh build/sprinter results/specbench

lossy: build
	bash scripts/lossy.sh build/sprinter results/lossy $(JOBS)

test: deps-test
	@t0=$$(date +%s); \
	cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSP_SANITIZE=ON && \
	cmake --build build-test -j $(JOBS) && \
	(cd build-test && ctest --output-on-failure -j $(JOBS)) && \
	echo "make test: ASan + UBSan build and ctest took $$(($$(date +%s) - t0)) s"
	@rc=0; \
	$(MAKE) --no-print-directory fuzz-step || rc=1; \
	$(MAKE) --no-print-directory memcheck-step || rc=1; \
	exit $$rc

test-fuzz: deps-test
	@$(MAKE) --no-print-directory fuzz-step

test-memcheck: deps-test
	@$(MAKE) --no-print-directory memcheck-step

# libFuzzer (clang), 30 s per target, two targets at a time, -seed=1, from the committed seeds only
# (build-fuzz/ci is emptied first); fails on any crash, leak, timeout or OOM, one inside libhdf5 on
# our inputs too (fuzz/RELIABILITY.md, "Fuzzing in CI")
.PHONY: fuzz-step memcheck-step
fuzz-step:
	@t0=$$(date +%s); \
	rm -rf build-fuzz/ci && \
	$(MAKE) --no-print-directory -C fuzz -j $(FUZZ_JOBS) fuzz-build > /dev/null && \
	$(MAKE) --no-print-directory -C fuzz fuzz-ci JOBS=$(FUZZ_JOBS) SEED=1 OUT=$(CURDIR)/build-fuzz/ci; \
	rc=$$?; echo "make test: fuzz pass took $$(($$(date +%s) - t0)) s"; exit $$rc

# valgrind memcheck on a build without sanitizers (and without -march=native: valgrind must know
# every instruction)
memcheck-step:
	@t0=$$(date +%s); \
	cmake -S . -B build-memcheck -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSP_SANITIZE=OFF -DSP_NATIVE=OFF > /dev/null && \
	cmake --build build-memcheck -j $(JOBS) --target sprinter replay_inputs test_model test_tokenizer \
	  test_sampling test_spec test_stats test_analysis > /dev/null && \
	bash tests/memcheck.sh build-memcheck .; \
	rc=$$?; echo "make test: valgrind memcheck subset took $$(($$(date +%s) - t0)) s"; exit $$rc

clean:
	rm -rf build build-test build-memcheck build-fuzz/ci

# corpus, datasets, tokenizer and the default draft/target pair (make corpus / datasets / tokenizer / models)
include data/models.mk
