# prefkit developer targets. `make demo` and `make test` both set up .venv first (idempotent, quick when done).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.prefkit-installed
DEMO_PROJECT ?= demo-project
PORT ?= 8501
PYTEST_ARGS ?=

.PHONY: setup demo test lint format bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $(STAMP)

demo: setup
	$(BIN)/prefkit demo --project $(DEMO_PROJECT) --port $(PORT)

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(DEMO_PROJECT) .pytest_cache .ruff_cache *.egg-info
