# The README's two commands. Both install what they need (Debian packages), build and run.
#   make demo   release build, then the default pair through sweep, scoring and analysis
#   make test   sanitizer build (ASan + UBSan) and the whole CTest suite
JOBS ?= $(shell nproc)

.PHONY: all build demo test deps deps-test clean

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

test: deps-test
	cmake -S . -B build-test -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSP_SANITIZE=ON
	cmake --build build-test -j $(JOBS)
	cd build-test && ctest --output-on-failure -j $(JOBS)

clean:
	rm -rf build build-test

# corpus, datasets, tokenizer and the default draft/target pair (make corpus / datasets / tokenizer / models)
include data/models.mk
