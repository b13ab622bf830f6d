"""Symbolic links in an ingested folder: a link leading outside the folder is skipped
with its reason, never read; a link to a file inside the folder is ingested."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from domains.models import Chunk, Document, Domain
from ingestion.convert.precheck import precheck_directory
from ingestion.runs.ingest import ingest

from . import pdf_factory

SECRET = "root:x:0:0:the secret line that must never be stored"


@pytest.fixture
def domain(db):
    return Domain.objects.create(name="links", description="Symbolic link tests")


@pytest.fixture
def folder(tmp_path):
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "passwd.md").write_text(SECRET + "\n", encoding="utf-8")
    (outside / "sub" / "notes.md").write_text(SECRET + " in a folder\n", encoding="utf-8")
    root = tmp_path / "in"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "good.md").write_text("# Good\n\nA healthy file about dendrites.\n", encoding="utf-8")
    (root / "passwd.md").symlink_to(outside / "passwd.md")
    (root / "elsewhere").symlink_to(outside / "sub", target_is_directory=True)
    (root / "docs" / "up.md").symlink_to("../../outside/passwd.md")  # relative, still outside
    (root / "alias.md").symlink_to(root / "docs" / "good.md")  # inside: stays
    return root


def _outcomes(report):
    return sorted((o.file_name, o.status, o.reason, o.error) for o in report.outcomes)


EXPECTED = [
    ("alias.md", "stored", "", ""),
    ("docs/good.md", "stored", "", ""),
    ("docs/up.md", "skipped", "outside_folder",
     "docs/up.md: symbolic link to a path outside the folder; not followed"),
    ("elsewhere", "skipped", "outside_folder",
     "elsewhere: symbolic link to a path outside the folder; not followed"),
    ("passwd.md", "skipped", "outside_folder",
     "passwd.md: symbolic link to a path outside the folder; not followed"),
]


def test_folder_build_skips_links_out_of_the_folder(domain, folder):
    report = ingest(folder, "links-store", "links", mirror=True, ocr="off")
    assert _outcomes(report) == EXPECTED
    assert sorted(Document.objects.filter(store__name="links-store").values_list("file_name", flat=True)) == [
        "alias.md", "docs/good.md"]
    assert not Chunk.objects.filter(text__contains="secret line").exists()


def test_knowledge_add_of_a_folder_skips_links_out_of_it(domain, folder):
    report = ingest([folder], "links-add", "links", ocr="off")
    assert _outcomes(report) == EXPECTED
    assert not Chunk.objects.filter(text__contains="secret line").exists()


def test_the_command_summary_names_each_skipped_link(domain, folder):
    out = StringIO()
    call_command("stores", "build", str(folder), "--collection", "links-cmd", "--domain", "links",
                 "--no-progress", stdout=out, stderr=StringIO())
    lines = out.getvalue().splitlines()
    assert lines[1:4] == ["  stored                 2", "  unchanged              0", "  skipped                3"]
    assert [line for line in lines if "symbolic link" in line] == [
        "  skipped: docs/up.md: symbolic link to a path outside the folder; not followed",
        "  skipped: elsewhere: symbolic link to a path outside the folder; not followed",
        "  skipped: passwd.md: symbolic link to a path outside the folder; not followed",
    ]


def test_precheck_does_not_read_a_pdf_linked_from_outside(tmp_path):
    pdf_factory.scanned(tmp_path / "scan.pdf")
    root = tmp_path / "in"
    root.mkdir()
    (root / "scan.pdf").symlink_to(tmp_path / "scan.pdf")
    assert precheck_directory(root) == []
