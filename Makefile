# Two commands on a fresh machine:  make run   |   make test
# Both create .venv and install the pinned requirements first (once).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
HOST ?= 127.0.0.1
PORT ?= 8000
# Redis for the tests (Celery worker, channel layer); started here when absent.
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: install run test demo stop-db clean-db help

help:
	@echo "make run   - install, migrate, ingest docs/ as the demo domain, serve on http://$(HOST):$(PORT)"
	@echo "make test  - install, start what the tests need, run pytest"

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	# The CPU build of torch first, so that no requirement pulls a CUDA build.
	$(PIP) install --quiet torch==2.13.0
	$(PIP) install --quiet -r requirements.txt
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) manage.py migrate --noinput
	$(PY) manage.py demo

run: demo
	$(PY) manage.py collectstatic --noinput --verbosity 0
	@echo "Serving on http://$(HOST):$(PORT)/  (admin: /admin/, create a user with: $(PY) manage.py createsuperuser)"
	$(VENV)/bin/daphne -b $(HOST) -p $(PORT) klea_site.asgi:application

test: install
	@redis-cli -u $(TEST_REDIS_URL) ping >/dev/null 2>&1 || \
		redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
	KLEA_DOI_NETWORK=false TEST_REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest -c tests/pytest.ini --rootdir . $(PYTEST_ARGS)

stop-db:
	$(PY) manage.py embedded_db stop

clean-db: stop-db
	rm -rf var/pgdata
