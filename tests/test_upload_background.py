"""Without Redis (Celery eager, the ``make run`` default) an admin upload over real HTTP
to a real daphne redirects to its job page at once: the build runs on the server's
background thread (ingestion/runs/background.py) and the job page follows it. The job is
held mid-document by a row lock this test takes on the document being replaced, so
"the redirect came while the job was running" is certain, not a matter of timing; a
server stopped while the document is held keeps its old chunks and closes the job, and
the job of a server killed there is closed once its lease runs out (ingestion/runs/lease.py).
A job held that way does not hold up another user's upload (a pool of threads)."""

from __future__ import annotations

import re

import psycopg
import pytest
import requests
from django.contrib.auth.models import User

from domains.models import Chunk, Document, Domain, Store
from ingestion.models import IngestionJob, StagedFile, StoredFile
from ingestion.runs.ingest import ingest

from .chat_world import session_cookie
from .conftest import require_test_database
from .live_daphne import LiveDaphne, database_url, wait_for

OLD = b"# Sodium channels\n\nNav1.2 channels were thought to open first.\n"
NEW = b"# Sodium channels\n\nVoltage-gated Nav1.6 channels open first at the axon initial segment.\n"
WAIT_SECONDS = 300  # an upper bound for a loaded machine; the test polls conditions


@pytest.fixture
def committed(django_db_setup, django_db_blocker, tmp_path):
    """Autocommit rows the server process sees, removed after (run with a django_db module)."""
    with django_db_blocker.unblock():
        require_test_database()
        yield
        Domain.objects.filter(name="background-uploads").delete()
        StoredFile.objects.filter(name__startswith="background-store").delete()
        StagedFile.objects.filter(directory__startswith=str(tmp_path)).delete()
        User.objects.filter(username="background-admin").delete()


def _given_a_stored_note(tmp_path):
    domain = Domain.objects.create(name="background-uploads", description="Background upload test")
    store = Store.objects.create(name="background-store", domain=domain, mode=Store.Mode.BM25)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "notes.md").write_bytes(OLD)
    ingest(tmp_path / "old" / "notes.md", store.name, domain.name)
    admin = User.objects.create_superuser("background-admin", password="pw-background-123")
    return store, Document.objects.get(store=store, file_name="notes.md"), admin


def _upload(server, admin, store, content=NEW):
    """POST notes.md (``content``) to the admin's upload form, as ``admin``: the response."""
    http = requests.Session()
    http.cookies.set("sessionid", session_cookie(admin))
    form = http.get(f"{server.url}/admin/ingestion/ingestionjob/upload/", timeout=60)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    return http, http.post(
        f"{server.url}/admin/ingestion/ingestionjob/upload/",
        data={"csrfmiddlewaretoken": token, "store": store.pk, "max_tokens": 450, "ocr": "auto", "force": "on"},
        files={"files": ("notes.md", content)}, headers={"Referer": server.url}, allow_redirects=False, timeout=60,
    )


def test_upload_without_redis_redirects_while_the_job_runs_then_succeeds(committed, tmp_path):
    store, document, admin = _given_a_stored_note(tmp_path)
    uploads = tmp_path / "uploads"

    with LiveDaphne(tmp_path / "daphne.log", KLEA_WARM_START="false", KLEA_UPLOAD_DIR=str(uploads)) as server:
        with psycopg.connect(database_url()) as holder:
            # given: the document the upload replaces is locked: the job cannot store it yet
            holder.execute("SELECT 1 FROM domains_document WHERE id = %s FOR UPDATE", [document.pk])
            # when: notes.md is uploaded again
            http, response = _upload(server, admin, store)
            # then: the redirect to the job page came while the job runs
            job = IngestionJob.objects.get(store=store, arguments__async=True)
            assert (response.status_code, response.headers["Location"]) == (
                302, f"/admin/ingestion/ingestionjob/{job.pk}/change/")
            assert (job.status, job.done, job.total, job.finished_at) == ("running", 0, 1, None)
            page = http.get(f"{server.url}{response.headers['Location']}", timeout=60)
            assert "0/1 (0%) running" in page.text and '<progress value="0" max="100"' in page.text
            holder.rollback()  # the job may store the document now
        wait_for(lambda: IngestionJob.objects.get(pk=job.pk).finished_at, "the job to finish", WAIT_SECONDS)

    job.refresh_from_db()
    assert (job.status, job.done, job.total, job.errors, job.outcomes) == (
        "succeeded", 1, 1, {}, {"notes.md": "stored"}), (tmp_path / "daphne.log").read_text()[-3000:]
    assert list(Chunk.objects.filter(document__store=store).values_list("document_id", "text")) == [
        (document.pk, "Voltage-gated Nav1.6 channels open first at the axon initial segment.")]
    assert (uploads / "background-store" / "notes.md").read_bytes() == NEW


def test_a_server_stopped_mid_document_keeps_the_old_chunks_and_closes_the_job(committed, tmp_path):
    store, document, admin = _given_a_stored_note(tmp_path)
    log = tmp_path / "daphne.log"
    with psycopg.connect(database_url()) as holder:
        # given: an upload whose job waits for the locked document
        holder.execute("SELECT 1 FROM domains_document WHERE id = %s FOR UPDATE", [document.pk])
        with LiveDaphne(log, KLEA_WARM_START="false", KLEA_UPLOAD_DIR=str(tmp_path / "uploads")) as server:
            _, response = _upload(server, admin, store)
            assert response.status_code == 302
            wait_for(lambda: StagedFile.objects.filter(file_name="notes.md", directory__endswith="background-store",
                                                       status="chunked").exists(), "the upload to be chunked", WAIT_SECONDS)
        # when: the server was stopped (SIGTERM) while the job held the document's transaction
        holder.rollback()

    # then: the old chunks are intact and the job closed, naming the file
    job = IngestionJob.objects.get(store=store, arguments__async=True)
    assert (job.status, job.done, job.total, job.outcomes, job.errors) == (
        "failed", 1, 1, {"notes.md": "failed"},
        {"notes.md": "notes.md: the server stopped before it was ingested; upload it again"}), log.read_text()[-3000:]
    assert list(Chunk.objects.filter(document__store=store).values_list("document_id", "text")) == [
        (document.pk, "Nav1.2 channels were thought to open first.")]


def test_a_killed_server_s_job_is_closed_when_its_lease_runs_out_and_a_new_upload_stores_once(committed, tmp_path):
    store, document, admin = _given_a_stored_note(tmp_path)
    log = tmp_path / "daphne.log"
    env = {"KLEA_WARM_START": "false", "KLEA_UPLOAD_DIR": str(tmp_path / "uploads"), "KLEA_JOB_LEASE_SECONDS": "2"}
    with psycopg.connect(database_url()) as holder:
        # given: an upload whose job waits for the locked document
        holder.execute("SELECT 1 FROM domains_document WHERE id = %s FOR UPDATE", [document.pk])
        with LiveDaphne(log, **env) as server:
            _, response = _upload(server, admin, store)
            assert response.status_code == 302
            wait_for(lambda: StagedFile.objects.filter(file_name="notes.md", directory__endswith="background-store",
                                                       status="chunked").exists(), "the upload to be chunked", WAIT_SECONDS)
            # when: the server is killed (no exit handler runs) while the job holds the document
            server.process.kill()
            server.process.wait(timeout=60)
        holder.rollback()
    job = IngestionJob.objects.get(store=store, arguments__async=True)
    assert (job.status, job.finished_at) == ("running", None)

    with LiveDaphne(tmp_path / "daphne2.log", **env) as server:
        # then: once its lease has run out, reading the job closes it, naming the file
        http = requests.Session()
        http.cookies.set("sessionid", session_cookie(admin))
        url = f"{server.url}/api/jobs/{job.pk}"
        wait_for(lambda: http.get(url, timeout=60).json()["finished_at"], "the lease to run out", WAIT_SECONDS)
        payload = http.get(url, timeout=60).json()
        assert (payload["status"], payload["done"], payload["total"], payload["outcomes"], payload["errors"]) == (
            "failed", 1, 1, {"notes.md": "failed"},
            {"notes.md": "notes.md: the process ingesting it stopped (killed or crashed: no sign of life for over 2 s); "
                         "upload it again"})
        assert list(Chunk.objects.filter(document__store=store).values_list("document_id", "text")) == [
            (document.pk, "Nav1.2 channels were thought to open first.")]
        # and: uploading it again stores it once
        _, response = _upload(server, admin, store)
        again = IngestionJob.objects.filter(store=store, arguments__async=True).exclude(pk=job.pk).get()
        wait_for(lambda: IngestionJob.objects.get(pk=again.pk).finished_at, "the new upload to finish", WAIT_SECONDS)
    again.refresh_from_db()
    assert (again.status, again.outcomes) == ("succeeded", {"notes.md": "stored"}), log.read_text()[-3000:]
    assert list(Chunk.objects.filter(document__store=store).values_list("document_id", "text")) == [
        (document.pk, "Voltage-gated Nav1.6 channels open first at the axon initial segment.")]


def test_an_upload_held_mid_document_does_not_hold_up_another_store_s_upload(committed, tmp_path):
    store, document, admin = _given_a_stored_note(tmp_path)
    other = Store.objects.create(name="background-store-2", domain=store.domain, mode=Store.Mode.BM25)
    with LiveDaphne(tmp_path / "daphne.log", KLEA_WARM_START="false", KLEA_UPLOAD_DIR=str(tmp_path / "uploads"),
                    KLEA_INGEST_THREADS="2") as server:
        with psycopg.connect(database_url()) as holder:
            # given: an upload whose job cannot store its document (held as long as the test wants)
            holder.execute("SELECT 1 FROM domains_document WHERE id = %s FOR UPDATE", [document.pk])
            _upload(server, admin, store)
            held = IngestionJob.objects.get(store=store, arguments__async=True)
            # when: another upload comes, to another store
            _upload(server, admin, other, content=OLD)
            # then: it is stored while the first still waits
            second = IngestionJob.objects.get(store=other, arguments__async=True)
            wait_for(lambda: IngestionJob.objects.get(pk=second.pk).finished_at, "the second upload", WAIT_SECONDS)
            second.refresh_from_db()
            assert (second.status, second.outcomes) == ("succeeded", {"notes.md": "stored"})
            assert list(Chunk.objects.filter(document__store=other).values_list("text", flat=True)) == [
                "Nav1.2 channels were thought to open first."]
            assert IngestionJob.objects.get(pk=held.pk).finished_at is None
            holder.rollback()
        wait_for(lambda: IngestionJob.objects.get(pk=held.pk).finished_at, "the first upload", WAIT_SECONDS)
    held.refresh_from_db()
    assert (held.status, held.outcomes) == ("succeeded", {"notes.md": "stored"})
