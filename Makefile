# The two entry points: `make demo` (the main job) and `make test` (everything
# CI checks). Each sets itself up first (apt packages, .venv, build).
LLVM ?= 22
VENV := .venv
BIN := $(VENV)/bin
export LLVMACCEL_LLVM_VERSION := $(LLVM)
LIT_RELEASES := lit-19 lit-20 lit-21 lit-22

.PHONY: setup demo test test-lit test-py lint clean $(LIT_RELEASES)

setup:
	./scripts/setup.sh

demo: setup
	$(BIN)/llvmaccel demo

test: setup
	$(MAKE) --no-print-directory lint test-lit test-py

lint:
	$(BIN)/ruff check python test/py bench scripts
	./scripts/check-format.sh

# Extra lit arguments, e.g. LIT_ARGS="--param gpu=cuda" on a GPU runner.
LIT_ARGS ?=

test-lit:
	$(BIN)/lit -sv $(LIT_ARGS) build/llvm-$(LLVM)/test/lit

test-py:
	$(BIN)/pytest -q test/py

# The lit suite against another LLVM release, e.g. `make lit-19`.
$(LIT_RELEASES):
	LLVMACCEL_LLVM_VERSION=$(@:lit-%=%) ./scripts/setup.sh --lit-only
	$(BIN)/lit -sv $(LIT_ARGS) build/llvm-$(@:lit-%=%)/test/lit

clean:
	rm -rf build
