"""Web and worker share only PostgreSQL and Redis (docs/deployment.md): an admin upload
in this process (the web) is built by a real Celery worker started in a working folder
of its own, with its own KLEA_UPLOAD_DIR, after the web's copy of the upload is gone;
the web then answers from the chunks the worker stored and shows the source from its
own copy."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from chat.rag.knowledge import Knowledge
from domains.models import Document, Domain, Store
from domains.sources import SourceUnavailable, source_file
from ingestion.blobs import DatabaseStorage, materialise, publish
from ingestion.models import IngestionJob, StoredFile

from .conftest import require_test_database
from .live_daphne import celery_on_redis, database_url, wait_for

REDIS_URL = os.environ.get("KLEA_TEST_CELERY_REDIS_URL", "redis://127.0.0.1:6379/4")
WAIT_SECONDS = 300  # an upper bound for a loaded machine; the test polls conditions
NOTES = b"# Sodium channels\n\nVoltage-gated Nav1.6 channels open first at the axon initial segment.\n"
LIBRARY = b"@article{a, title={Axon initial segments}, author={Kole, Maarten}, year={2008}, file={notes.md}}\n"


@pytest.fixture
def redis_broker():
    """Point this process's Celery app at Redis (not eager), then restore it."""
    with celery_on_redis(REDIS_URL) as client:
        yield client


@pytest.fixture
def committed(django_db_setup, django_db_blocker):
    """Autocommit database access (the worker must see the rows), cleaned up after.
    pytest-django creates the test database only for sessions with a ``django_db``
    test (the storage test below): never write to another database."""
    with django_db_blocker.unblock():
        require_test_database()
        yield
        Domain.objects.filter(name="shared-nothing").delete()
        StoredFile.objects.filter(name__startswith="shared-store/").delete()
        User.objects.filter(username="shared-admin").delete()


def _start_worker(home: Path) -> subprocess.Popen:
    """A worker whose working folder, uploads and caches are under ``home`` only."""
    env = dict(os.environ)
    env.update(
        REDIS_URL=REDIS_URL,
        DATABASE_URL=database_url(),
        PYTHONPATH=str(settings.BASE_DIR),
        KLEA_UPLOAD_DIR=str(home / "uploads"),
        KLEA_PAGE_CACHE_DIR=str(home / "page-cache"),
        KLEA_EMBEDDING_CACHE_DIR=str(settings.KLEA_EMBEDDING_CACHE_DIR),  # model files: built per machine
    )
    command = [sys.executable, "-m", "celery", "-A", "klea_site", "worker", "--pool=solo", "--concurrency=1",
               "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel=INFO"]
    return subprocess.Popen(command, cwd=home, env=env, stdout=(home / "worker.log").open("ab"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def _wait(condition, what: str):
    return wait_for(condition, what, WAIT_SECONDS, interval=0.1)


def test_upload_on_the_web_is_built_by_a_worker_with_its_own_disk(client, tmp_path, redis_broker, committed):
    web, worker_home = tmp_path / "web", tmp_path / "worker"
    web.mkdir()
    worker_home.mkdir()
    domain = Domain.objects.create(name="shared-nothing", description="Shared-nothing test")
    store = Store.objects.create(name="shared-store", domain=domain, mode=Store.Mode.BM25)
    admin = User.objects.create_superuser("shared-admin", password="pw-shared-123")
    client.force_login(admin)

    # given: an upload on the web, queued on Redis, the web's copy then removed
    with override_settings(KLEA_UPLOAD_DIR=web / "uploads"):
        response = client.post("/admin/ingestion/ingestionjob/upload/", {
            "store": store.pk, "files": [SimpleUploadedFile("notes.md", NOTES)], "max_tokens": 450, "ocr": "auto",
        })
    assert response.status_code == 302
    job = IngestionJob.objects.get(store=store)
    assert (job.status, job.done, job.total) == ("running", 0, 1)
    assert bytes(StoredFile.objects.get(name="shared-store/notes.md").data) == NOTES
    shutil.rmtree(web)

    # when: a worker with its own folders runs the task
    worker = _start_worker(worker_home)
    try:
        _wait(lambda: IngestionJob.objects.get(pk=job.pk).finished_at, "the job to finish")
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=60)

    # then: the worker built its own copy, and the web answers from what it stored
    job.refresh_from_db()
    assert (job.status, job.done, job.errors) == ("succeeded", 1, {}), (worker_home / "worker.log").read_text()[-3000:]
    document = Document.objects.get(store=store)
    assert (document.file_name, document.status) == ("notes.md", "stored")
    assert document.source_path == str(worker_home / "uploads" / "shared-store" / "notes.md")
    assert (worker_home / "uploads" / "shared-store" / "notes.md").read_bytes() == NOTES
    # the web's source view (the worker's disk out of its reach) reads its own copy
    shutil.rmtree(worker_home / "uploads")
    with override_settings(KLEA_UPLOAD_DIR=web / "uploads"):
        assert source_file(document) == web / "uploads" / "shared-store" / "notes.md"
        assert source_file(document).read_bytes() == NOTES
    results = Knowledge("shared-store").search("Nav1.6 channel", top_k=3, strategy="hybrid")
    assert [(item.filename, item.text, item.source) for item in results] == [
        ("notes.md", "Voltage-gated Nav1.6 channels open first at the axon initial segment.", document.source_path)
    ]


@pytest.mark.django_db
def test_database_storage_replaces_lists_and_materialises(tmp_path):
    storage = DatabaseStorage()
    folder = tmp_path / "web" / "shared-store"
    folder.mkdir(parents=True)
    (folder / "notes.md").write_bytes(NOTES)
    (folder / "library.bib").write_bytes(LIBRARY)
    publish(folder, ["notes.md", "library.bib"])
    assert storage.listdir("shared-store") == ([], ["library.bib", "notes.md"])
    assert (storage.size("shared-store/notes.md"), storage.exists("shared-store/x.md")) == (len(NOTES), False)
    assert os.stat(folder / "notes.md").st_mtime == pytest.approx(
        storage.get_modified_time("shared-store/notes.md").timestamp(), abs=1e-3)

    with override_settings(KLEA_UPLOAD_DIR=tmp_path / "worker"):
        local = materialise("shared-store")
        assert local == tmp_path / "worker" / "shared-store"
        assert sorted(p.name for p in local.iterdir()) == ["library.bib", "notes.md"]
        assert (local / "library.bib").read_bytes() == LIBRARY
        # a replaced upload (same size, new bytes) reaches the copy; nothing else is rewritten
        edited = NOTES.replace(b"first", b"early")
        (folder / "notes.md").write_bytes(edited)
        publish(folder, ["notes.md"])
        assert StoredFile.objects.filter(name__startswith="shared-store/").count() == 2
        before = os.stat(local / "library.bib").st_mtime_ns
        materialise("shared-store")
        assert (local / "notes.md").read_bytes() == edited
        assert os.stat(local / "library.bib").st_mtime_ns == before
    with pytest.raises(FileNotFoundError, match="shared-store/gone.md: not in the database storage"):
        storage.open("shared-store/gone.md")


@pytest.mark.django_db
def test_source_view_serves_an_upload_copy_only_with_the_ingested_bytes(tmp_path):
    domain = Domain.objects.create(name="shared-nothing", description="d")
    store = Store.objects.create(name="shared-store", domain=domain, mode=Store.Mode.BM25)
    folder = tmp_path / "web" / "shared-store"
    folder.mkdir(parents=True)
    (folder / "notes.md").write_bytes(NOTES)
    publish(folder, ["notes.md"])
    gone = "/elsewhere/uploads/shared-store/notes.md"  # the worker's path, not on this machine
    right = Document.objects.create(store=store, file_name="notes.md", source_path=gone,
                                    content_hash=hashlib.sha256(NOTES).hexdigest())
    other = Document.objects.create(store=store, file_name="other.md", source_path=gone,
                                    content_hash=hashlib.sha256(b"other bytes").hexdigest())
    with override_settings(KLEA_UPLOAD_DIR=tmp_path / "here"):
        assert source_file(right).read_bytes() == NOTES
        with pytest.raises(SourceUnavailable) as info:
            source_file(other)
    assert (info.value.code, str(info.value)) == (
        "source_missing", "other.md: the source file is no longer where it was ingested")
