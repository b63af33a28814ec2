# Thin aliases over the real commands. Every target that needs Python first makes sure the
# virtual environment in .venv exists and matches pyproject.toml + requirements/dev.txt.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install fmt fmt-check lint typecheck arch pytest test check demo bench proto clean web web-test

install: $(STAMP)

$(STAMP): pyproject.toml requirements/dev.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements/dev.txt
	touch $(STAMP)

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
	cd web && npm ci --no-audit --no-fund --loglevel=error
	touch $(WEB_DEPS)

$(WEB_BUILD): $(WEB_DEPS) $(WEB_SRC)
	cd web && npx vite build --logLevel warn

web: $(WEB_BUILD)

web-test: $(WEB_DEPS)
	cd web && npx tsc --noEmit && npx vitest run

pytest: $(STAMP) $(WEB_BUILD)
	$(BIN)/pytest --cov --cov-report=term

# The README's test command: every check CI runs.
test: lint fmt-check typecheck arch web-test pytest

check: test

# The whole story on a small model: train, dump, compare, then serve the board (Ctrl-C stops).
demo: $(STAMP) $(WEB_BUILD)
	$(BIN)/tensorsight demo --logdir tensorsight-demo --force

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# Compile the .proto specs into committed descriptor sets (needs grpcio-tools, dev only).
PROTO_DIR := src/tensorsight/summary/_proto
proto: $(STAMP)
	$(BIN)/python -m pip install --quiet grpcio-tools
	cd $(PROTO_DIR) && for f in *.proto; do \
	  ../../../../$(BIN)/python -m grpc_tools.protoc -I. \
	    -I"$$(../../../../$(BIN)/python -c 'import grpc_tools,os;print(os.path.dirname(grpc_tools.__file__))')/_proto" \
	    --include_imports --descriptor_set_out="$${f%.proto}.binpb" "$$f"; done

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .coverage build dist
