# Two commands: `make run` serves the app, `make test` checks everything.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
PG_URL ?= postgres://postgres@127.0.0.1:5432/test
# The page's vendored JavaScript (answers/static/vendor/), refreshed by `make vendor-js` (needs npm; nothing
# else does). markdown-it must stay the version markdown-it-py ports (markdown_it/port.yaml), so
# the page and the server parse Markdown alike; tests/unit/test_rendering_markdown.py checks it.
MARKDOWN_IT_VERSION := 14.1.0
DOMPURIFY_VERSION := 3.5.0

.PHONY: run test lint typecheck migrations-check pytest-sqlite pytest-postgres bench bench-full clean vendor-js

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

# Like Django's admin, the page ships its third-party scripts as files: `make run` needs no node.
vendor-js:
	@set -euo pipefail; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cd "$$tmp" && npm pack --silent markdown-it@$(MARKDOWN_IT_VERSION) dompurify@$(DOMPURIFY_VERSION) >/dev/null && \
	mkdir md dp && tar xzf markdown-it-$(MARKDOWN_IT_VERSION).tgz -C md && tar xzf dompurify-$(DOMPURIFY_VERSION).tgz -C dp; \
	cd "$(CURDIR)" && rm -rf answers/static/vendor/markdown-it answers/static/vendor/dompurify && \
	mkdir -p answers/static/vendor/markdown-it answers/static/vendor/dompurify && \
	cp "$$tmp"/md/package/dist/markdown-it.min.js "$$tmp"/md/package/LICENSE answers/static/vendor/markdown-it/ && \
	cp "$$tmp"/dp/package/dist/purify.min.js "$$tmp"/dp/package/dist/purify.min.js.map \
	   "$$tmp"/dp/package/LICENSE "$$tmp"/dp/package/LICENSE-MPL answers/static/vendor/dompurify/ && \
	echo "answers/static/vendor: markdown-it $(MARKDOWN_IT_VERSION), DOMPurify $(DOMPURIFY_VERSION)"

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-wal db.sqlite3-shm staticfiles
