# prefkit developer targets. `make demo` and `make test` both set up .venv first (idempotent, quick when done).
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.prefkit-installed
DEMO_PROJECT ?= demo-project
PORT ?= 8501
PYTEST_ARGS ?=

.PHONY: setup demo test check lint format bench clean

# What make runs writes Python's bytecode caches (.pyc) as Python does by default, even where
# PYTHONDONTWRITEBYTECODE is set (as on CI machines): uv installs without them, and without caches every
# process compiles SQLAlchemy, pydantic and Streamlit again (~1 s more per `prefkit` command, app server
# and test worker). Each module is compiled once, on first import.
unexport PYTHONDONTWRITEBYTECODE

setup: $(STAMP)

# uv (from PyPI, installed into the venv by pip) resolves and installs the dependencies in seconds where
# pip takes minutes; pip does the same install when uv cannot be had. The installer's output goes to a
# log, shown only when the install fails.
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@echo "setting up $(VENV) (the installer's log: $(VENV)/pip-install.log)"
	@{ { $(BIN)/python -m pip install -q uv && $(BIN)/uv pip install -q --python $(BIN)/python -e '.[dev]'; } \
		|| $(BIN)/python -m pip install -q -e '.[dev]'; } \
		>$(VENV)/pip-install.log 2>&1 || { tail -n 40 $(VENV)/pip-install.log; exit 1; }
	@touch $(STAMP)

demo: setup
	$(BIN)/prefkit demo --project $(DEMO_PROJECT) --port $(PORT)

# The static checks, the suite on both cores, the Label Studio, engine and serial tests (.ci/tests.sh).
test: setup
	@BIN=$(BIN) PYTEST_ARGS="$(PYTEST_ARGS)" bash .ci/tests.sh

# ruff, mypy, the import contracts and the CLI reference (.ci/static.py); make test runs it first.
check: setup
	@$(BIN)/python .ci/static.py

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: setup
	@for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) $(DEMO_PROJECT) .pytest_cache .ruff_cache .mypy_cache build *.egg-info
