# `make demo` and `make test` each create .venv when missing and install what they need.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
SOURCES := src tests benchmarks scripts

.PHONY: demo test test-fast lint typecheck unit bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# One stamp per set of extras; reinstalled whenever pyproject.toml changes.
$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[cli]"
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(BIN)/frameldp demo

# mypy (one core, about 15 s) runs beside the suite, which leaves gaps on the cores.
test: lint
	$(MAKE) --no-print-directory -j2 typecheck unit

lint: $(VENV)/.test-installed
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)

typecheck: $(VENV)/.test-installed
	$(BIN)/mypy

# Both cores: the suite is independent tests (each makes its own files and ledgers); an idle
# worker steals queued tests, so the slow ones at the end do not leave a core unused. A worker
# per core already uses every core: frameldp's own threads and OpenBLAS's stay at one (FRAMELDP_THREADS,
# OPENBLAS_NUM_THREADS: two BLAS threads per worker spin on each other's core), and
# the tests of threads ask for theirs with frameldp.threads(n).
# frameldp's bytecode is written once even where PYTHONDONTWRITEBYTECODE is set: the suite
# starts a Python process for every command-line, benchmark and worker test, and each would
# compile frameldp anew (about 0.4 s each).
unit: $(VENV)/.test-installed
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m compileall -q src
	FRAMELDP_THREADS=1 OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -n auto --dist worksteal

# The same suite without the tests marked slow (for a quick local loop; CI runs `make test`).
test-fast: $(VENV)/.test-installed
	FRAMELDP_THREADS=1 OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -n auto --dist worksteal -m "not slow"

bench: $(VENV)/.test-installed
	$(BIN)/python benchmarks/bench_foundation.py
	$(BIN)/python benchmarks/bench_speed.py
	$(BIN)/python benchmarks/bench_accounting.py
	$(BIN)/python benchmarks/bench_bloom.py
	$(BIN)/python benchmarks/bench_shuffle.py
	$(BIN)/python benchmarks/bench_composition.py
	$(BIN)/python benchmarks/bench_discovery.py
	$(BIN)/python benchmarks/bench_longitudinal.py
	$(BIN)/python benchmarks/bench_etl.py
	$(BIN)/python benchmarks/bench_spark.py
	$(BIN)/python benchmarks/bench_import.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
