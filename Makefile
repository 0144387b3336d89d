# Two commands: `make run` serves the app, `make test` checks everything.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
PG_URL ?= postgres://postgres@127.0.0.1:5432/test
# The page's vendored JavaScript (answers/static/vendor/), refreshed by `make vendor-js` (needs npm; nothing
# else does). markdown-it must stay the version markdown-it-py ports (markdown_it/port.yaml), so
# the page and the server parse Markdown alike; tests/unit/test_rendering.py checks it.
# One patch makes it parse as markdown-it-py does with indented code off (markdown-it-py 3's
# is_code_block): a line indented 4 spaces or more is code only while the `code` rule is on, so
# such a line can still close a fence or open a heading, quote or list (markdown-it/markdown-it
# issue 936); without it the page showed as code what the server links (issue 30).
# A second makes its backtick rule find a code span's closing run as markdown-it-py 4.3 does: the
# last position of each run length is read from the whole text once, not recorded by whichever
# scan ran first (a scan from inside a link label's lookahead left it short, so a later "``x``"
# found no closer and showed as text what the server took for code).
MARKDOWN_IT_VERSION := 14.1.0
DOMPURIFY_VERSION := 3.5.0

.PHONY: run test docs screenshots lint typecheck migrations-check pytest-sqlite pytest-postgres bench bench-full clean vendor-js

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-run: requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@ $(VENV)/.installed-run

# Development server: SQLite by default, DEBUG on, the demo corpus loaded once (and its labeled
# questions as the evaluation set `demo`: docs/evaluation.md), a small per-piece delay so the
# streaming is visible.
run: export DEBUG ?= true
run: export ANSWERS_EXTRACTIVE_DELAY_MS ?= 15
run: $(VENV)/.installed-run
	$(PY) manage.py migrate --noinput
	$(PY) manage.py ingest --demo --if-empty
	$(PY) manage.py evaluation import demo bench/relevance_labeled.jsonl --if-missing
	$(PY) manage.py runserver 127.0.0.1:$(PORT) --noreload

test: $(VENV)/.installed-dev
	@./.ci/test-all

# The docs site (docs/, Sphinx + MyST) into docs/_build/html: every warning an error, every
# cross-reference checked; the reference's tables are generated from the code (docs/_ext/).
docs: $(VENV)/.installed-dev
	$(PY) -m sphinx -b html -E -n -W --keep-going -q docs docs/_build/html

# The docs' pictures (docs/_static/screenshots/), taken from the demo in Debian's Chromium.
screenshots: $(VENV)/.installed-dev
	$(PY) docs/screenshots.py --out docs/_static/screenshots

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
	sed -i -e 's/\([A-Za-z]\)\.sCount\[\([A-Za-z]\)\]-\1\.blkIndent>=4/\1.isCodeBlock(\2)/g' \
	  -e 's/\([A-Za-z_$$][A-Za-z0-9_$$]*\)\.prototype\.isEmpty=function/\1.prototype.isCodeBlock=function(t){return this.sCount[t]-this.blkIndent>=4\&\&this.md.block.ruler.__rules__.some(function(r){return"code"===r.name\&\&r.enabled})},\1.prototype.isEmpty=function/' \
	  -e 's/if(t\.backticksScanned&&(t\.backticks\[o\]||0)<=n)/if(t.backticksScanned||(t.backticks=function(s){const m={};let p=0,a;for(;-1!==(a=s.indexOf("`",p));){for(p=a+1;p<s.length\&\&96===s.charCodeAt(p);)p++;m[p-a]=a}return m}(t.src),t.backticksScanned=!0),(t.backticks[o]||0)<=n)/' \
	  -e 's/t\.backticks\[n\]=u}return t\.backticksScanned=!0,/}return t.backticksScanned=!0,/' \
	  answers/static/vendor/markdown-it/markdown-it.min.js && \
	cp "$$tmp"/dp/package/dist/purify.min.js "$$tmp"/dp/package/dist/purify.min.js.map \
	   "$$tmp"/dp/package/LICENSE "$$tmp"/dp/package/LICENSE-MPL answers/static/vendor/dompurify/ && \
	echo "answers/static/vendor: markdown-it $(MARKDOWN_IT_VERSION), DOMPurify $(DOMPURIFY_VERSION)"

clean:
	rm -rf $(VENV) db.sqlite3 db.sqlite3-wal db.sqlite3-shm staticfiles docs/_build
