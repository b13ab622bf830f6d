"""Shared fixtures. Everything runs against the real embedded PostgreSQL + pgvector
(or DATABASE_URL), real Redis (TEST_REDIS_URL) and the real embedding model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings

# This process imports klea_site.asgi (websocket tests) but serves nothing: no warm-up
# thread here (its log lines would land in other tests' caplog). The daphne and Celery
# processes that tests start warm up as in production.
settings.KLEA_WARM_START = False
# A strong key (chat.W001 would warn in every daphne the tests start with a weak one); the
# daphne processes get the same key (tests/live_daphne.py), so our session cookies work.
settings.SECRET_KEY = "klea-test-suite-secret-key-0123456789-not-the-development-one"

DOC_DOMAINS = {
    "domains": {
        "neuroml": {
            "description": (
                "NeuroML: a standard XML-based language and software ecosystem (pyNeuroML, "
                "jNeuroML, LEMS) for describing and simulating computational models of neurons, "
                "ion channels, synapses and networks in computational neuroscience."
            ),
            "vector_stores": [{"name": "neuroml-docs"}],
            "bm25_stores": [{"name": "neuroml-docs"}],
        },
        "xarray": {
            "description": (
                "xarray: a Python library for labelled N-dimensional arrays and datasets "
                "(DataArray, Dataset): indexing, groupby, resampling, netCDF/Zarr IO, dask."
            ),
            "vector_stores": [{"name": "xarray-docs"}],
            "bm25_stores": [{"name": "xarray-docs"}],
        },
    }
}


def corpora_path(*parts: str) -> Path:
    """A path inside the shared corpora, resolved as the product resolves the folders it
    reads (the corpora may be reached through a symbolic link); fails (never skips) when
    it is missing."""
    path = Path(settings.KLEA_CORPORA_DIR, *parts).resolve()
    if not path.exists():
        pytest.fail(f"shared corpora not found at {path}; set KLEA_CORPORA_DIR", pytrace=False)
    return path


def require_test_database() -> None:
    """Fail, never write elsewhere, when this session has no test database.

    pytest-django creates it only when a collected test is marked ``django_db``; fixtures
    that commit rows for other processes (workers, live servers) are not, so a module of
    such tests run alone would reach the development database."""
    from django.db import connection

    if connection.settings_dict["NAME"] != settings.DATABASES["default"]["TEST"]["NAME"]:
        pytest.fail("no test database in this session: run the module with a django_db test "
                    "(e.g. the whole suite)", pytrace=False)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database, with autovacuum off on its tables. Tests write inside
    transactions they never commit: an automatic ANALYZE in the middle of one counted no
    live row and recorded the BM25 postings as empty, and the plan the delete trigger then
    chose (a sequential scan of the postings for each deleted lexeme) took minutes where it
    takes a second (tests/test_bm25_topk.py). Never analysed, the planner estimates a
    table's rows from its size."""
    from django.db import connection

    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute("SELECT c.oid::regclass::text FROM pg_class c WHERE c.relkind = 'r' "
                       "AND c.relnamespace = 'public'::regnamespace")
        for (table,) in cursor.fetchall():
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")


@pytest.fixture(scope="session")
def doc_domains(django_db_setup, django_db_blocker):
    """The NeuroML and xarray documentation ingested as two domains, once per session.

    The rows are committed to the test database; tests that use them must not delete them.
    """
    from domains.config_io import load_domain_config
    from ingestion.runs.ingest import ingest

    with django_db_blocker.unblock():
        load_domain_config(json.loads(json.dumps(DOC_DOMAINS)))
        reports = {
            "neuroml": ingest(corpora_path("docs", "neuroml"), "neuroml-docs", "neuroml", mirror=True),
            "xarray": ingest(corpora_path("docs", "xarray"), "xarray-docs", "xarray", mirror=True),
        }
    return reports


@pytest.fixture(autouse=True)
def _no_doi_network(settings):
    """No test reaches the real Crossref/OpenAlex/Semantic Scholar: tests that exercise
    the DOI tier point it at local fake servers and switch the network on themselves."""
    settings.KLEA_DOI_NETWORK = False
