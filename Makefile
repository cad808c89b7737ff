# The two commands of the README quick start: `make demo` and `make test`.
# Each creates the virtual environment it needs, so a fresh machine with
# Python 3.11+ and make is enough.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint man venv clean

$(BIN)/crawlkit: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(BIN)/crawlkit

venv: $(BIN)/crawlkit

demo: venv
	$(BIN)/crawlkit demo --dir demo-out

test: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Regenerate man/*.1 from the --help text (tests fail when they drift).
man: venv
	$(BIN)/python -m crawlkit_cli.manpages man

clean:
	rm -rf $(VENV) demo-out .pytest_cache
