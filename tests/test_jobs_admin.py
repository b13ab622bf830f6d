"""GET /api/jobs/<id> (staff or creator; 404 for others), admin uploads of one or
many files (eager Celery without Redis), the job progress bar, the map actions."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Permission, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from domains.models import Chunk, Document, Domain, MetadataEntry, Store
from ingestion.models import DoiRecord, IngestionJob
from ingestion.outcomes import FileOutcome
from ingestion.runs.jobs import record, record_pages, start_job


@pytest.fixture
def users(db):
    staff = User.objects.create_user("staff", password="pw-staff-123", is_staff=True, is_superuser=True)
    creator = User.objects.create_user("creator", password="pw-creator-123", is_staff=True)
    creator.user_permissions.add(*Permission.objects.filter(codename__in=["add_document", "view_ingestionjob"]))
    other = User.objects.create_user("other", password="pw-other-123")
    return staff, creator, other


@pytest.fixture
def store(db):
    domain = Domain.objects.create(name="uploads", description="Upload tests")
    return Store.objects.create(name="upload-store", domain=domain)


def test_job_api_for_staff_and_creator_only(client, users, store):
    staff, creator, other = users
    job = start_job("build", 3, {"directory": "/x"}, store=store, user=creator)
    record(job.pk, FileOutcome("a.md", "stored", chunks=2))
    record(job.pk, FileOutcome("b.pdf", "failed", error="b.pdf: encrypted (a password is needed to open it)"))
    client.force_login(creator)
    payload = client.get(f"/api/jobs/{job.pk}").json()
    assert {k: payload[k] for k in ("kind", "store", "status", "done", "total", "percent", "errors", "outcomes")} == {
        "kind": "build", "store": "upload-store", "status": "running", "done": 2, "total": 3, "percent": 66,
        "errors": {"b.pdf": "b.pdf: encrypted (a password is needed to open it)"},
        "outcomes": {"a.md": "stored", "b.pdf": "failed"},
    }
    client.force_login(staff)
    assert client.get(f"/api/jobs/{job.pk}").status_code == 200
    client.force_login(other)
    assert client.get(f"/api/jobs/{job.pk}").status_code == 404
    client.logout()
    assert client.get(f"/api/jobs/{job.pk}").status_code == 404
    client.force_login(staff)
    assert client.get("/api/jobs/999999").status_code == 404
    assert client.post(f"/api/jobs/{job.pk}").status_code == 405
    # a file being OCRed counts its pages into percent; the bar reaches 100 only at the end
    record_pages(job.pk, "c.pdf", 14, 30)
    payload = client.get(f"/api/jobs/{job.pk}").json()
    assert {k: payload[k] for k in ("done", "total", "percent", "pages", "messages")} == {
        "done": 2, "total": 3, "percent": 82, "pages": {"c.pdf": [14, 30]}, "messages": ["c.pdf: OCR page 14 of 30"]}
    record_pages(job.pk, "c.pdf", 30, 30)
    assert client.get(f"/api/jobs/{job.pk}").json()["percent"] == 99
    assert client.get(f"/api/jobs/{job.pk}").json()["finished_label"] == ""  # still running
    # a redelivered task records the same file again: done does not over-count
    record(job.pk, FileOutcome("a.md", "stored", chunks=2))
    finished = record(job.pk, FileOutcome("c.pdf", "stored", chunks=1), finish_when_done=True)
    # the file's OCR line goes with its outcome
    assert (finished.done, finished.status, finished.percent, finished.pages, finished.messages) == (
        3, "partial", 100, {}, ["1 failed, 2 stored"])


def test_admin_upload_of_several_files_builds_them(client, users, store, tmp_path):
    _, creator, _ = users
    client.force_login(creator)
    page = client.get("/admin/ingestion/ingestionjob/upload/")
    assert page.status_code == 200
    html = page.content.decode()  # the admin's own form rows and breadcrumbs
    for name in ("store", "files", "max_tokens", "ocr", "force"):
        assert f'<div class="form-row field-{name}">' in html, name
    assert '<div class="breadcrumbs">' in html and 'href="/admin/ingestion/ingestionjob/">Ingestion jobs</a>' in html
    assert '<h2 id="fieldset-0-1-heading" class="fieldset-heading">Options</h2>' in html
    files = [
        SimpleUploadedFile("notes.md", b"# Notes\n\nAction potentials travel along axons.\n"),
        SimpleUploadedFile("more.txt", b"Dendrites receive input."),
    ]
    # another upload of notes.md still being written: its own temporary file is left alone
    # (a shared ".notes.md.part" made one of two uploads at once fail and another store a mix)
    folder = tmp_path / "uploads" / "upload-store"
    folder.mkdir(parents=True)
    (folder / ".notes.md.x1y2z3.part").write_bytes(b"# Half of another upload")
    with override_settings(KLEA_UPLOAD_DIR=tmp_path / "uploads"):
        response = client.post("/admin/ingestion/ingestionjob/upload/", {
            "store": store.pk, "files": files, "max_tokens": 450, "ocr": "auto",
        })
    assert sorted(p.name for p in folder.iterdir()) == [".notes.md.x1y2z3.part", "more.txt", "notes.md"]
    assert (folder / ".notes.md.x1y2z3.part").read_bytes() == b"# Half of another upload"
    job = IngestionJob.objects.get(store=store)
    assert response.status_code == 302
    assert response["Location"] == f"/admin/ingestion/ingestionjob/{job.pk}/change/"
    assert (job.kind, job.status, job.done, job.total, job.created_by) == ("build", "succeeded", 2, 2, creator)
    assert sorted(Document.objects.filter(store=store).values_list("file_name", "status")) == [
        ("more.txt", "stored"), ("notes.md", "stored")
    ]
    assert (tmp_path / "uploads" / "upload-store" / "notes.md").read_bytes().startswith(b"# Notes")
    # the job page opens with its progress: every file's outcome, the final state
    job_page = client.get(response["Location"])
    assert [m.message for m in job_page.context["messages"]] == [
        f"Uploaded 2 file(s): job {job.pk} ingests them, progress below."]
    assert job_page.context["job_files"] == [("more.txt", "stored", "", ""), ("notes.md", "stored", "", "")]
    assert job_page.context["job_waiting"] == 0
    html = job_page.content.decode()
    # the job's arguments in words, not raw JSON ("async": true said nothing about Redis)
    rows = dict(re.findall(r'<div class="form-row field-(\w+)">.*?<div class="readonly">(.*?)</div>', html, re.S))
    assert [rows[name] for name in ("sources", "run_options", "run_by")] == [
        f"{folder}/notes.md<br>{folder}/more.txt", "chunks of at most 450 tokens, OCR auto",
        "the process that queued it (no REDIS_URL: tasks run in place)"]
    assert "arguments" not in rows and "celery_id" not in rows
    assert f'data-job-url="/api/jobs/{job.pk}" data-status="succeeded"' in html
    assert "2/2 (100%) succeeded" in html and "ingestion/job_progress.js" in html
    listing = client.get("/admin/ingestion/ingestionjob/").content.decode()
    assert f'data-job-url="/api/jobs/{job.pk}" data-status="succeeded" value="100" max="100"' in listing
    assert "Upload documents" in listing
    bad = client.post("/admin/ingestion/ingestionjob/upload/", {
        "store": store.pk, "files": [SimpleUploadedFile("x.exe", b"MZ")], "max_tokens": 450, "ocr": "auto",
    })
    bad_html = bad.content.decode()
    assert "unsupported file type: x.exe" in bad_html
    assert '<p class="errornote">Please correct the error below.</p>' in bad_html
    assert '<div class="form-row errors field-files">' in bad_html


def test_editing_map_entries_in_the_admin_reapplies_them(client, users, store, tmp_path):
    staff = users[0]
    client.force_login(staff)
    from ingestion.runs.ingest import ingest

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# A\n\nText one.\n\n## B\n\nText two.\n", encoding="utf-8")
    ingest(tmp_path / "d", "upload-store", "uploads", mirror=True)
    entry = MetadataEntry.objects.get(document__file_name="a.md", heading_key="A > B")
    response = client.post(f"/admin/domains/metadataentry/{entry.pk}/change/", {
        "document": entry.document_id, "heading_key": "A > B", "values": '{"year": 2024}',
    })
    assert response.status_code == 302
    assert list(Chunk.objects.filter(document__file_name="a.md").order_by("ordinal").values_list("year", flat=True)) == [
        None, 2024
    ]
    MetadataEntry.objects.filter(pk=entry.pk).update(values={"year": 1990})  # edited behind the admin's back
    document = Document.objects.get(file_name="a.md")
    response = client.post("/admin/domains/document/", {"action": "reapply_map", "_selected_action": [document.pk]})
    assert response.status_code == 302
    assert Chunk.objects.get(document=document, ordinal=1).year == 1990


def test_documents_have_one_admin_registration_from_the_domains_app():
    from django.contrib import admin

    from domains.admin import DocumentAdmin, MetadataEntryAdmin

    assert type(admin.site._registry[Document]) is DocumentAdmin
    assert type(admin.site._registry[MetadataEntry]) is MetadataEntryAdmin
    assert [a.__name__ for a in DocumentAdmin.actions] == ["reapply_map"]


def test_doi_cache_is_listed_and_searchable_read_only_in_the_admin(client, users):
    DoiRecord.objects.create(key="10.1145/365559.365617", doi="10.1145/365559.365617", service="crossref",
                             record={"title": "Solution of a Problem in Concurrent Programming Control"})
    DoiRecord.objects.create(key="10.1000/missing", doi="10.1000/MISSING", found=False)
    client.force_login(users[0])
    page = client.get("/admin/ingestion/doirecord/", {"q": "concurrent programming"})
    assert (page.status_code, page.context["cl"].result_count) == (200, 1)
    assert list(page.context["cl"].result_list.values_list("doi", flat=True)) == ["10.1145/365559.365617"]
    assert client.get("/admin/ingestion/doirecord/add/").status_code == 403


def test_the_job_list_filter_labels_the_states_alike(client, users):
    client.force_login(users[0])
    html = client.get("/admin/ingestion/ingestionjob/").content.decode()
    labels = re.findall(r'<a href="\?status__exact=\w+">([^<]+)</a>', html)
    assert labels == ["Pending", "Running", "Succeeded", "Succeeded with errors", "Failed"]


@pytest.mark.parametrize("names, message", [
    (["!.md"], "file name &#x27;!.md&#x27; keeps no name before its extension once unsafe characters are removed "
               "(&#x27;.md&#x27;); rename the file"),
    (["n" * 250 + ".md"], "file name nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn... is 253 bytes long; the limit is 200 bytes"),
    (["metadata-map.json"], "&#x27;metadata-map.json&#x27; is the name of the store folder&#x27;s own "
     "metadata map, not a document or a library; edit a document&#x27;s metadata in the admin (docs/ingestion.md, "
     "&quot;Where a file&#x27;s map comes from&quot;)"),
])
def test_upload_names_that_cannot_be_saved_as_sent_are_refused(client, users, store, tmp_path, names, message):
    """Names are checked as they are saved: a name over 255 bytes made a server error. With
    no other file, the form says why and nothing is saved."""
    client.force_login(users[1])
    files = [SimpleUploadedFile(name, b"# Notes\n\nAxons.\n") for name in names]
    with override_settings(KLEA_UPLOAD_DIR=tmp_path / "uploads"):
        response = client.post("/admin/ingestion/ingestionjob/upload/", {
            "store": store.pk, "files": files, "max_tokens": 450, "ocr": "auto",
        })
    assert response.status_code == 200
    assert re.findall(r'<ul class="errorlist"[^>]*><li>(.*?)</li>', response.content.decode()) == [message]
    assert (IngestionJob.objects.filter(store=store).count(), (tmp_path / "uploads").exists()) == (0, False)


def test_one_bad_file_never_stops_the_others_of_an_upload(client, users, store, tmp_path):
    """A trial uploaded 7 good files and setup.exe: the whole batch was refused and the
    browser emptied its file chooser. Now the good files are ingested and each refused one
    is named with its reason, in a message and as a ``refused`` row of the job."""
    client.force_login(users[1])
    files = [
        SimpleUploadedFile("notes.md", b"# Notes\n\nAction potentials travel along axons.\n"),
        SimpleUploadedFile("setup.exe", b"MZ"),
        SimpleUploadedFile("a b.md", b"# Spaced\n\nDendrites receive input.\n"),
        SimpleUploadedFile("a_b.md", b"# Underscored\n"),  # saved as the same a_b.md
        SimpleUploadedFile("notes.md", b"# Another notes.md\n"),
        SimpleUploadedFile("metadata-map.json", b"{}"),
        SimpleUploadedFile("refs.bib", b"@article{x, title = {unclosed"),
    ]
    with override_settings(KLEA_UPLOAD_DIR=tmp_path / "uploads"):
        response = client.post("/admin/ingestion/ingestionjob/upload/", {
            "store": store.pk, "files": files, "max_tokens": 450, "ocr": "auto",
        })
    job = IngestionJob.objects.get(store=store)
    assert (response.status_code, response["Location"]) == (302, f"/admin/ingestion/ingestionjob/{job.pk}/change/")
    assert sorted(p.name for p in (tmp_path / "uploads" / "upload-store").iterdir()) == ["a_b.md", "notes.md"]
    assert (tmp_path / "uploads" / "upload-store" / "notes.md").read_bytes().startswith(b"# Notes")
    assert sorted(Document.objects.filter(store=store).values_list("file_name", "status")) == [
        ("a_b.md", "stored"), ("notes.md", "stored")]
    assert (job.status, job.done, job.total) == ("partial", 7, 7)
    refused = {
        "setup.exe": "unsupported file type: setup.exe (supported: .bib, .docx, .htm, .html, .json, .markdown, "
                     ".md, .myst, .pdf, .rest, .rst, .text, .txt)",
        "a_b.md (2)": "two files would both be saved as 'a_b.md': 'a b.md' and 'a_b.md'",
        "notes.md (2)": "two files have the same name: 'notes.md' and 'notes.md'",
        "metadata-map.json": "'metadata-map.json' is the name of the store folder's own metadata map, not a "
                             "document or a library; edit a document's metadata in the admin (docs/ingestion.md, "
                             "\"Where a file's map comes from\")",
    }
    bib_error = job.errors["refs.bib"]
    assert bib_error.startswith("refs.bib: ") and "does not parse" in bib_error
    assert job.errors == {**refused, "refs.bib": bib_error}
    # the job counts one outcome per name: a refused file sent under a saved file's name
    # is numbered, never left waiting
    assert job.outcomes == {"a_b.md": "stored", "notes.md": "stored", **{name: "refused" for name in refused},
                            "refs.bib": "refused"}
    job_page = client.get(response["Location"])
    assert [(m.level_tag, m.message) for m in job_page.context["messages"]] == [
        ("success", f"Uploaded 2 file(s): job {job.pk} ingests them, progress below."),
        *[("warning", f"Not uploaded: {reason}") for reason in [
            refused["setup.exe"], refused["a_b.md (2)"], refused["notes.md (2)"], refused["metadata-map.json"], bib_error]],
    ]
    assert ("setup.exe", "refused", "", refused["setup.exe"]) in job_page.context["job_files"]
    assert '<td class="klea-outcome klea-outcome-refused">refused</td>' in job_page.content.decode()
    assert job.messages[-1] == "5 refused, 2 stored"


def test_the_document_page_edits_its_metadata_through_the_default_entry_only(client, users, store, tmp_path):
    """Document.metadata mirrors the DEFAULT map entry (re-applying rewrites it): shown
    read-only with a pointer to the entry, whose edit reaches the chunks and the mirror."""
    from domains.admin import METADATA_HELP
    from ingestion.runs.ingest import ingest

    client.force_login(users[0])
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("# A\n\nText one.\n", encoding="utf-8")
    ingest(tmp_path / "d", "upload-store", "uploads", mirror=True)
    document = Document.objects.get(file_name="a.md")
    default = MetadataEntry.objects.get(document=document, heading_key="DEFAULT")
    url = f"/admin/domains/document/{document.pk}/change/"
    html = client.get(url).content.decode()
    assert 'name="metadata"' not in html and METADATA_HELP in html
    response = client.post(url, {
        "store": store.pk, "file_name": "a.md", "status": "stored", "error": "", "pages": "",
        "metadata": '{"title": "ignored"}',
        "metadata_entries-TOTAL_FORMS": 1, "metadata_entries-INITIAL_FORMS": 1,
        "metadata_entries-MIN_NUM_FORMS": 0, "metadata_entries-MAX_NUM_FORMS": 1000,
        "metadata_entries-0-id": default.pk, "metadata_entries-0-document": document.pk,
        "metadata_entries-0-heading_key": "DEFAULT",
        "metadata_entries-0-values": '{"title": "A", "authors": ["E. W. Dijkstra"]}',
    })
    assert response.status_code == 302
    document.refresh_from_db()
    assert document.metadata == {"title": "A", "authors": ["E. W. Dijkstra"]}
    assert [c.metadata for c in Chunk.objects.filter(document=document)] == [
        {"title": "A", "authors": ["E. W. Dijkstra"]}]
    assert [m.message for m in client.get(url).context["messages"]] == [
        "Metadata map re-applied: 1 chunk(s) changed (no re-embedding).",
        f'The document “<a href="{url}">{document}</a>” was changed successfully.',
    ]


def test_the_job_page_prints_when_the_job_finished_in_the_admins_date_format(client, users, store):
    """One format on the job page: the live panel fills in the API's ``finished_label``,
    the words the server renders (it showed the browser's "12/6/2026, 11:52:54 PM" beside
    the admin's "Dec. 6, 2026, 11:52 p.m.")."""
    import datetime

    job = start_job("build", 1, {"directory": "/x"}, store=store, user=users[0])
    IngestionJob.objects.filter(pk=job.pk).update(
        status="succeeded", done=1, finished_at=datetime.datetime(2026, 12, 6, 23, 52, 54, tzinfo=datetime.UTC))
    client.force_login(users[0])
    assert client.get(f"/api/jobs/{job.pk}").json()["finished_label"] == "Dec. 6, 2026, 11:52 p.m."
    html = client.get(f"/admin/ingestion/ingestionjob/{job.pk}/change/").content.decode()
    assert '<span class="klea-job-finished">Finished Dec. 6, 2026, 11:52 p.m.</span>' in html


@pytest.mark.parametrize(("arguments", "heartbeat", "eager", "celery_id", "sources", "options", "run_by"), [
    ({"directory": "/data/papers", "max_tokens": 300, "ocr": "off", "bm25_only": False, "force": True, "library": ""},
     False, True, "", "the folder /data/papers", "chunks of at most 300 tokens, OCR off, unchanged files redone (force)",
     "the command or script that started it"),
    ({"paths": ["/u/a.pdf"], "max_tokens": 450, "ocr": "auto", "bm25_only": True, "force": False,
      "library": "/u/refs.bib", "async": True}, True, True, "", "/u/a.pdf",
     "chunks of at most 450 tokens, OCR auto, keyword search only (no embeddings), library /u/refs.bib",
     "a background thread of the web server (no REDIS_URL)"),
    ({"paths": [f"/u/{n}.md" for n in range(22)], "max_tokens": 450, "ocr": "auto", "async": True},
     False, False, "c0ffee", "<br>".join([f"/u/{n}.md" for n in range(20)] + ["and 2 more"]),
     "chunks of at most 450 tokens, OCR auto", "Celery workers (first task c0ffee)"),
    ({}, False, False, "", "-", "-", "the command or script that started it"),
])
def test_the_job_page_shows_its_arguments_in_words(store, arguments, heartbeat, eager, celery_id, sources, options,
                                                    run_by):
    from django.contrib.admin.sites import site
    from django.utils import timezone

    job = start_job("build", 1, arguments, store=store)
    job.heartbeat_at = timezone.now() if heartbeat else None
    job.celery_id = celery_id
    admin = site._registry[IngestionJob]
    with override_settings(CELERY_TASK_ALWAYS_EAGER=eager):
        assert (str(admin.sources(job)), admin.run_options(job), admin.run_by(job)) == (sources, options, run_by)
