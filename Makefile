# Everyday verbs. `make run` and `make test` are all a fresh machine needs.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install install-test run migrate demo test lint format bench clean eval-gate

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml clients/python/pyproject.toml
	$(PIP) install --quiet -e ".[test]"
	$(PIP) install --quiet -e ./clients/python
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

migrate: install
	$(PY) manage.py migrate --no-input
	$(PY) manage.py createcachetable

demo: migrate
	$(PY) manage.py seed_demo
	$(PY) manage.py setup_schedules

# Web server and django-q2 worker together; Ctrl-C stops both.
run: demo
	$(PY) manage.py runall --host $(HOST) --port $(PORT)

# The whole suite under coverage, spread over one pytest-xdist worker per core (TEST_WORKERS
# sets how many; 0 runs it in one process); fails if total coverage falls below
# .coverage-floor (docs/testing.md: the floor only rises). PYTEST_ARGS runs a part of the
# suite, e.g. PYTEST_ARGS="tests/api -x", and then reports coverage without the floor.
PYTEST_ARGS ?=
TEST_WORKERS ?= auto
test: install-test
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=25 \
	  --cov --cov-report=term:skip-covered \
	  --cov-fail-under=$(if $(strip $(PYTEST_ARGS)),0,$$(cat .coverage-floor)) $(PYTEST_ARGS)

# The recall regression gate (docs/evaluation.md): recall@10 on the LoCoMo dev file through
# the product path, on a fresh SQLite database with the default configuration, must stay at
# or above the floor in .recall-floor. The file is looked for beside the repository
# (../shared/data) unless LOCOMO_FILE says where; without it the gate says so and passes.
LOCOMO_FILE ?= $(firstword $(wildcard ../shared/data/locomo-dev.json /work/shared/data/locomo-dev.json))
EVAL_SQLITE_URL ?= sqlite:///var/eval-gate.sqlite3
eval-gate: install
	@if [ -z "$(LOCOMO_FILE)" ] || [ ! -f "$(LOCOMO_FILE)" ]; then \
	  echo "recall gate SKIPPED: no LoCoMo file (set LOCOMO_FILE=path/to/locomo-dev.json)"; \
	else \
	  rm -f var/eval-gate.sqlite3 && \
	  DATABASE_URL=$(EVAL_SQLITE_URL) $(PY) manage.py migrate --no-input -v0 && \
	  DATABASE_URL=$(EVAL_SQLITE_URL) $(PY) manage.py eval_recall "$(LOCOMO_FILE)" --k 1,5,10 \
	    --floor-file .recall-floor && rm -f var/eval-gate.sqlite3; \
	fi

# Whole-service figures (docs/benchmarks.md): SQLite always, PostgreSQL when
# BENCH_DATABASE_URL is set. BENCH_ARGS adds options, e.g. BENCH_ARGS="--load" (needs wrk).
# Each run is saved in var/bench and the growth plot var/bench/growth.svg redrawn from
# every saved run; then Engram and CortexGraph side by side (bench_peer; BENCH_PEER=0 skips
# it). docs/benchmarks.md and docs/peer-comparison.md.
BENCH_SIZE ?= 10000
BENCH_SQLITE_URL ?= sqlite:///var/bench.sqlite3
BENCH_SAVE := --save-dir var/bench --plot var/bench/growth.svg
bench: install
	DATABASE_URL=$(BENCH_SQLITE_URL) $(PY) manage.py migrate --no-input
	DATABASE_URL=$(BENCH_SQLITE_URL) $(PY) manage.py bench --size $(BENCH_SIZE) $(BENCH_SAVE) $(BENCH_ARGS)
	@if [ -n "$(BENCH_DATABASE_URL)" ]; then \
	  DATABASE_URL=$(BENCH_DATABASE_URL) $(PY) manage.py migrate --no-input && \
	  DATABASE_URL=$(BENCH_DATABASE_URL) $(PY) manage.py bench --size $(BENCH_SIZE) $(BENCH_SAVE) $(BENCH_ARGS); \
	fi
	@if [ "$(BENCH_PEER)" != "0" ]; then \
	  DATABASE_URL=$(BENCH_SQLITE_URL) $(PY) manage.py bench_peer --json var/bench/peer.json; \
	fi

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

format: install-test
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache .hypothesis *.egg-info
