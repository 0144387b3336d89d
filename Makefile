# Two commands: `make run` serves the app, `make test` checks everything.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
PG_URL ?= postgres://postgres@127.0.0.1:5432/test

.PHONY: run test lint typecheck migrations-check pytest-sqlite pytest-postgres bench bench-full clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@ $(VENV)/.installed-run

# Development server: SQLite by default, DEBUG on, the demo corpus loaded once,
# a small per-piece delay so the streaming is visible.
run: export DEBUG ?= true
run: export ANSWERS_EXTRACTIVE_DELAY_MS ?= 15
run: $(VENV)/.installed-run
	$(PY) manage.py migrate --noinput
	$(PY) manage.py ingest --demo --if-empty
	$(PY) manage.py runserver 127.0.0.1:$(PORT) --noreload

test: $(VENV)/.installed-dev
	@./.ci/test-all

# The quick set (under 5 minutes); bench-full adds 100k/1M chunks and 2,000 streams (~25 minutes).
bench: $(VENV)/.installed-dev
	$(PY) bench/run_all.py

bench-full: $(VENV)/.installed-dev
	$(PY) bench/run_all.py --full

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-wal db.sqlite3-shm staticfiles
