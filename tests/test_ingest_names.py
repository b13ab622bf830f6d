"""File names that are not UTF-8: such a file fails alone, with its name shown with
U+FFFD; the others are ingested and the job closes (one such name in a folder failed the
whole run with a DataError and left its job running). Named alone, it is refused first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chat.rag import Knowledge
from domains.models import Document, Domain
from ingestion.models import IngestionJob
from ingestion.outcomes import IngestError
from ingestion.runs.ingest import ingest

pytestmark = pytest.mark.django_db

BAD = "bad\ufffd\ufffd.md"
ERROR = f"{BAD}: the file name is not valid UTF-8 (shown with U+FFFD); rename the file"


def folder(root: Path) -> Path:
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nSourdough needs flour, water and salt.\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(root), b"bad\xff\xfe.md"), "wb") as fh:
        fh.write(b"# Bad name\n\nThe name of this file is not UTF-8.\n")
    with open(os.path.join(os.fsencode(root), b"notes\xff.png"), "wb") as fh:  # not a source: not listed
        fh.write(b"\x89PNG")
    return root


def test_a_name_that_is_not_utf8_fails_alone_through_knowledge_add(tmp_path):
    report = Knowledge(store="names", create=True).add(folder(tmp_path / "docs"))
    assert [(o.file_name, o.status, o.reason, o.error) for o in report.outcomes] == [
        (BAD, "failed", "bad_name", ERROR), ("good.md", "stored", "", "")]
    job = IngestionJob.objects.get(pk=report.job_id)
    assert (job.status, job.total, job.done, job.outcomes, job.errors) == (
        "partial", 2, 2, {BAD: "failed", "good.md": "stored"}, {BAD: ERROR})
    # (documents of other stores committed by earlier test modules are not this test's)
    assert list(Document.objects.filter(store__name="names").values_list("file_name", flat=True)) == ["good.md"]


def test_a_name_that_is_not_utf8_fails_alone_in_a_folder_build(tmp_path):
    Domain.objects.create(name="names", description="File names.")
    report = ingest(folder(tmp_path / "docs"), "names-store", "names", mirror=True)
    assert sorted((o.file_name, o.status, o.error) for o in report.outcomes) == [
        (BAD, "failed", ERROR), ("good.md", "stored", "")]
    job = IngestionJob.objects.get(pk=report.job_id)
    assert (job.status, job.outcomes, job.errors) == ("partial", {BAD: "failed", "good.md": "stored"}, {BAD: ERROR})
    assert list(Document.objects.filter(store__name="names-store").values_list("file_name", flat=True)) == ["good.md"]


def test_a_path_named_that_is_not_utf8_is_refused_before_anything_is_written(tmp_path):
    # counted, not assumed empty: earlier test modules commit jobs and documents of their own
    jobs, documents = IngestionJob.objects.count(), Document.objects.count()
    root = folder(tmp_path / "docs")
    alone = os.fsdecode(os.path.join(os.fsencode(root), b"bad\xff\xfe.md"))
    with pytest.raises(IngestError) as info:
        Knowledge(store="names", create=True).add(alone)
    assert str(info.value) == f"path '{root}/{BAD}' is not valid UTF-8 (shown with U+FFFD); rename it"
    (root / "good.md").unlink()
    with pytest.raises(IngestError) as info:
        Knowledge(store="names", create=True).add(root)
    assert str(info.value).endswith(f"no files to ingest (supported: .docx, .htm, .html, .markdown, .md, .myst, "
                                    f".pdf, .rest, .rst, .text, .txt); 1 whose name is not valid UTF-8: {BAD}")
    assert (IngestionJob.objects.count(), Document.objects.count()) == (jobs, documents)
