# The two commands of the README: `make bench` (set up, then run the Spark
# optimality-gap benchmark on the small default grid) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup bench test

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

bench: setup
	$(BIN)/kipopt bench --out bench-out

test: setup
	$(BIN)/python -m pytest -q
