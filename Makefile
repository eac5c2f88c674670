# The two entry points: `make demo` (the main job) and `make test` (everything
# CI checks). Each sets itself up first (apt packages, .venv, build).
LLVM ?= 22
VENV := .venv
BIN := $(VENV)/bin
export LLVMACCEL_LLVM_VERSION := $(LLVM)
LIT_RELEASES := lit-19 lit-20 lit-21 lit-22 lit-23

.PHONY: setup cross demo test test-lit test-py lint clean test-sanitized fuzz-ci $(LIT_RELEASES)

# `make test SANITIZE=address,undefined`: the plugin and the Python extension
# built with those sanitizers (build/llvm-NN-san, build/py-san-site), then lit,
# the checking tools' pytest suites and a short fuzz run against them. The
# tools (opt, python) are not instrumented, so the runtime is preloaded.
SANITIZE ?=
# libstdc++ is preloaded too: python does not link it, and ASan's __cxa_throw
# interceptor needs the real one at start-up. handle_segv=0: the faults that
# llvmaccel check provokes at guard pages must stay signals.
SAN_RUNTIME = $(shell $${CXX:-c++} -print-file-name=libasan.so) \
	$(shell $${CXX:-c++} -print-file-name=libstdc++.so)
SAN_ENV = LD_PRELOAD="$(if $(findstring address,$(SANITIZE)),$(SAN_RUNTIME))" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:handle_segv=0:handle_sigbus=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	PYTHONPATH=$(CURDIR)/build/py-san-site
# pytest files that do not import torch or jax (their own native code is not
# built with the sanitizers and dominates the run time).
SAN_PYTESTS = test/py/test_check.py test/py/test_fuzz.py test/py/test_ir.py \
	test/py/test_jit.py test/py/test_pipeline.py test/py/test_cli.py

setup:
	./scripts/setup.sh

demo: setup
	$(BIN)/llvmaccel demo

# The cross-target tests (llvmaccel check --targets, llvmaccel.crossrun) run
# AArch64 and RISC-V programs under qemu-user.
cross:
	./scripts/setup.sh --cross

ifeq ($(SANITIZE),)
test: setup cross
	$(MAKE) --no-print-directory lint test-lit test-py
else
test: setup
	./scripts/setup.sh --sanitize $(SANITIZE)
	$(MAKE) --no-print-directory test-sanitized
endif

test-sanitized:
	$(SAN_ENV) $(BIN)/lit -sv $(LIT_ARGS) build/llvm-$(LLVM)-san/test/lit
	$(SAN_ENV) $(BIN)/pytest -q -p no:cacheprovider $(SAN_PYTESTS)
	$(SAN_ENV) $(BIN)/llvmaccel fuzz --kernels 60 --seed 0 --out build/fuzz-findings-san

# The bounded fuzz run of CI: fixed seeds, then a time-seeded share; fails on
# any finding (kept, reduced, in build/fuzz-findings). FUZZ_SECONDS in all.
FUZZ_SECONDS ?= 120
fuzz-ci: setup
	./scripts/fuzz-ci.sh $(FUZZ_SECONDS)

lint:
	$(BIN)/ruff check python test/py bench scripts
	./scripts/check-format.sh

# Extra lit arguments, e.g. LIT_ARGS="--param gpu=cuda" on a GPU runner.
LIT_ARGS ?=

test-lit:
	$(BIN)/lit -sv $(LIT_ARGS) build/llvm-$(LLVM)/test/lit

test-py:
	$(BIN)/pytest -q test/py

# The lit suite against another LLVM release, e.g. `make lit-19` (`make lit-23`:
# the PyPI LLVM wheels, with Debian's FileCheck).
$(LIT_RELEASES):
	LLVMACCEL_LLVM_VERSION=$(@:lit-%=%) ./scripts/setup.sh --lit-only
	$(BIN)/lit -sv $(LIT_ARGS) build/llvm-$(@:lit-%=%)/test/lit

clean:
	rm -rf build
