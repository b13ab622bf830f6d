"""``manage.py stores ...``: output, summary tables, exit codes, --async, map files."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from domains.models import Chunk, Document, Domain
from ingestion.models import IngestionJob

from . import pdf_factory


def run(*args) -> list[str]:
    out = StringIO()
    call_command("stores", *args, stdout=out, stderr=StringIO())
    return out.getvalue().splitlines()


@pytest.fixture
def domain(db):
    return Domain.objects.create(name="cli", description="CLI tests")


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nFirst file.\n", encoding="utf-8")
    (root / "b.rst").write_text("Beta\n====\n\nSecond file.\n", encoding="utf-8")
    return root


def test_chunk_then_map_lint_then_store_then_store_lint(domain, folder):
    lines = run("chunk", str(folder), "--no-progress")
    assert lines[0].startswith(f"chunk {folder} (job ")
    assert lines[1:7] == [
        "  chunked                2", "  unchanged              0", "  skipped                0",
        "  failed                 0", "  pruned                 0", "  chunks                 2",
    ]
    assert f"metadata map template: {folder / 'metadata-map.template.json'}" in lines
    template = json.loads((folder / "metadata-map.template.json").read_text(encoding="utf-8"))
    assert template == {"a.md": {"DEFAULT": {"title": "Alpha"}, "Alpha": {}}, "b.rst": {"DEFAULT": {"title": "Beta"}, "Beta": {}}}
    assert f"map-lint {folder}" in lines
    assert not Document.objects.filter(source_path__startswith=str(folder)).exists()

    lint = run("map-lint", str(folder))
    assert lint[1] == "  2 source files, 2 with a map"

    stored = run("store", str(folder), "--collection", "cli-store", "--domain", "cli", "--no-progress")
    assert stored[0].startswith("store cli-store (job ")
    assert stored[1:3] == ["  stored                 2", "  unchanged              0"]
    assert "store-lint cli-store (domain cli, mode both)" in stored
    assert "  chunks 2, files 2, characters 23" in stored

    lint = run("store-lint", "cli-store", "--samples", "1")
    assert lint[-4:] == ["samples:", "  window 1:", "    a.md #0 [Alpha] First file.", "    b.rst #0 [Beta] Second file."]


def test_failures_exit_nonzero_after_the_summary(domain, folder):
    (folder / "broken.md").write_bytes(b"\x00\x01")
    with pytest.raises(CommandError, match=r"^1 file\(s\) failed; the others were chunked$"):
        run("chunk", str(folder), "--no-progress")
    with pytest.raises(CommandError, match="^a source file has no metadata map entry"):
        run("map-lint", str(folder))
    with pytest.raises(CommandError, match=r"^1 file\(s\) failed; the others were stored$"):
        run("store", str(folder), "--collection", "cli-store", "--domain", "cli", "--no-progress")
    assert Document.objects.get(file_name="broken.md").status == "failed"
    with pytest.raises(CommandError, match="^max_tokens must be at least 32, got 10$"):
        run("chunk", str(folder), "--max-tokens", "10")
    with pytest.raises(CommandError, match="^domain 'nope' does not exist"):
        run("build", str(folder), "--collection", "x", "--domain", "nope")
    with pytest.raises(CommandError, match="no such directory$"):
        run("chunk", str(folder / "missing"))


def test_build_async_runs_eagerly_without_redis(domain, folder):
    lines = run("build", str(folder), "--collection", "cli-store", "--domain", "cli", "--async")
    job = IngestionJob.objects.get(store__name="cli-store")
    assert lines == [
        f"queued 2 file(s) as job {job.pk} (build); status: succeeded, 2/2 done. "
        f"Follow it at /api/jobs/{job.pk} or in the admin (Ingestion jobs)."
    ]
    assert (job.outcomes, job.errors, job.arguments["async"]) == ({"a.md": "stored", "b.rst": "stored"}, {}, True)
    assert Chunk.objects.filter(store__name="cli-store").count() == 2
    (folder / "b.rst").unlink()
    run("build", str(folder), "--collection", "cli-store", "--domain", "cli", "--async")
    again = IngestionJob.objects.filter(store__name="cli-store").order_by("-pk").first()
    assert (again.messages, again.outcomes) == (["1 pruned: b.rst", "1 unchanged"], {"a.md": "unchanged"})
    assert list(Document.objects.filter(store__name="cli-store").values_list("file_name", flat=True)) == ["a.md"]


def test_map_export_and_import_through_the_command(domain, folder, tmp_path):
    run("build", str(folder), "--collection", "cli-store", "--domain", "cli", "--no-progress")
    target = tmp_path / "map.json"
    assert run("map-export", "--collection", "cli-store", "-o", str(target)) == [f"wrote 2 file(s) to {target}"]
    data = json.loads(target.read_text(encoding="utf-8"))
    data["a.md"]["DEFAULT"]["year"] = 2020
    target.write_text(json.dumps(data), encoding="utf-8")
    assert run("map-import", str(target), "--collection", "cli-store") == [
        f"imported {target}: 1 file(s) changed, 1 chunk(s) re-applied"
    ]
    assert Chunk.objects.get(document__file_name="a.md").year == 2020


def test_pre_check_organise_copies_into_ocr_and_no_ocr(tmp_path):
    root = tmp_path / "pdfs"
    root.mkdir()
    pdf_factory.paper(root / "paper.pdf")
    pdf_factory.scanned(root / "scan.pdf")
    lines = run("pre-check", str(root), "--organise")
    assert lines[1:4] == [
        "no-OCR      2     0      429  paper.pdf",
        "OCR         2     2        0  scan.pdf",
        "2 PDFs: 1 need OCR, 1 do not",
    ]
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.pdf")) == [
        "no-ocr/paper.pdf", "ocr/scan.pdf", "paper.pdf", "scan.pdf"
    ]
    assert run("pre-check", str(root))[-1] == "2 PDFs: 1 need OCR, 1 do not"  # organised copies are not re-read


EMPTY = "Error: argument {arg}: empty path; name it explicitly ('.' for the current directory)"


@pytest.mark.parametrize(
    "args, arg",
    [
        (["pre-check", ""], "DIR"),
        (["chunk", " "], "DIR"),
        (["map-lint", ""], "DIR"),
        (["store", "", "--collection", "c", "--domain", "cli"], "DIR"),
        (["build", "", "--collection", "c", "--domain", "cli"], "DIR"),
        (["map-export", "--dir", ""], "--dir"),
        (["map-import", "--dir", "", "map.json"], "--dir"),
        (["map-import", "--collection", "c", ""], "FILE"),
        (["map-export", "--collection", "c", "-o", ""], "-o/--output"),
    ],
)
def test_an_empty_path_is_refused_not_taken_for_the_current_directory(domain, monkeypatch, tmp_path, args, arg):
    (tmp_path / "notes.md").write_text("# Notes\n\nWould be ingested from the cwd.\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    before = (Document.objects.count(), IngestionJob.objects.count())  # committed corpora may be present
    with pytest.raises(CommandError) as info:
        run(*args)
    assert str(info.value) == EMPTY.format(arg=arg)
    assert (Document.objects.count(), IngestionJob.objects.count()) == before


STORE_RULE = "letters, digits, '_', '.', '-', starting with a letter or digit, at most 100 characters"


@pytest.mark.parametrize(
    "step, collection, domain_name, message",
    [
        ("build", "", "cli", f"invalid store name '': {STORE_RULE}"),
        ("build", "docs\n", "cli", f"invalid store name 'docs\\n': {STORE_RULE}"),
        ("store", "my docs", "cli", f"invalid store name 'my docs': {STORE_RULE}"),
        ("build", "docs", "cli\nx", "invalid domain name 'cli\\nx': not empty, no leading or trailing spaces, "
                                    "no control characters (newlines, tabs), at most 100 characters"),
    ],
)
def test_bad_store_and_domain_names_are_one_line_errors(domain, folder, step, collection, domain_name, message):
    jobs = IngestionJob.objects.count()  # other modules may leave committed jobs behind
    with pytest.raises(CommandError) as info:
        run(step, str(folder), "--collection", collection, "--domain", domain_name)
    assert str(info.value) == message
    assert IngestionJob.objects.count() == jobs


def test_pre_check_of_a_folder_without_pdfs_is_a_note_not_an_error(folder):
    (folder / "slides.key").write_bytes(b"keynote")
    assert run("pre-check", str(folder)) == ["no PDF files to check; 2 other supported file(s) (no OCR needed)"]
    assert run("pre-check", str(folder), "--organise") == [
        "no PDF files to check; 2 other supported file(s) (no OCR needed)"
    ]
    assert not (folder / "ocr").exists() and not (folder / "no-ocr").exists()


def test_pre_check_reports_a_pdf_that_vanishes_mid_run_and_checks_the_rest(tmp_path):
    from ingestion.convert.precheck import precheck_directory

    pdf_factory.paper(tmp_path / "a.pdf")
    pdf_factory.paper(tmp_path / "b.pdf")
    rows = precheck_directory(tmp_path, on_file=lambda row: (tmp_path / "b.pdf").unlink(missing_ok=True))
    assert [(r.file_name, r.verdict, r.pages, r.note) for r in rows] == [
        ("a.pdf", "no-OCR", 2, ""), ("b.pdf", "OCR", 0, "unreadable (vanished during the run)")
    ]


def test_prepare_runs_each_step_in_one_process_and_times_it(db, monkeypatch):
    """`make run`'s steps before serving; the real list is models, migrate, demo, collectstatic."""
    from ingestion.management.commands import prepare

    assert [name for name, _, _ in prepare.STEPS] == ["prepare_models", "migrate", "demo", "collectstatic"]
    monkeypatch.setattr(prepare, "STEPS", (("migrate", (), {"interactive": False, "verbosity": 0}),
                                           ("check", (), {})))
    out = StringIO()
    call_command("prepare", stdout=out, stderr=StringIO())
    lines = [re.sub(r"done in \d+ s$", "done in N s", line) for line in out.getvalue().splitlines()]
    assert lines == ["migrate ...", "migrate: done in N s",
                     "check ...", "System check identified no issues (0 silenced).", "check: done in N s"]
