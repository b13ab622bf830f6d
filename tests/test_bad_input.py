"""Bad input fails alone with a one-line reason; the other files of the run ingest."""

from __future__ import annotations

import pytest

from domains.models import Chunk, Document, Domain
from ingestion.convert.worker import ConversionWorker
from ingestion.metadata.biblio import extract_bibliography
from ingestion.metadata.biblio.cascade import offline_tiers
from ingestion.models import IngestionJob, StagedFile
from ingestion.runs.ingest import ingest

from . import pdf_factory

PAPER_CHUNK = (
    "Neurons communicate through synapses and their membrane potential rises when sodium "
    "channels open. This is the classic description of excitability in the cortex."
)


@pytest.fixture
def domain(db):
    return Domain.objects.create(name="bad-input", description="Bad input tests")


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "in"
    root.mkdir()
    paper = pdf_factory.paper(tmp_path / "paper.pdf")
    pdf_factory.encrypted(root / "user_password.pdf", "secret", "owner")
    pdf_factory.encrypted(root / "owner_password.pdf", "", "owner")
    (root / "zero.pdf").write_bytes(b"")
    pdf_factory.truncated(root / "truncated.pdf", paper)
    pdf_factory.broken_xref(root / "broken_xref.pdf", paper)
    pdf_factory.scanned(root / "scanned.pdf")
    (root / "slides.key").write_bytes(b"keynote")
    (root / "latin1.txt").write_bytes("Caf\xe9 notes about neurons".encode("latin-1"))
    (root / "good.md").write_text("# Good\n\nA healthy file about dendrites.\n", encoding="utf-8")
    return root


def test_each_bad_file_fails_alone_with_its_reason(domain, folder):
    report = ingest(folder, "bad-store", "bad-input", mirror=True, ocr="off")
    outcomes = {o.file_name: (o.status, o.reason, o.error) for o in report.outcomes}
    assert outcomes == {
        "user_password.pdf": ("failed", "encrypted", "user_password.pdf: encrypted (a password is needed to open it)"),
        "owner_password.pdf": ("stored", "", ""),
        "zero.pdf": ("failed", "empty", "zero.pdf: the file is empty"),
        "truncated.pdf": (
            "failed", "broken", "truncated.pdf: not a readable PDF (Failed to load document (PDFium: Data format error).)"
        ),
        "broken_xref.pdf": ("stored", "", ""),
        "scanned.pdf": (
            "needs_ocr", "needs_ocr",
            "scanned.pdf: needs OCR (2 of 2 pages have no text layer); OCR is off (--no-ocr)",
        ),
        "slides.key": ("unsupported", "unsupported", "slides.key: unsupported file type '.key'"),
        "latin1.txt": ("failed", "not_utf8", "latin1.txt: not UTF-8 (byte 0xe9 at offset 3)"),
        "good.md": ("stored", "", ""),
    }
    statuses = dict(Document.objects.filter(store__name="bad-store").values_list("file_name", "status"))
    assert statuses == {
        "broken_xref.pdf": "stored", "good.md": "stored", "latin1.txt": "failed", "owner_password.pdf": "stored",
        "scanned.pdf": "needs_ocr", "truncated.pdf": "failed", "user_password.pdf": "failed", "zero.pdf": "failed",
    }
    # The repaired and the owner-password PDFs read like the intact paper.
    for name in ("owner_password.pdf", "broken_xref.pdf"):
        texts = list(Chunk.objects.filter(document__store__name="bad-store", document__file_name=name)
                     .order_by("ordinal").values_list("headings", "text"))
        assert (["1 Introduction"], PAPER_CHUNK) in texts
        assert [h for h, _ in texts] == [["Abstract"], ["1 Introduction"], ["2 Methods"], ["2 Methods", "2.1 Sampling"],
                                          ["3 Results"]]
    assert not Chunk.objects.filter(document__file_name="scanned.pdf").exists()
    assert not Chunk.objects.filter(store__name="bad-store", text__contains="<!-- image -->").exists()
    job = IngestionJob.objects.get(pk=report.job_id)
    assert (job.status, job.total, job.done) == ("partial", 8, 8)
    assert sorted(job.errors) == ["latin1.txt", "scanned.pdf", "truncated.pdf", "user_password.pdf", "zero.pdf"]
    assert job.messages[-2:] == ["1 unsupported: slides.key", "4 failed, 1 needs_ocr, 3 stored"]


def test_scanned_pdf_is_ocred_under_auto(domain, folder):
    report = ingest(folder, "bad-store", "bad-input", mirror=True)  # ocr="auto": Tesseract reads the scan
    scanned = next(o for o in report.outcomes if o.file_name == "scanned.pdf")
    assert (scanned.status, scanned.error, scanned.pages) == ("stored", "", 2)
    texts = list(Chunk.objects.filter(document__store__name="bad-store", document__file_name="scanned.pdf")
                 .order_by("ordinal").values_list("text", flat=True))
    assert texts == ["A scanned page about neurons\n\nA scanned page about neurons"]
    assert "image pages OCRed (tesseract 5.3.0)" in StagedFile.objects.get(
        file_name="scanned.pdf", directory=str(folder)
    ).converter


def test_thousand_page_pdf_converts_within_the_memory_bound(domain, tmp_path):
    root = tmp_path / "big"
    root.mkdir()
    pdf_factory.many_pages(root / "thousand.pdf", pages=1000)
    limit = 1024
    with ConversionWorker(memory_limit_mb=limit) as worker:
        converted = worker.convert(root / "thousand.pdf", pipeline="native")
        peak = worker.peak_rss_mb
    assert converted.pages == 1000
    assert len(converted.blocks) == 1000
    assert converted.title == "Chapter 1"  # the largest text of page one
    assert converted.blocks[0].headings == ("Chapter 1",)  # before the first heading: under the title
    assert converted.blocks[10].headings == ("Chapter 2",)
    assert converted.blocks[-1].headings == ("Chapter 100",)
    assert 0 < peak < limit
    print(f"1,000-page PDF: peak RSS of the conversion process {peak:.0f} MB (limit {limit} MB)")
    report = ingest(root, "big-store", "bad-input", mirror=True, ocr="off")
    assert [(o.file_name, o.status) for o in report.outcomes] == [("thousand.pdf", "stored")]
    document = Document.objects.get(store__name="big-store", file_name="thousand.pdf")
    assert document.pages == 1000
    assert Chunk.objects.filter(document=document).count() == report.chunks > 0


def test_a_file_over_the_memory_limit_is_retried_in_a_fresh_process_then_fails_alone(tmp_path):
    import docx

    from ingestion.convert import ConversionError

    document = docx.Document()
    document.add_paragraph("Word files load docling and torch: several hundred MB.")
    document.save(tmp_path / "big.docx")
    small = tmp_path / "small.md"
    small.write_text("# Small\n\nFits easily.\n", encoding="utf-8")
    with ConversionWorker(memory_limit_mb=128) as worker:
        with pytest.raises(ConversionError) as info:
            worker.convert(tmp_path / "big.docx")
        assert info.value.reason == "memory"
        assert str(info.value) == (
            "big.docx: conversion needs more than 128 MB of memory (tried twice, each in a fresh process)"
        )
        assert worker.processes == 2
        assert worker.convert(small).title == "Small"  # the next file gets a fresh process
        assert worker.processes == 3
    with ConversionWorker(memory_limit_mb=512) as worker:
        assert worker.convert(small).title == "Small"
        first = worker.pid
        worker.recycle_fraction = 0.0  # any use at all: a fresh process for the next file
        worker.convert(small)
        assert worker.pid is None and worker.processes == 1
        worker.convert(small)
        assert worker.processes == 2 and first is not None


def test_a_pdf_over_the_page_limit_fails_at_once_and_nothing_is_stored(domain, tmp_path, settings):
    # Before any page is read: 3,000 blank pages went one by one to OCR for hours.
    settings.KLEA_MAX_PAGES = 3
    pdf_factory.many_pages(tmp_path / "four.pdf", pages=4)
    pdf_factory.many_pages(tmp_path / "three.pdf", pages=3)
    report = ingest(tmp_path, "bad-store", "bad-input", mirror=True, ocr="off")
    assert [(o.file_name, o.status, o.reason, o.error) for o in report.outcomes] == [
        ("four.pdf", "failed", "too_many_pages", "four.pdf: 4 pages, more than KLEA_MAX_PAGES (3); split the file or raise the limit"),
        ("three.pdf", "stored", "", ""),
    ]
    assert not Chunk.objects.filter(document__file_name="four.pdf").exists()
    assert StagedFile.objects.get(file_name="four.pdf").chunks == []


def test_a_file_over_the_whole_file_time_limit_is_stopped_and_the_next_file_converts(tmp_path):
    # Every OCRed page reports progress, which restarts `timeout`; `file_timeout` counts
    # the whole file. 0.1 s is less than any page of OCR takes, so page one's progress
    # already finds the budget spent.
    from ingestion.convert import ConversionError, OcrConfig

    pdf_factory.scanned(tmp_path / "scan.pdf", pages=2)
    small = tmp_path / "small.md"
    small.write_text("# Small\n\nFits easily.\n", encoding="utf-8")
    progress = []
    with ConversionWorker(memory_limit_mb=2048, file_timeout=0.1) as worker:
        with pytest.raises(ConversionError) as info:
            worker.convert(tmp_path / "scan.pdf", pipeline="native", ocr_config=OcrConfig(workers=1),
                           on_progress=lambda *p: progress.append(p))
        assert (info.value.reason, str(info.value)) == ("file_timeout", (
            "scan.pdf: conversion (OCR) took longer than 0.1 s and was stopped; "
            "raise KLEA_CONVERT_FILE_TIMEOUT or split the file"))
        assert (progress, worker.pid, worker.processes) == ([], None, 1)  # the child was killed
        worker.file_timeout = None
        assert worker.convert(small).title == "Small"
        assert worker.processes == 2


def test_a_zero_page_pdf_is_empty_not_broken(domain, tmp_path):
    pdf_factory.no_pages(tmp_path / "no_pages.pdf")
    (tmp_path / "good.md").write_text("# Good\n\nA healthy file about dendrites.\n", encoding="utf-8")
    report = ingest(tmp_path, "bad-store", "bad-input", mirror=True, ocr="off")
    assert [(o.file_name, o.status, o.reason, o.error) for o in report.outcomes] == [
        ("no_pages.pdf", "failed", "empty", "no_pages.pdf: the PDF has no pages (0 pages)"),
        ("good.md", "stored", "", ""),
    ]


def test_a_title_too_long_for_a_tsvector_is_stored_and_found_by_its_first_words(domain, tmp_path):
    """A 1.5 MB heading, a Markdown file's title, made the document's bibliographic line
    too long for a tsvector (PostgreSQL's 1 MB) in the index of migration 0019: writing
    the document failed, and with it the whole run. The line's parts are cut now, and the
    title itself is cut at a word to 500 characters (ingestion/metadata/defaults.py)."""
    from domains.retrieval import document_coverage, query_lexemes

    words = " ".join(f"w{i:07d}x" for i in range(150_000))
    (tmp_path / "big.md").write_text(f"# {words}\n\nText about axons.\n", encoding="utf-8")
    (tmp_path / "good.md").write_text("# Good\n\nA healthy file about dendrites.\n", encoding="utf-8")
    report = ingest(tmp_path, "big-title", "bad-input", mirror=True, ocr="off")
    assert [(o.file_name, o.status, o.error) for o in report.outcomes] == [("big.md", "stored", ""),
                                                                          ("good.md", "stored", "")]
    big = Document.objects.get(store__name="big-title", file_name="big.md")
    assert big.title == " ".join(f"w{i:07d}x" for i in range(50)) + "…" and len(big.title) == 500
    assert document_coverage(query_lexemes("w0000000x"), [domain]) == {domain.id: (1.0, big.id)}
    assert document_coverage(query_lexemes("w0000050x"), [domain]) == {}  # past the cut


def test_a_nul_in_a_pdf_info_title_is_dropped_and_the_run_goes_on(domain, tmp_path, settings):
    """PostgreSQL's jsonb refuses a NUL: the staged map of a PDF whose Info Title held one
    failed to save, and that stopped the whole run."""
    settings.KLEA_DOI_NETWORK = False
    pdf_factory.with_info_title(tmp_path / "nul.pdf", "Synaptic\x00 plasticity in the hippocampus",
                                "Synaptic plasticity in the hippocampus of rodents.")
    (tmp_path / "good.md").write_text("# Good\n\nA healthy file about dendrites.\n", encoding="utf-8")
    report = ingest(tmp_path, "nul-store", "bad-input", mirror=True, ocr="off")
    assert [(o.file_name, o.status, o.error) for o in report.outcomes] == [("good.md", "stored", ""),
                                                                          ("nul.pdf", "stored", "")]
    assert Document.objects.get(store__name="nul-store", file_name="nul.pdf").title == (
        "Synaptic plasticity in the hippocampus")


def test_a_staged_file_is_saved_storable_whatever_its_sources_said(db):
    """One place for every writer of staged rows (a file, a library, a map file): no NUL
    in text or jsonb, a converter note no longer than its column."""
    StagedFile.objects.create(directory="/d", file_name="a.pdf", content_hash="h", status="failed",
                              converter="p" * 400, error="a\x00b", metadata_map={"DEFAULT": {"title": "T\x00i\ud800"}})
    row = StagedFile.objects.get(file_name="a.pdf")
    assert (row.converter, row.error, row.metadata_map) == ("p" * 300, "ab", {"DEFAULT": {"title": "Ti\ufffd"}})


def test_a_file_whose_row_cannot_be_written_fails_alone(domain, tmp_path):
    """A path longer than the 500 characters a file name may have in the database
    (folders nested three deep) raised DataError at its StagedFile's write, and that
    stopped the whole run; so did a NUL, a 1 MB title, a long converter note before."""
    deep = tmp_path / "/".join(["d" * 200] * 3)
    deep.mkdir(parents=True)
    (deep / "deep.md").write_text("# Deep\n\nText about axons.\n", encoding="utf-8")
    (tmp_path / "good.md").write_text("# Good\n\nA healthy file about dendrites.\n", encoding="utf-8")
    report = ingest(tmp_path, "long-store", "bad-input", mirror=True, ocr="off")
    name = f"{'/'.join(['d' * 200] * 3)}/deep.md"
    assert [(o.file_name, o.status, o.reason, o.error) for o in report.outcomes] == [
        (name, "failed", "crashed",
         f"{name}: could not be staged (DataError: value too long for type character varying(500))"),
        ("good.md", "stored", "", ""),
    ]
    assert list(Document.objects.filter(store__name="long-store").values_list("file_name", "status")) == [
        ("good.md", "stored")]


def test_bibliographic_tiers_run_in_the_conversion_child(tmp_path):
    # the tiers that read a file's text (regex over hostile text) run where conversion's
    # time and memory limits hold; the parent only looks DOIs up and merges
    paper = pdf_factory.paper(tmp_path / "paper.pdf")
    with ConversionWorker() as worker:
        converted = worker.convert(paper, pipeline="native", bibliography=True)
        plain = worker.convert(paper, pipeline="native")
    tiers, info_complete = converted.metadata["bibliography_tiers"]
    assert (tiers, info_complete) == offline_tiers(paper)
    assert [name for name, _ in tiers] == ["pdf-info", "layout-regex", "regex"]
    assert dict(tiers)["pdf-info"]["title"] == "Spiking neurons in cortex"
    assert "bibliography_tiers" not in plain.metadata
    offline = converted.metadata["bibliography_tiers"]
    assert extract_bibliography(paper, network=False, offline=offline) == extract_bibliography(paper, network=False)
