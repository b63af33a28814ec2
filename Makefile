# Thin aliases over the real commands. Every target that needs Python first makes sure the
# virtual environment in .venv exists and matches pyproject.toml + the requirements file it
# uses: requirements/dev.txt (make test, the whole tool chain) or requirements/demo.txt
# (make demo, only what the demo runs). The dev chain holds everything the demo needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.demo-installed
say = @printf '\n==> %s\n' $(1)
# Extra pip arguments for both installs, e.g. where the index's default torch is a CUDA build:
#   make demo PIP_ARGS='--extra-index-url https://download.pytorch.org/whl/cpu'
PIP_ARGS ?=
# Where the browser tests look for Debian's chromium (tests/e2e/conftest.py)
CHROMIUM ?= /usr/bin/chromium

.PHONY: install fmt fmt-check lint typecheck arch pytest test check demo bench proto clean web \
	web-test system-deps kernel-paths mindspore-tests tensorflow-tests

install: $(STAMP)

$(VENV)/bin/python:
	$(call say,"creating the virtual environment $(VENV) (a few seconds)")
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml requirements/dev.txt | $(VENV)/bin/python
	$(call say,"installing the dev tool chain into $(VENV) (first time: 3-5 min, ~2 GB)")
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install $(PIP_ARGS) -r requirements/dev.txt
	touch $(STAMP) $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml requirements/demo.txt | $(VENV)/bin/python
	$(call say,"installing tensorsight with the demo's extras and torch (first time: 30 s to 2 min; torch is the big one)")
	$(BIN)/python -m pip install $(PIP_ARGS) -r requirements/demo.txt
	touch $(DEMO_STAMP)

fmt: $(STAMP)
	$(BIN)/ruff format src tests benchmarks hatch_build.py
	$(BIN)/ruff check --fix src tests benchmarks hatch_build.py

fmt-check: $(STAMP)
	$(BIN)/ruff format --check src tests benchmarks hatch_build.py

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks hatch_build.py

typecheck: $(STAMP)
	$(BIN)/mypy

arch: $(STAMP)
	$(BIN)/lint-imports

# The board's front end (web/, TypeScript + Vite) builds into the package, which serves it.
# npm ci runs when the lock file changed; vite build when anything under web/ changed.
WEB_DEPS := web/node_modules/.package-lock.json
WEB_BUILD := src/tensorsight/board/static/index.html
WEB_SRC := $(shell find web/src -type f 2>/dev/null) web/index.html web/vite.config.ts \
	web/tsconfig.json web/package.json

$(WEB_DEPS): web/package.json web/package-lock.json
	@command -v npm >/dev/null 2>&1 || { echo "error: the board's front end needs node 20+" \
	  "and npm: install them (e.g. apt-get install -y nodejs npm, or nodejs.org) and run" \
	  "make again" >&2; exit 2; }
	$(call say,"installing the front end's tool chain: npm ci (first time: 5-30 s)")
	cd web && npm ci --no-audit --no-fund --loglevel=error
	touch $(WEB_DEPS)

$(WEB_BUILD): $(WEB_DEPS) $(WEB_SRC)
	$(call say,"building the board's front end: vite build (~5 s)")
	cd web && npx vite build --logLevel warn

web: $(WEB_BUILD)

web-test: $(WEB_DEPS)
	cd web && npx tsc --noEmit && npx vitest run

# Programs the tests need besides Python and node: Debian's chromium (the browser tests;
# never `playwright install`), a C++ compiler (the native op capture; Debian's gcc package
# lacks g++) and, on x86-64, qemu-user (tests/test_avx2_only_cpu.py runs the compiled parts on
# an emulated AVX2-only CPU). As root with apt they are installed; otherwise one line says what
# to install.
system-deps:
	@missing=""; \
	[ -x $(CHROMIUM) ] || missing="$$missing chromium"; \
	command -v g++ >/dev/null 2>&1 || command -v c++ >/dev/null 2>&1 || missing="$$missing g++"; \
	[ "$$(uname -m)" != x86_64 ] || command -v qemu-x86_64 >/dev/null 2>&1 || \
	  missing="$$missing qemu-user"; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  printf '\n==> installing%s with apt-get (once, 1-3 min)\n' "$$missing"; \
	  apt-get update && apt-get install -y $$missing; \
	else \
	  echo "error: make test needs$$missing: install it (sudo apt-get install -y$$missing)" \
	    "and run make test again" >&2; \
	  exit 2; \
	fi

pytest: $(STAMP) $(WEB_BUILD) system-deps
	$(call say,"pytest: the whole suite with coverage (~8 min on 2 cores)")
	$(if $(wildcard $(TF_VENV)/bin/python),TENSORSIGHT_TF_PYTHON=$(TF_VENV)/bin/python) \
	  $(BIN)/pytest --cov --cov-report=term

# The kernel-sensitive parts once per forced kernel path, each with torch's own CPU kernels
# pinned to match, so what an AVX2-only CPU runs (our avx2 loop, ATen's AVX2 kernels), what a
# CPU with no vector extension runs (portable C, ATen "default") and the no-compiler fallback
# (numpy) are each tested on any machine; no coverage here.
KERNEL_TESTS := tests/compare tests/capture tests/dumpformat
KERNEL_PATHS := avx2:avx2 portable:default numpy:default
kernel-paths: $(STAMP) $(WEB_BUILD) system-deps
	@set -e; for pair in $(KERNEL_PATHS); do \
	  kernel=$${pair%%:*}; aten=$${pair##*:}; \
	  printf '\n==> %s with TENSORSIGHT_KERNEL=%s ATEN_CPU_CAPABILITY=%s (~3 min)\n' \
	    "$(KERNEL_TESTS)" $$kernel $$aten; \
	  TENSORSIGHT_KERNEL=$$kernel ATEN_CPU_CAPABILITY=$$aten \
	    $(BIN)/pytest -q -p no:cacheprovider $(KERNEL_TESTS); \
	done

# MindSpore's adapter (tensorsight.integrations.mindspore) against a real MindSpore, in a venv
# of its own: the framework is ~800 MB and pins numpy < 2 (requirements/mindspore.txt).
MS_VENV := .venv-mindspore
MS_STAMP := $(MS_VENV)/.installed
$(MS_STAMP): pyproject.toml requirements/mindspore.txt
	$(call say,"installing MindSpore into $(MS_VENV) for its adapter's tests (first time: 1-3 min, ~1 GB)")
	$(PYTHON) -m venv $(MS_VENV)
	$(MS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(MS_VENV)/bin/python -m pip install $(PIP_ARGS) -r requirements/mindspore.txt
	touch $(MS_STAMP)

mindspore-tests: $(MS_STAMP)
	$(call say,"the MindSpore adapter and dump tests with MindSpore (~2 min)")
	$(MS_VENV)/bin/pytest -q -p no:cacheprovider tests/integrations/test_mindspore.py tests/mindspore

# TensorFlow's live tests (tensorsight.tensorflow.dump, a TF step against PyTorch) likewise.
TF_VENV := .venv-tensorflow
TF_STAMP := $(TF_VENV)/.installed
TF_TESTS := tests/compare/test_tensorflow_cross.py tests/test_tensorflow_helper.py
$(TF_STAMP): pyproject.toml requirements/tensorflow.txt
	$(call say,"installing TensorFlow and torch into $(TF_VENV) for the live TensorFlow tests (first time: 1-3 min, ~1.5 GB)")
	$(PYTHON) -m venv $(TF_VENV)
	$(TF_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(TF_VENV)/bin/python -m pip install $(PIP_ARGS) -r requirements/tensorflow.txt
	touch $(TF_STAMP)

tensorflow-tests: $(TF_STAMP)
	$(call say,"the TensorFlow tests with TensorFlow (~2 min)")
	TF_ENABLE_ONEDNN_OPTS=0 TF_CPP_MIN_LOG_LEVEL=3 $(TF_VENV)/bin/pytest -q -p no:cacheprovider $(TF_TESTS)

# The README's test command: every check CI runs (pytest last, so its summary ends the output).
test: system-deps lint fmt-check typecheck arch web-test kernel-paths mindspore-tests \
	tensorflow-tests pytest

check: test

# The whole story on a small model: train, dump, compare, then serve the board (Ctrl-C stops).
demo: $(DEMO_STAMP) $(WEB_BUILD)
	$(call say,"the demo: train fp32 and bf16 then dump and compare (~25 s) then serve the board")
	$(BIN)/tensorsight demo --logdir tensorsight-demo --force

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# Compile the .proto specs into committed descriptor sets (needs grpcio-tools, dev only).
PROTO_DIRS := src/tensorsight/summary/_proto src/tensorsight/dumpformat/_proto
proto: $(STAMP)
	$(BIN)/python -m pip install --quiet grpcio-tools
	for d in $(PROTO_DIRS); do (cd $$d && for f in *.proto; do \
	  ../../../../$(BIN)/python -m grpc_tools.protoc -I. \
	    -I"$$(../../../../$(BIN)/python -c 'import grpc_tools,os;print(os.path.dirname(grpc_tools.__file__))')/_proto" \
	    --include_imports --descriptor_set_out="$${f%.proto}.binpb" "$$f"; done) || exit 1; done

clean:
	rm -rf $(VENV) $(MS_VENV) $(TF_VENV) .mypy_cache .pytest_cache .ruff_cache .coverage build dist
