# The two commands of the README quick start: `make demo` and `make test`.
# Each creates the virtual environment it needs, so a fresh machine with
# Python 3.11+ and make is enough.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: demo test lint typecheck man venv clean

# mypy finds crawlkit through the editable install, but not crawlkit_cli (installed from
# cli/ by pyproject's package-dir): a directory with a crawlkit_cli -> cli link shows it.
MYPY_PATH := $(VENV)/mypy-path

$(BIN)/crawlkit: pyproject.toml setup.py crawlkit/dedup/_simhash.c crawlkit/html/_speedups.c \
		crawlkit/warc/_gzip.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(BIN)/crawlkit

venv: $(BIN)/crawlkit

demo: venv
	$(BIN)/crawlkit demo --dir demo-out

# Two test processes (pytest-xdist): most tests wait on politeness gaps, kills and
# subprocesses rather than a core, so two halve the suite's time even on two cores.
# Work stealing keeps both busy to the end (a few tests take a minute).
TEST_PROCESSES ?= 2

test: lint
	$(BIN)/python -m pytest -n $(TEST_PROCESSES) --dist worksteal

lint: typecheck
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Zero errors under pyproject's [tool.mypy]; an ignore names its code.
typecheck: venv
	mkdir -p $(MYPY_PATH)
	ln -sfn $(CURDIR)/cli $(MYPY_PATH)/crawlkit_cli
	MYPYPATH=$(MYPY_PATH) $(BIN)/mypy -p crawlkit -p crawlkit_cli

# Regenerate man/*.1 from the --help text (tests fail when they drift).
man: venv
	$(BIN)/python -m crawlkit_cli.manpages man

clean:
	rm -rf $(VENV) demo-out .pytest_cache .mypy_cache
