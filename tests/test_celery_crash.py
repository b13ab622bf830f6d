"""A real Celery worker on Redis (DB 4), SIGKILLed in the middle of a document and
restarted: every document ends stored with exactly one copy of each chunk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings

from domains.embeddings import count_tokens
from domains.models import Chunk, Document, Domain
from ingestion.chunk.chunker import chunk_document
from ingestion.convert import convert_file
from ingestion.models import IngestionJob, StagedFile
from ingestion.runs.steps import enqueue

from .conftest import require_test_database
from .live_daphne import celery_on_redis, database_url, wait_for

REDIS_URL = os.environ.get("KLEA_TEST_CELERY_REDIS_URL", "redis://127.0.0.1:6379/4")
FILES = 8
WAIT_SECONDS = 240  # an upper bound for a loaded machine; the test polls conditions


def _start_worker(log: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(
        REDIS_URL=REDIS_URL,
        DATABASE_URL=database_url(),
        KLEA_CELERY_VISIBILITY_TIMEOUT="5",
        KLEA_EMBEDDING_CACHE_DIR=str(settings.KLEA_EMBEDDING_CACHE_DIR),
    )
    command = [sys.executable, "-m", "celery", "-A", "klea_site", "worker", "--pool=solo", "--concurrency=1",
               "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO"]
    # Its own session, so the kill reaches the conversion child process too.
    return subprocess.Popen(command, cwd=settings.BASE_DIR, env=env, stdout=log.open("ab"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def _kill(worker: subprocess.Popen) -> None:
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=30)


@pytest.fixture
def redis_broker():
    """Point this process's Celery app at Redis DB 4 (not eager), then restore it."""
    with celery_on_redis(REDIS_URL, broker_transport_options={"visibility_timeout": 5}) as client:
        yield client


def _documents(root: Path) -> Path:
    root.mkdir()
    sentence = "The membrane potential of neuron {i} rises when its sodium channels open, case {s}.{k}. "
    for n in range(FILES):
        sections = "\n\n".join(
            f"## Part {s}\n\n" + "".join(sentence.format(i=n, s=s, k=k) for k in range(40)) for s in range(12)
        )
        (root / f"doc{n}.md").write_text(f"# Document {n}\n\n{sections}\n", encoding="utf-8")
    return root


def _wait(condition, what: str):
    return wait_for(condition, what, WAIT_SECONDS, interval=0.05)


@pytest.fixture
def committed(django_db_setup, django_db_blocker):
    """Autocommit database access (the worker must see the rows), cleaned up after;
    not a transactional test, so the session's shared rows are not flushed."""
    with django_db_blocker.unblock():
        require_test_database()
        yield
        Domain.objects.filter(name="crash").delete()
        IngestionJob.objects.filter(kind="build", store__isnull=True).delete()


def test_worker_killed_mid_document_leaves_one_copy_of_every_chunk(tmp_path, redis_broker, committed):
    # given: a folder of documents queued as one task each on a real worker
    Domain.objects.create(name="crash", description="crash test")
    root = _documents(tmp_path / "docs")
    expected = {p.name: [d.text for d in chunk_document(convert_file(p), count_tokens)] for p in sorted(root.iterdir())}
    log = tmp_path / "worker.log"
    worker = _start_worker(log)
    try:
        job = enqueue("build", root, store_name="crash-store", domain_name="crash")
        assert (job.status, job.total, job.done) == ("running", FILES, 0)

        # when: a document is chunked (staged) but not yet stored, kill the worker
        def in_flight():
            outcomes = IngestionJob.objects.get(pk=job.pk).outcomes
            staged = set(StagedFile.objects.filter(directory=str(root)).values_list("file_name", flat=True))
            pending = staged - set(outcomes)
            return pending if outcomes and pending else None

        killed_during = _wait(in_flight, "a document in flight")
        _kill(worker)
        stored_at_kill = Document.objects.filter(store__name="crash-store", status="stored").count()
        assert stored_at_kill < FILES
        worker = _start_worker(log)

        # then: the redelivered task finishes the job and nothing is duplicated
        _wait(lambda: IngestionJob.objects.get(pk=job.pk).finished_at, "the job to finish")
    finally:
        _kill(worker)
    job.refresh_from_db()
    assert (job.status, job.done, job.total, job.errors) == ("succeeded", FILES, FILES, {})
    assert set(job.outcomes) == set(expected)
    for name, texts in expected.items():
        rows = list(Chunk.objects.filter(document__store__name="crash-store", document__file_name=name)
                    .order_by("ordinal").values_list("ordinal", "text"))
        assert [text for _, text in rows] == texts, name
        assert [ordinal for ordinal, _ in rows] == list(range(len(texts)))
    assert Chunk.objects.filter(store__name="crash-store").count() == sum(len(t) for t in expected.values())
    copies = Counter(Chunk.objects.filter(store__name="crash-store").values_list("document__file_name", "text"))
    assert max(copies.values()) == 1
    assert killed_during <= set(expected)
    assert "embedding models ready in" in log.read_text()  # each worker process loads its model as it starts
    StagedFile.objects.filter(directory=str(root)).delete()
    IngestionJob.objects.filter(pk=job.pk).delete()
    print(f"killed while {sorted(killed_during)} in flight; {stored_at_kill} of {FILES} stored at the kill")
