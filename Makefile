# Two commands on a fresh machine:  make run   |   make test
# Both create .venv and install the pinned requirements first (once).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
HOST ?= 127.0.0.1
PORT ?= 8000
# Celery worker processes `make run` starts when REDIS_URL is set.
CELERY_CONCURRENCY ?= 2
# Redis for the tests (Celery worker, channel layer); started here when absent.
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

# daphne's own websocket message cap (bytes). It must stay above KLEA_WS_MAX_FRAME_BYTES
# (64 KiB by default) so that a larger frame gets the chat's `too_large` error on an open
# socket; only frames above this cap make daphne drop the connection.
WS_PROTOCOL_MAX ?= 8388608
DAPHNE_ARGS := --websocket-max-message-size $(WS_PROTOCOL_MAX) --websocket-max-frame-size $(WS_PROTOCOL_MAX)
# The browser tests drive Debian's Chromium (installed here when missing; never downloaded by Playwright).
CHROMIUM := /usr/bin/chromium
# OCR of scanned PDFs on the model-free path (docs/ingestion.md, "OCR"): Debian's Tesseract
# with its English model, installed here when missing.
TESSERACT := /usr/bin/tesseract
TESSDATA_ENG := /usr/share/tesseract-ocr/5/tessdata/eng.traineddata

.PHONY: install run test demo models stop-db clean-db help chromium tesseract apt-packages

help:
	@echo "make run   - install, migrate, ingest docs/ as the demo domain, serve on http://$(HOST):$(PORT)"
	@echo "make test  - install, start what the tests need, run pytest"

# Not --quiet: pip's own progress (the first install downloads about 1.5 GB).
$(VENV)/.installed: requirements.txt
	@echo "Installing the pinned requirements into $(VENV) (once): about 1.5 GB, minutes on an idle machine, more on a busy one"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# The CPU build of torch first, so that no requirement pulls a CUDA build.
	@echo "Installing torch: once downloaded, pip prints nothing for several minutes while it unpacks it; that is normal."
	$(PIP) install torch==2.13.0
	$(PIP) install -r requirements.txt
	touch $@

install: $(VENV)/.installed

# The int8 embedding model, built once into KLEA_EMBEDDING_CACHE_DIR (a few minutes the
# first time), so that no server, worker or test waits for the build.
models: install
	$(PY) manage.py prepare_models

demo: install models
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo

# With REDIS_URL set, a Celery worker runs beside daphne (stopped when daphne exits), with
# CELERY_CONCURRENCY processes: each holds its own embedding model and conversion process,
# and two let a small file go beside a long scan (docs/deployment.md, the ingestion queue).
# `manage.py prepare` = models + migrate + demo + collectstatic in one process (each
# manage.py start imports the whole site; each step is a no-op when up to date).
# Tesseract is needed only for scanned pages: when it cannot be installed (no network, no
# sudo), the server still runs and a scanned page's error says how to install it later.
run: install
	@$(MAKE) --no-print-directory tesseract || \
		echo "Tesseract is not installed: scanned PDF pages will fail until \`make tesseract\` succeeds (docs/ingestion.md, OCR)"
	$(PY) manage.py prepare
	@echo "Serving on http://$(HOST):$(PORT)/  (admin: /admin/, create a user with: $(PY) manage.py createsuperuser)"
	@echo "The embedding models load as the server starts: GET /health says \"ready\": true once they are in memory."
	@worker=""; \
	if [ -n "$$REDIS_URL" ]; then \
		[ "$$(id -u)" != 0 ] || echo "Running as root: Celery's SecurityWarning below is right; on a shared server run the worker as an unprivileged user (docs/security.md)"; \
		$(VENV)/bin/celery -A klea_site worker --concurrency $(CELERY_CONCURRENCY) --loglevel=INFO & worker=$$!; \
		echo "Celery worker started (pid $$worker, $(CELERY_CONCURRENCY) processes)"; \
	fi; \
	trap 'if [ -n "$$worker" ]; then kill $$worker 2>/dev/null; fi' EXIT INT TERM; \
	$(VENV)/bin/daphne -b $(HOST) -p $(PORT) $(DAPHNE_ARGS) klea_site.asgi:application

# Debian packages: only the missing ones are installed, and apt-get waits up to
# APT_LOCK_TIMEOUT seconds for another apt-get/dpkg holding the lock instead of failing
# at once. The package index is refreshed only when the first attempt fails.
APT_LOCK_TIMEOUT ?= 600
define apt_install
	@missing=""; for p in $(1); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	[ -z "$$missing" ] || { \
		sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		apt="$$sudo apt-get -o DPkg::Lock::Timeout=$(APT_LOCK_TIMEOUT)"; \
		echo "Installing Debian packages:$$missing (waits up to $(APT_LOCK_TIMEOUT) s for the apt lock)"; \
		$$apt install -y --no-install-recommends $$missing || \
		{ $$apt update && $$apt install -y --no-install-recommends $$missing; }; \
	}
endef

chromium:
	@[ -x $(CHROMIUM) ] || { $(MAKE) --no-print-directory apt-packages PACKAGES="chromium"; }

tesseract:
	@[ -x $(TESSERACT) ] && [ -f $(TESSDATA_ENG) ] || \
		{ $(MAKE) --no-print-directory apt-packages PACKAGES="tesseract-ocr tesseract-ocr-eng"; }

# Internal: install the Debian packages in PACKAGES that are not installed yet.
apt-packages:
	$(call apt_install,$(PACKAGES))

test: install chromium tesseract models
	@redis-cli -u $(TEST_REDIS_URL) ping >/dev/null 2>&1 || \
		redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
	# REDIS_URL of the shell (a worker setup) is not the tests': they start Celery and Channels on TEST_REDIS_URL themselves.
	KLEA_DOI_NETWORK=false TEST_REDIS_URL=$(TEST_REDIS_URL) env -u REDIS_URL $(PY) -m pytest -c tests/pytest.ini --rootdir . $(PYTEST_ARGS)

stop-db:
	$(PY) manage.py embedded_db stop

clean-db: stop-db
	rm -rf var/pgdata
